"""Conversations: the tenant's threads (newest activity first, by channel, asker and dates) and
one thread's turns with their tool calls, model, skills, sources and ratings. Opening a thread is
audited (`console.view_thread`): it shows what people wrote."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from urllib.parse import quote, unquote, urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from bot.console.kit import Console, NavItem, Signed
from core.operator.conversations import Conversations
from core.operator.conversations.listing import Cursor, ThreadFilter
from core.operator.conversations.rows import valid_key
from core.store.models import MAX_ROW_ID

NAV = NavItem("Conversations", "console:conversations")

NOT_FOUND = "There is no such conversation in this tenant."


class BadInput(ValueError):
    """A query parameter the page cannot use; the message is shown as it is."""


@dataclass(frozen=True, slots=True)
class ListQuery:
    channel: str
    user: str
    start: str  # YYYY-MM-DD as typed, "" for none
    end: str
    after: Cursor | None

    def filter(self) -> ThreadFilter:
        return ThreadFilter(
            channel=self.channel or None,
            user=self.user or None,
            since=_day(self.start, "From") if self.start else None,
            until=_day(self.end, "To") + timedelta(days=1) if self.end else None,
        )

    def params(self, **changed: str) -> str:
        fields = {"channel": self.channel, "user": self.user, "from": self.start, "to": self.end}
        fields.update(changed)
        return urlencode({k: v for k, v in fields.items() if v})


def _day(text: str, label: str) -> datetime:
    try:
        day = date.fromisoformat(text)
    except ValueError:
        raise BadInput(f"{label} must be a date like 2026-12-03.") from None
    return datetime.combine(day, time(), UTC)


def _list_query(request: Request) -> ListQuery:
    q = request.query_params
    channel, user = q.get("channel", "").strip(), q.get("user", "").strip()
    for value, label in ((channel, "Channel"), (user, "Asked by")):
        if value and not valid_key(value):
            raise BadInput(f"{label} must be at most 128 characters, with no control characters.")
    after = None
    if q.get("after"):
        after = Cursor.decode(q["after"])
        if after is None:
            raise BadInput("That page link is not valid; start again from the first page.")
    query = ListQuery(channel, user, q.get("from", "").strip(), q.get("to", "").strip(), after)
    where = query.filter()
    if where.since is not None and where.until is not None and where.since >= where.until:
        raise BadInput("From must be on or before To.")
    return query


def _message_id(request: Request, name: str) -> int | None:
    text = request.query_params.get(name)
    if text is None:
        return None
    if not text.isdigit() or not 0 < int(text) <= MAX_ROW_ID + 1:
        raise BadInput("That page link is not valid; start again from the first turns.")
    return int(text)


def web_link(url: str | None) -> str | None:
    """`url` when it may be a link on the page: an http(s) URL with a host and no spaces or
    control characters (which browsers drop, so `java\tscript:` would still run). A source's
    link comes from a repository's remote; anything else shows as text."""
    if not url or any(c <= " " or c == "\x7f" for c in url):
        return None
    parts = urlsplit(url)
    return url if parts.scheme.lower() in ("http", "https") and parts.netloc else None


def thread_href(base: str, channel: str, thread: str) -> str | None:
    """The thread's page: each id one path segment, percent-encoded ('/' too). An id that is
    only dots has no such path (browsers resolve '..' however it is written): no link."""
    if channel.strip(".") == "" or thread.strip(".") == "":
        return None
    return f"{base}/{quote(channel, safe='')}/{quote(thread, safe='')}"


def _thread_key(request: Request) -> tuple[str, str] | None:
    """(channel, thread) from the path as the client sent it: the two last segments, each
    decoded on its own, so an id holding '/' (sent as %2F) stays one id."""
    raw = request.scope.get("raw_path")
    key = str(request.path_params.get("key", ""))
    if isinstance(raw, bytes):
        parts = raw.decode("ascii", "replace").split("?")[0].split("/")
        try:
            channel, thread = (unquote(p, errors="strict") for p in parts[-2:])
        except (UnicodeDecodeError, ValueError):
            return None
        if f"{channel}/{thread}" != key:
            return None
    else:
        pieces = key.split("/")
        if len(pieces) != 2:
            return None
        channel, thread = pieces
    if not (valid_key(channel) and valid_key(thread)):
        return None
    return channel, thread


def routes(console: Console) -> list[BaseRoute]:
    app = console.app
    conversations = Conversations(app.db, app.clock)

    async def listing(request: Request, signed: Signed) -> Response:
        who = signed.identity
        base = console.path(request, "console:conversations")
        channels = await conversations.channels(who.platform, who.tenant)
        try:
            query = _list_query(request)
        except BadInput as exc:
            q = request.query_params
            return console.render(
                request,
                "conversations.html",
                400,
                signed=signed,
                error=str(exc),
                rows=[],
                channels=channels,
                channel=q.get("channel", ""),
                user=q.get("user", ""),
                start=q.get("from", ""),
                end=q.get("to", ""),
                base=base,
                next_href=None,
                first_href=None,
            )
        page = await conversations.threads(who.platform, who.tenant, query.filter(), query.after)
        rows = [(row, thread_href(base, row.channel, row.thread)) for row in page.rows]
        next_href = None
        if page.next is not None:
            next_href = f"{base}?{query.params(after=page.next.encode())}"
        return console.render(
            request,
            "conversations.html",
            signed=signed,
            error=None,
            rows=rows,
            channels=channels,
            channel=query.channel,
            user=query.user,
            start=query.start,
            end=query.end,
            base=base,
            next_href=next_href,
            first_href=f"{base}?{query.params()}" if query.after is not None else None,
        )

    async def thread_page(request: Request, signed: Signed) -> Response:
        who = signed.identity
        base = console.path(request, "console:conversations")
        key = _thread_key(request)
        view = None
        try:
            after, before = _message_id(request, "after"), _message_id(request, "before")
        except BadInput as exc:
            return console.render(
                request, "conversation_missing.html", 400, signed=signed, text=str(exc), base=base
            )
        if key is not None:
            channel, thread = key
            view = await conversations.thread(
                who.platform, who.tenant, channel, thread, after=after, before=before
            )
        if view is None:
            # The same words whether the thread is unknown or another tenant's.
            return console.render(
                request, "conversation_missing.html", 404, signed=signed, text=NOT_FOUND, base=base
            )
        await console.record(
            signed, "console.view_thread", f"channel={view.channel} thread={view.thread}"
        )
        here = thread_href(base, view.channel, view.thread) or base
        return console.render(
            request,
            "conversation.html",
            signed=signed,
            view=view,
            base=base,
            web_link=web_link,
            first_href=here if view.earlier is not None else None,
            earlier_href=f"{here}?before={view.earlier}" if view.earlier is not None else None,
            later_href=f"{here}?after={view.later}" if view.later is not None else None,
            newest_href=f"{here}?before={view.newest}" if view.newest is not None else None,
        )

    return [
        Route("/conversations", console.page(listing), name="console:conversations"),
        Route("/conversations/{key:path}", console.page(thread_page), name="console:conversation"),
    ]
