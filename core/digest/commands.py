"""`/digest`: scheduled digests of a channel.

    /digest add SCHEDULE KIND [--tz ZONE] [--skip-empty] [--repo NAME] [--voice]
    /digest list                      (needs ask)
    /digest remove|pause|resume|run ID
    /digest timezone ZONE             the tenant's default zone (needs admin)

SCHEDULE is a preset (`daily`, `weekdays`, `weekly`, `hourly`: at 09:00, on the hour) or a
5-field cron in quotes ("0 9 * * 1-5"). Everything but `list` needs `digest.manage`. A
subscription belongs to the channel it was made in: IDs of other channels read as unknown.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from core.commands import (
    Command,
    CommandArgs,
    CommandContext,
    UsageError,
    Verb,
    flag,
    option,
    verbs_usage,
    with_verbs,
    word,
)
from core.digest import messages
from core.digest.kinds import KINDS
from core.digest.runner import DigestRunner, encode_roles, schedule_of
from core.digest.schedule import PRESETS, ScheduleError, iana_zone, parse_schedule
from core.digest.store import MAX_CRON, MAX_REPO, MAX_ZONE, DigestStore
from core.request import Reply
from core.store.limits import overlong
from core.store.models import DigestSubscription, TenantSetting

NOTES = (
    f'SCHEDULE: {", ".join(PRESETS)} or 5 cron fields in quotes, e.g. "0 9 * * 1-5". '
    f"KIND: {', '.join(sorted(KINDS))}."
)
MAX_PER_CHANNEL = 20


class AddArgs(CommandArgs):
    words_needed = "Give a schedule and a kind."
    schedule: str = word("SCHEDULE")
    kind: str = word("KIND")
    tz: str | None = option("ZONE")
    skip_empty: bool = flag()
    repo: str | None = option("NAME")
    voice: bool = flag()


class NoArgs(CommandArgs):
    pass


class IdArgs(CommandArgs):
    words_needed = "`{command}` needs the digest's number (see `/digest list`)."
    id: Annotated[int, BeforeValidator(lambda v: v.lstrip("#")), Field(ge=0)] = word("ID")


class ZoneArgs(CommandArgs):
    zone: str | None = word("ZONE", None)


def digest_commands(store: DigestStore, runner: DigestRunner) -> list[Command]:
    def voice_available() -> bool:
        return runner.speak is not None

    async def _add(ctx: CommandContext, _verb: str, args: AddArgs) -> Reply:
        who = ctx.session.identity
        schedule_text, kind = args.schedule, args.kind.lower()
        for what, given, limit in (
            ("The schedule", " ".join(schedule_text.strip().strip("\"'").split()), MAX_CRON),
            ("The time zone", (args.tz or "").strip(), MAX_ZONE),
            ("The repository name", args.repo or "", MAX_REPO),
        ):
            if len(given) > limit:
                return Reply(messages.too_long(what, len(given), limit), ok=False, ephemeral=True)
        if kind not in KINDS:
            raise UsageError(f"Unknown kind `{kind[:40]}`.")
        missing = KINDS[kind].missing(ctx.session)
        if missing:
            return Reply(messages.kind_needs(kind, missing), ok=False, ephemeral=True)
        if args.voice:
            if not voice_available():
                return Reply(
                    "`--voice` needs voice replies, which are not set up here: add the digest "
                    "without it.",
                    ok=False,
                    ephemeral=True,
                )
            ctx.session.require("tts")
        if args.repo and not KINDS[kind].needs_repo:
            raise UsageError(f"`--repo` applies to repo-changes digests, not {kind}.")
        # Only a repository of the registry that this channel may read, by its exact name.
        if args.repo and await runner.repos.find(ctx.session, args.repo) is None:
            return Reply(
                f"There is no repository `{args.repo[:64]}` here.", ok=False, ephemeral=True
            )
        tz = args.tz or await store.tenant_zone(who.platform, who.tenant) or "UTC"
        try:
            schedule = parse_schedule(schedule_text, tz)
            schedule.check_interval(ctx.now)
        except ScheduleError as exc:
            raise UsageError(f"{str(exc)[:300]}.") from None
        existing = await store.for_channel(who.platform, who.tenant, who.channel)
        if len(existing) >= MAX_PER_CHANNEL:
            return Reply(
                f"This channel has {len(existing)} digests, the most allowed; remove one first.",
                ok=False,
                ephemeral=True,
            )
        new = DigestSubscription(
            platform=who.platform,
            tenant=who.tenant,
            channel=who.channel,
            created_by=who.user,
            roles=encode_roles(who.roles),
            kind=kind,
            cron=schedule.cron,
            tz=schedule.tz,
            repo=args.repo,
            skip_empty=args.skip_empty,
            voice=args.voice,
        )
        # What the platform handed in (ids) is bounded by the table too.
        if (long := overlong(DigestSubscription, new.model_dump())) is not None:
            return Reply(messages.field_too_long(*long), ok=False, ephemeral=True)
        sub = await store.add(new)
        nxt = schedule.next_after(ctx.now).astimezone(schedule.zone)
        return Reply(
            f"Digest #{sub.id} added: {_describe(sub)}. Next: {_when(nxt, ctx.now)}.",
        )

    async def _list(ctx: CommandContext, _verb: str, _args: NoArgs) -> Reply:
        who = ctx.session.identity
        subs = await store.for_channel(who.platform, who.tenant, who.channel)
        if not subs:
            return Reply("No digests in this channel. " + usage_line, ephemeral=True)
        lines = [f"**Digests in this channel** ({len(subs)}):"]
        for sub in subs:
            if sub.paused:
                when = "paused"
            else:
                try:
                    s = schedule_of(sub)
                    when = "next " + _when(s.next_after(ctx.now).astimezone(s.zone), ctx.now)
                except ScheduleError as exc:  # stored before today's checks
                    when = f"cannot run: {str(exc)[:200]}"
            lines.append(f"- #{sub.id} {_describe(sub)} — {when}")
        return Reply("\n".join(lines), ephemeral=True)

    async def _by_id(ctx: CommandContext, verb: str, args: IdArgs) -> Reply:
        sub_id = args.id
        sub = await store.get(sub_id)
        who = ctx.session.identity
        if sub is None or (sub.platform, sub.tenant, sub.channel) != (
            who.platform,
            who.tenant,
            who.channel,
        ):
            return Reply(f"There is no digest #{sub_id} in this channel.", ok=False, ephemeral=True)
        if verb == "remove":
            await store.remove(sub_id)
            return Reply(f"Digest #{sub_id} removed.")
        if verb in ("pause", "resume"):
            await store.set_paused(sub_id, verb == "pause")
            return Reply(f"Digest #{sub_id} {'paused' if verb == 'pause' else 'resumed'}.")
        digest = await runner.preview(sub)
        return Reply(
            "*Preview (not posted to the channel):*\n\n" + digest.text, attachments=digest.audio
        )

    async def _timezone(ctx: CommandContext, _verb: str, args: ZoneArgs) -> Reply:
        who = ctx.session.identity
        if args.zone is None:
            current = await store.tenant_zone(who.platform, who.tenant) or "UTC (not set)"
            return Reply(f"Default time zone for digests here: {current}.", ephemeral=True)
        if len(args.zone) > MAX_ZONE:
            return Reply(
                messages.too_long("The time zone", len(args.zone), MAX_ZONE),
                ok=False,
                ephemeral=True,
            )
        try:
            name = str(iana_zone(args.zone))
        except ScheduleError as exc:
            raise UsageError(f"{exc}.") from None
        setting = {"platform": who.platform, "tenant": who.tenant, "updated_by": who.user}
        if (long := overlong(TenantSetting, setting)) is not None:
            return Reply(messages.field_too_long(*long), ok=False, ephemeral=True)
        await store.set_tenant_zone(who.platform, who.tenant, name, who.user)
        return Reply(f"New digests here default to {name}.")

    verbs: list[Verb[Any]] = [
        Verb(("add",), AddArgs, _add, "digest.manage"),
        Verb(("list",), NoArgs, _list, "ask"),
        Verb(("remove", "pause", "resume", "run"), IdArgs, _by_id, "digest.manage"),
        Verb(("timezone",), ZoneArgs, _timezone, "admin"),
    ]
    usage_line = verbs_usage("digest", verbs)
    command = with_verbs(
        "digest",
        "scheduled digests of this channel",
        verbs,
        default="list",
        unknown_permission="digest.manage",
        notes=NOTES,
    )
    return [command]


def _describe(sub: DigestSubscription) -> str:
    preset = next((name for name, cron in PRESETS.items() if cron == sub.cron), None)
    parts = [f"`{sub.kind}`", preset or f"`{sub.cron}`", sub.tz]
    if sub.repo:
        parts.append(f"repo {sub.repo}")
    if sub.skip_empty:
        parts.append("skips empty periods")
    if sub.voice:
        parts.append("with audio")
    return ", ".join(parts)


def _when(at: datetime, now: datetime) -> str:
    return f"{at:%a %d %b %H:%M} {at.tzname()}"
