"""Answers and the ratings people give them.

Core records each model answer when it is given (`record`) and hands its id to the adapter,
which puts it into the 👍/👎 buttons under the answer. A click comes back, from any process,
as `rate(rater, answer_id, value)`: the rater's identity is the one the platform verified for
the click, and the answer must be in the rater's own platform, tenant and channel, so a forged
id from another channel or tenant rates nothing.

An answer's sources (`core.request.Source`: file lines and their forge links, memory scopes,
skills) are stored with it as a short JSON list, for the console's thread page. They are what
the people who asked were shown already; a link holding credentials is stored without it.
"""

from __future__ import annotations

import json
import secrets
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import urlsplit

from sqlmodel import col, func, select

from core.errors import Refusal
from core.policy import Identity
from core.request import Source
from core.session import ToolSession
from core.store.engine import Database
from core.store.models import Answer, AnswerRating
from core.store.tables import table_of

Value = Literal["up", "down"]
VALUES: tuple[Value, ...] = ("up", "down")
REASON_CHARS = 300
LINK_CHARS = 500
# An answer id: 32 hex characters from `secrets`, so nobody can guess another answer's id.
ID_CHARS = 32
# What is kept of an answer's sources: the first MAX_SOURCES, labels cut at SOURCE_LABEL_CHARS;
# a link longer than SOURCE_URL_CHARS is dropped (a cut link leads nowhere), its label kept.
MAX_SOURCES = 20
SOURCE_LABEL_CHARS = 300
SOURCE_URL_CHARS = 2000
SOURCE_KINDS = frozenset({"code", "memory", "skill"})


