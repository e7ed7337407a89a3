"""Digests: the tenant's subscriptions by channel with their next run and last runs; pause,
resume and run now (the runner's own claim, so a run happens once however many ask)."""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from bot.console.kit import Console, NavItem, Signed
from core.operator.digests import STATES, DigestBoard
from core.store.limits import column_limit
from core.store.models import DigestSubscription

NAV = NavItem("Digests", "console:digests")
VERBS = ("pause", "resume", "run")
MAX_CHANNEL = column_limit(DigestSubscription, "channel")
# What the page says after an action (the redirect names one of these, never free text).
DONE = {
    "paused": "Digest #{id} paused: it will not run until it is resumed.",
    "resumed": "Digest #{id} resumed.",
    "posted": "Digest #{id} ran and its digest is on its way to the channel.",
    "empty": "Digest #{id} ran: nothing happened in the period, so nothing was posted.",
    "failed": "Digest #{id} ran and failed; its last run says why.",
    "taken": "Digest #{id} was already run this minute; it was not run again.",
}


def routes(console: Console) -> list[BaseRoute]:
    app = console.app
    board = DigestBoard(app.db, app.clock)
    running: set[asyncio.Task[str]] = set()

    async def digests(request: Request, signed: Signed) -> Response:
        who = signed.identity
        channel = request.query_params.get("channel", "")
        state = request.query_params.get("state", "")
        if len(channel) > MAX_CHANNEL or state not in ("", *STATES):
            return console.refuse(
                request, 400, "Bad filter", "Pick a channel and a state from the lists."
            )
        done = request.query_params.get("done", "")
        sub_id = request.query_params.get("id", "")
        notice = DONE[done].format(id=sub_id) if done in DONE and sub_id.isdigit() else ""
        # Routing's url_for walks every route: once per page, not once per button.
        base = console.path(request, "console:digests")
        return console.render(
            request,
            "digests.html",
            signed=signed,
            groups=await board.channels(
                who.platform, who.tenant, channel=channel or None, state=state or None
            ),
            channels=await board.channel_names(who.platform, who.tenant),
            channel=channel,
            state=state,
            states=STATES,
            notice=notice,
            action=lambda sub_id, verb: f"{base}/{sub_id}/{verb}",
        )

    async def act(request: Request, signed: Signed, _form: dict[str, str]) -> Response:
        who = signed.identity
        sub_id: int = request.path_params["sub_id"]
        verb: str = request.path_params["verb"]
        sub = await board.find(who.platform, who.tenant, sub_id) if verb in VERBS else None
        if sub is None:
            return console.refuse(
                request, 404, "No such digest", f"There is no digest #{sub_id} in this tenant."
            )
        where = f"digest #{sub_id} ({sub.kind}) in {sub.channel}"
        if verb in ("pause", "resume"):
            # What `/digest pause|resume` does.
            await board.store.set_paused(sub_id, verb == "pause")
            await console.record(signed, f"console.digest_{verb}", where)
            done = "paused" if verb == "pause" else "resumed"
        else:
            # Shielded: a browser that gives up waiting must not leave the claim half run.
            task = asyncio.ensure_future(app.digests.run_now(sub))
            running.add(task)
            task.add_done_callback(running.discard)
            done = await asyncio.shield(task)
            await console.record(signed, "console.digest_run", f"{where}: {done}")
        return console.redirect(request, "console:digests", f"done={done}&id={sub_id}")

    return [
        Route("/digests", console.page(digests), name="console:digests"),
        Route(
            "/digests/{sub_id:int}/{verb}",
            console.action(act),
            methods=["POST"],
            name="console:digest-action",
        ),
    ]
