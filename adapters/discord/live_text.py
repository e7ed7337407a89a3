"""The text of an answer that is still being written, as Discord messages can show it now:
which parts are settled (their end can no longer move, so the live split and the final split
agree), where a code block is open, and a tool step's status line."""

from __future__ import annotations

from adapters.discord.translate import MESSAGE_LIMIT
from adapters.text import split_parts


def live_parts(text: str, limit: int = MESSAGE_LIMIT) -> list[str]:
    """The messages a growing answer can show now: every part whose end can no longer move,
    then the part being written (text after it waits until that part is settled).

    `split_parts` chooses a part's end looking at most `limit` characters past its start, plus
    the line that overflows; once a complete line ends beyond that window, more text cannot
    change the choice. A line too long for one part is cut into pieces from its start, and all
    but its last piece are fixed: so a part inside one very long line is settled once another
    two parts' worth follows. Settled parts are exactly the parts the finished text is split
    into.
    """
    return [shown for shown, _ in live_split(text, limit)]


def live_split(text: str, limit: int) -> list[tuple[str, str]]:
    """`live_parts`, each with the answer's own text in it: without the fence line added to
    close a code block the text has not closed yet (what is shown is not all written)."""
    parts = split_parts(text, limit)
    last_newline = text.rfind("\n")
    out: list[tuple[str, str]] = []
    start = 0
    for k, part in enumerate(parts):
        shown = part.text.strip("\n")  # as `render` strips each part
        if shown.strip():
            last = k == len(parts) - 1
            out.append((shown, (part.head + part.original).strip("\n") if last else shown))
        settled = last_newline >= start + limit or len(text) >= start + 3 * limit
        if k == len(parts) - 1 or not settled:
            break
        start += len(part.original)
    return out


def status_line(label: str) -> str:
    label = label.strip()
    return f"_{label}_" if label.endswith(("…", ".")) else f"_{label}…_"
