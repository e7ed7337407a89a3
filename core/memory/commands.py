"""`/save` and `/memory`: saving, listing, searching and deleting long-term memory items.

    /save FACT              this channel (needs memory.write; `--channel` says so explicitly)
    /save --global FACT     the whole workspace/server (also needs memory.write_global)
    /save --me FACT         only you, in any channel of this workspace/server
    /memory list            what is visible here (needs memory.read)
    /memory search QUERY    the best matches (needs memory.read)
    /memory delete ID       your own items, or any visible item with memory.delete

A reply says "Saved" only once the write has committed. Listings are personal (ephemeral).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BeforeValidator, Strict

from core import messages
from core.commands import (
    Command,
    CommandArgs,
    CommandContext,
    NoArgs,
    Verb,
    declared,
    flag,
    rest,
    with_verbs,
    word,
)
from core.errors import Refusal
from core.memory.facts import MemoryStore, Scope, one_line
from core.request import Reply

if TYPE_CHECKING:
    from core.store.models import MemoryItem

log = logging.getLogger(__name__)

LIST_LIMIT = 50  # newest items shown by `/memory list`
LIST_TEXT_CHARS = 200  # each item's text is shortened to this in a list
SEARCH_LIMIT = 10


class SaveArgs(CommandArgs):
    """`[--global | --me | --channel] FACT`: one scope, then the fact as typed."""

    exclusive = ("global_", "me", "channel")
    unknown_options_are_text = False  # `/save --globl x` is a typo, not a fact to remember
    global_: bool = flag()
    me: bool = flag()
    channel: bool = flag()  # the default, said explicitly
    fact: str = rest("FACT")

    @property
    def scope(self) -> Scope:
        return "global" if self.global_ else "user" if self.me else "channel"


def parse_item_id(text: str) -> int | None:
    """`12` or `#12` -> 12; anything else -> None."""
    text = text.strip().removeprefix("#")
    return int(text) if text.isascii() and text.isdigit() else None


def _item_id(value: Any) -> Any:
    found = parse_item_id(str(value))
    return found if found is not None else value  # left to be refused as not an int


class SearchArgs(CommandArgs):
    query: str = rest("QUERY")


class DeleteArgs(CommandArgs):
    words_needed = ""  # the usage says it all
    quotes = False
    id: Annotated[int, BeforeValidator(_item_id), Strict()] = word("ID")


def item_line(item: MemoryItem, *, text_chars: int | None = None) -> str:
    return (
        f"- `#{item.id}` {item.scope} · by {item.author} · {item.created_at:%Y-%m-%d} — "
        f"{one_line(item.text, text_chars)}"
    )


def memory_commands(store: MemoryStore) -> list[Command]:
    async def save(ctx: CommandContext, args: SaveArgs) -> Reply:
        scope = args.scope
        try:
            result = await store.save(ctx.session, args.fact, scope)
        except Refusal as exc:  # a missing permission, an empty or too long fact
            return Reply(messages.memory_not_saved(str(exc)), ok=False)
        except Exception:
            log.exception("saving a memory item failed (request %s)", ctx.session.request_id)
            return Reply(messages.MEMORY_SAVE_FAILED, ok=False)
        item = result.item
        assert item.id is not None
        text = (
            messages.memory_saved(item.id, item.scope)
            if result.created
            else messages.memory_known(item.id, item.scope)
        )
        return Reply(text, ephemeral=scope == "user")

    async def _list(ctx: CommandContext, _verb: str, _args: NoArgs) -> Reply:
        items = await store.visible(ctx.session)  # checks memory.read
        if not items:
            return Reply(messages.MEMORY_NONE_VISIBLE, ephemeral=True)
        shown = items[:LIST_LIMIT]
        lines = [f"**Memory visible here** ({len(items)} item{'s' * (len(items) != 1)}):"]
        lines += [item_line(it, text_chars=LIST_TEXT_CHARS) for it in shown]
        if len(items) > len(shown):
            lines.append(
                f"Showing the newest {len(shown)}; use `/memory search QUERY` to find the rest."
            )
        return Reply("\n".join(lines), ephemeral=True)

    async def _search(ctx: CommandContext, _verb: str, args: SearchArgs) -> Reply:
        query = args.query
        found = await store.search(ctx.session, query, SEARCH_LIMIT)  # checks memory.read
        if not found:
            return Reply(messages.memory_no_match(query), ephemeral=True)
        lines = [f"**Memory matching “{query}”**, best first:"]
        lines += [item_line(it) for it, _score in found]
        return Reply("\n".join(lines), ephemeral=True)

    async def _delete(ctx: CommandContext, _verb: str, args: DeleteArgs) -> Reply:
        item = await store.delete(ctx.session, args.id)  # refusals become the reply in Core
        assert item.id is not None
        return Reply(messages.memory_deleted(item.id, item.scope), ephemeral=item.scope == "user")

    return [
        declared(
            "save",
            "remember a fact for this channel (--global: whole workspace, --me: only you)",
            SaveArgs,
            save,
            permission="memory.write",
            usage=messages.SAVE_USAGE,
        ),
        with_verbs(
            "memory",
            "see, search and delete what I remember here",
            [
                Verb(("list",), NoArgs, _list),
                Verb(("search",), SearchArgs, _search),
                Verb(("delete",), DeleteArgs, _delete),
            ],
            personal=True,
            usage=messages.MEMORY_USAGE,
        ),
    ]
