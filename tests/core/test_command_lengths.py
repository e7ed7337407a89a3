"""Strings longer than their column are refused with a clear message before anything is stored,
on SQLite (which would keep them whole) and PostgreSQL (which refuses the row: "something went
wrong"). The limits come from the tables (`core.store.limits`), not from copies of them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlmodel import select

from core import messages
from core.store.limits import column_limit, identity_limits
from core.store.models import AuditEntry, MemoryItem, Repo, ThreadMessage, ThreadSkill
from tests.conftest import POLICY_ALL, BotHarness

MakeBot = Callable[..., BotHarness]


@pytest.fixture
def bot(make_bot: MakeBot, database_url: str, write_policy: Callable[[str], Any]) -> BotHarness:
    policy = POLICY_ALL.replace('"tts"]', '"tts", "code.index"]', 1)
    return make_bot(database_url=database_url, policy_file=write_policy(policy))


async def rows(bot: BotHarness, model: Any) -> list[Any]:
    async with bot.app.db.session() as s:
        return list((await s.exec(select(model))).all())


def test_identity_limits_are_the_narrowest_columns_that_hold_them() -> None:
    limits = identity_limits()
    assert limits == {
        "platform": column_limit(ThreadMessage, "platform"),
        "tenant": column_limit(ThreadMessage, "tenant"),
        "channel": column_limit(ThreadMessage, "channel"),
        "thread": column_limit(ThreadMessage, "thread"),
        "user": column_limit(AuditEntry, "user"),
    }
    assert limits["user"] <= column_limit(MemoryItem, "author")
    assert limits["channel"] <= column_limit(MemoryItem, "scope_key")


@pytest.mark.parametrize("field", ["thread", "channel", "user", "tenant"])
async def test_an_overlong_id_is_refused_before_anything_is_stored(
    bot: BotHarness, field: str
) -> None:
    limit = identity_limits()[field]
    long_id = "x" * (limit + 72)
    reply = await bot.send("/save we deploy on fridays", **{field: long_id})
    assert reply.ok is False
    assert reply.text == messages.id_too_long(field, limit + 72, limit)
    assert await rows(bot, MemoryItem) == []
    assert await rows(bot, AuditEntry) == []
    # Free text too (it would be stored in the thread's history).
    asked = await bot.send("why is the importer slow?", **{field: long_id})
    assert asked.text == messages.id_too_long(field, limit + 72, limit)
    assert await rows(bot, ThreadMessage) == []
    # At the limit it works.
    saved = await bot.send("/save we deploy on fridays", **{field: "y" * limit})
    assert saved.ok, saved.text


async def test_an_overlong_repository_name_gets_a_clear_message(bot: BotHarness) -> None:
    limit = column_limit(Repo, "name")
    reply = await bot.send(f"/index {'r' * 200}")
    assert reply.ok is False
    assert reply.text == messages.too_long("a repository name", 200, limit)
    graph = await bot.send(f"/graph Foo --repo {'r' * 200}")
    assert graph.ok is False
    assert graph.text == messages.too_long("a repository name", 200, limit)


def test_skill_and_repository_names_fit_their_columns() -> None:
    from core.code.repos import NAME_RE
    from core.skills.format import MAX_NAME

    assert column_limit(ThreadSkill, "skill") >= MAX_NAME
    limit = column_limit(Repo, "name")
    assert NAME_RE.match("r" * limit) and not NAME_RE.match("r" * (limit + 1))
