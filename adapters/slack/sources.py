"""A reply's sources on Slack: one `context` block under the answer, in mrkdwn
(`Sources: <url|api/auth.py:10-42> · from channel memory`).

Labels are escaped (`&`, `<`, `>`), so a path cannot form a control sequence or a link of its
own; a URL is one `core.code.forge` built (percent-encoded, no `|` or `>` in it), and one that
still holds a character that would end the link is shown as its label only.
"""

from __future__ import annotations

from typing import Any

from adapters.slack.mrkdwn import escape
from adapters.text import source_text
from core.request import Source

CONTEXT_TEXT_LIMIT = 3_000  # a context block's mrkdwn element
_UNSAFE_URL = frozenset("<>| \n")


def sources_mrkdwn(sources: tuple[Source, ...]) -> str:
    """`Sources: <url|label> · label`, within one context element's limit: past it, the
    last links are shown as their labels."""
    items = [_item(s, link=True) for s in sources]
    text = "Sources: " + " · ".join(items)
    for i in range(len(sources) - 1, -1, -1):
        if len(text) <= CONTEXT_TEXT_LIMIT:
            break
        items[i] = _item(sources[i], link=False)
        text = "Sources: " + " · ".join(items)
    return text[:CONTEXT_TEXT_LIMIT]


def sources_blocks(sources: tuple[Source, ...]) -> list[dict[str, Any]]:
    """The context block for a reply's sources; none for a reply without."""
    if not sources:
        return []
    return [{"type": "context", "elements": [{"type": "mrkdwn", "text": sources_mrkdwn(sources)}]}]


def _item(source: Source, *, link: bool) -> str:
    label = escape(source_text(source))
    url = source.url
    if link and url and not _UNSAFE_URL.intersection(url):
        return f"<{url.replace('&', '&amp;')}|{label}>"
    return label