def _clean_reason(text: str | None) -> str | None:
    """A reason as people typed it, on one line, without control characters, capped."""
    if text is None:
        return None
    kept = "".join(" " if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") else c for c in text)
    kept = " ".join(kept.split())
    if len(kept) > REASON_CHARS:
        kept = kept[: REASON_CHARS - 1].rstrip() + "…"
    return kept or None


def _names(items: Sequence[str], limit: int = 500) -> str:
    """Distinct names, in order, comma-separated and cut at a whole name within `limit`."""
    out: list[str] = []
    for name in dict.fromkeys(items):
        if len(",".join([*out, name])) > limit:
            break
        out.append(name)
    return ",".join(out)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _safe_url(url: str | None) -> str | None:
    """`url` when it is short enough and carries no user name or password, else None."""
    if not url or len(url) > SOURCE_URL_CHARS:
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    return None if parts.username or parts.password else url


def encode_sources(sources: Sequence[Source]) -> str:
    """The sources as stored in `answers.sources`: a compact JSON list, capped."""
    kept: list[dict[str, str]] = []
    for source in sources[:MAX_SOURCES]:
        item = {"kind": source.kind, "label": _cut(source.label, SOURCE_LABEL_CHARS)}
        url = _safe_url(source.url)
        if url is not None:
            item["url"] = url
        kept.append(item)
    return json.dumps(kept, ensure_ascii=False, separators=(",", ":"))


def decode_sources(stored: str) -> tuple[Source, ...]:
    """`answers.sources` read back; what is not a source this code knows is left out."""
    try:
        items: Any = json.loads(stored or "[]")
    except ValueError:
        return ()
    found: list[Source] = []
    for item in items[:MAX_SOURCES] if isinstance(items, list) else ():
        if not isinstance(item, dict):
            continue
        kind, label, url = item.get("kind"), item.get("label"), item.get("url")
        if kind not in SOURCE_KINDS or not isinstance(label, str) or not label:
            continue
        found.append(Source(kind, label, url if isinstance(url, str) and url else None))
    return tuple(found)


def valid_answer_id(value: str) -> bool:
    return len(value) == ID_CHARS and all(c in "0123456789abcdef" for c in value)


@dataclass(frozen=True, slots=True)
class Rated:
    """The outcome of a click: the rating now stored, and what it replaced (None: the first)."""

    value: Value
    previous: Value | None
    model: str


@dataclass(frozen=True, slots=True)
class Tally:
    """Ratings of one group (a channel, a model, a skill) over a period."""

    key: str
    up: int
    down: int

    @property
    def total(self) -> int:
        return self.up + self.down


@dataclass(frozen=True, slots=True)
class DownRated:
    """A 👎 given during a period, for the `feedback` digest."""

    answer_id: str
    channel: str
    thread: str
    model: str
    skills: tuple[str, ...]
    reason: str | None
    link: str | None
    at: datetime


class FeedbackStore:
    def __init__(self, db: Database, clock: Callable[[], datetime] | None = None) -> None:
        self._db = db
        self._clock = clock or (lambda: datetime.now(UTC))

    async def record(
        self,
        session: ToolSession,
        *,
        model: str | None,
        skills: Sequence[str] = (),
        tools: Sequence[str] = (),
        sources: Sequence[Source] = (),
    ) -> str:
        """Store an answer given in `session`'s thread, with where it came from; returns its id
        for the buttons."""
        who, conv = session.identity, session.conversation
        answer = Answer(
            id=secrets.token_hex(ID_CHARS // 2),
            created_at=self._clock(),
            platform=who.platform,
            tenant=who.tenant,
            channel=who.channel,
            thread=conv.thread,
            user=who.user,
            model=(model or "")[:128],
            skills=_names(skills),
            tools=_names(tools),
            sources=encode_sources(sources),
        )
        async with self._db.session() as s:
            s.add(answer)
        return answer.id

    async def rate(
        self,
        rater: Identity,
        answer_id: str,
        value: str,
        *,
        reason: str | None = None,
        link: str | None = None,
    ) -> Rated:
        """Store `rater`'s rating of the answer (replacing theirs, if any). A reason goes with
        a 👎 only; a 👎 clicked again keeps the reason given before unless a new one comes.
        Raises Refusal when the value is not a rating or the answer is not one given in the
        rater's channel (or no longer exists)."""
        if value not in VALUES:
            raise Refusal("A rating is 👍 or 👎.")
        rated: Value = "up" if value == "up" else "down"
        if not valid_answer_id(answer_id):
            raise Refusal("That answer can no longer be rated.")
        now = self._clock()
        async with self._db.session() as s:
            answer = await s.get(Answer, answer_id)
            if answer is None or (answer.platform, answer.tenant, answer.channel) != (
                rater.platform,
                rater.tenant,
                rater.channel,
            ):
                # The same words whether the id is unknown or from elsewhere: a probe learns
                # nothing about other channels' answers.
                raise Refusal("That answer can no longer be rated.")
            existing = (
                await s.exec(
                    select(AnswerRating).where(
                        col(AnswerRating.answer_id) == answer_id,
                        col(AnswerRating.user) == rater.user,
                    )
                )
            ).first()
            previous: Value | None = None
            if existing is not None:
                previous = "up" if existing.value == "up" else "down"
            cleaned = _clean_reason(reason) if rated == "down" else None
            kept_reason = cleaned
            if cleaned is None and rated == "down" and existing is not None:
                kept_reason = existing.reason if existing.value == "down" else None
            values = {
                "answer_id": answer_id,
                "platform": rater.platform,
                "tenant": rater.tenant,
                "channel": rater.channel,
                "user": rater.user,
                "value": rated,
                "reason": kept_reason,
                "link": (link or None) and link[:LINK_CHARS],
                "created_at": now,
                "updated_at": now,
            }
            # One statement, so two processes handling two clicks of one person at once end
            # with one row (the later write), never a unique-constraint error.
            await s.exec(
                self._db.upsert(
                    table_of(AnswerRating),
                    values,
                    ["answer_id", "user"],
                    ["value", "reason", "link", "updated_at"],
                )
            )
        return Rated(rated, previous, answer.model)

    async def tallies(
        self, platform: str, tenant: str, since: datetime, by: Literal["channel", "model", "skill"]
    ) -> list[Tally]:
        """Ratings of the tenant's answers changed since `since`, grouped by channel, model or
        skill (an answer made with two skills counts for both), most rated first."""
        async with self._db.session() as s:
            rows = (
                await s.exec(
                    select(Answer.channel, Answer.model, Answer.skills, AnswerRating.value).where(
                        col(AnswerRating.answer_id) == col(Answer.id),
                        col(AnswerRating.platform) == platform,
                        col(AnswerRating.tenant) == tenant,
                        col(AnswerRating.updated_at) >= since,
                    )
                )
            ).all()
        counts: dict[str, list[int]] = {}
        for channel, model, skills, value in rows:
            keys = {"channel": [channel], "model": [model or "unknown"]}.get(by)
            if keys is None:
                keys = [k for k in skills.split(",") if k] or ["(no skill)"]
            for key in keys:
                pair = counts.setdefault(key, [0, 0])
                pair[0 if value == "up" else 1] += 1
        tallies = [Tally(k, up, down) for k, (up, down) in counts.items()]
        return sorted(tallies, key=lambda t: (-t.total, t.key))

    async def down_rated(
        self, platform: str, tenant: str, channel: str, start: datetime, end: datetime
    ) -> list[DownRated]:
        """The 👎 ratings of the channel's answers whose last change is in (start, end]."""
        async with self._db.session() as s:
            rows = (
                await s.exec(
                    select(AnswerRating, Answer)
                    .where(
                        col(AnswerRating.answer_id) == col(Answer.id),
                        col(AnswerRating.platform) == platform,
                        col(AnswerRating.tenant) == tenant,
                        col(AnswerRating.channel) == channel,
                        col(AnswerRating.value) == "down",
                        col(AnswerRating.updated_at) > start,
                        col(AnswerRating.updated_at) <= end,
                    )
                    .order_by(col(AnswerRating.updated_at))
                )
            ).all()
        return [
            DownRated(
                answer_id=answer.id,
                channel=answer.channel,
                thread=answer.thread,
                model=answer.model,
                skills=tuple(k for k in answer.skills.split(",") if k),
                reason=rating.reason,
                link=rating.link,
                at=rating.updated_at,
            )
            for rating, answer in rows
        ]

    async def count(self, platform: str, tenant: str) -> int:
        """How many ratings the tenant has (for tests and the console)."""
        async with self._db.session() as s:
            result = await s.exec(
                select(func.count())
                .select_from(AnswerRating)
                .where(
                    col(AnswerRating.platform) == platform,
                    col(AnswerRating.tenant) == tenant,
                )
            )
            return int(result.one())
