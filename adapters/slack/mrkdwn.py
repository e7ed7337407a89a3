"""Markdown (what models write) to Slack `mrkdwn` (what Slack renders).

Slack's dialect differs: `*bold*`, `_italic_`, `~strike~`, `<url|text>` links, no headings, no
list syntax, code blocks without a language. `&`, `<` and `>` must be escaped everywhere, which
also keeps model output from forming Slack control sequences (`<!channel>`, `<@U123>`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_HEADING = re.compile(r"^ {0,3}#{1,6}\s+(?P<text>.*?)(?:\s+#+)?\s*$")
_RULE = re.compile(r"^ {0,3}([-*_])(?: *\1){2,} *$")
_QUOTE = re.compile(r"^ {0,3}> ?(?P<text>.*)$")
_BULLET = re.compile(r"^(?P<indent>\s*)[-*+]\s+(?P<text>.*)$")
_TASK = re.compile(r"^\[(?P<mark>[ xX])\]\s+")
_ORDERED = re.compile(r"^(?P<indent>\s*)(?P<n>\d{1,9})[.)]\s+(?P<text>.*)$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")

_CODE_SPAN = re.compile(r"(`+)(?P<code>.+?)\1")
# Link text and URL cannot hold "[" and a URL is at most 2,048 characters: a model's "[[[[" or
# "[a](" repeated would otherwise be scanned to its end from every bracket (seconds of CPU on
# the event loop for a 20,000-character answer).
_LINK = re.compile(
    r"(?P<img>!?)\[(?P<text>[^\[\]\n]*)\]\((?P<url>[^)\s\[]{1,2048})(?:\s+\"[^\"\n]{0,300}\")?\)"
)
_AUTOLINK = re.compile(r"<(?P<url>(?:https?|mailto):[^>\s]+)>")
_BOLD_ITALIC = re.compile(r"\*\*\*(?=\S)(?P<t>.+?)(?<=\S)\*\*\*")
_BOLD = re.compile(r"(\*\*|__)(?=\S)(?P<t>.+?)(?<=\S)\1")
_ITALIC_STAR = re.compile(r"(?<![*\w])\*(?=[^\s*])(?P<t>.+?)(?<=[^\s*])\*(?![*\w])")
_STRIKE = re.compile(r"~~(?=\S)(?P<t>.+?)(?<=\S)~~")

# Placeholders: private-use characters that cannot come from the model's Markdown.
_TOKEN = "\ue000{}\ue001"
_TOKEN_RE = re.compile("\ue000(\\d+)\ue001")
_BOLD_MARK = "\ue002"


_CONTROL = re.compile(r"<(?=[!@#])")


def defuse(text: str) -> str:
    """Markdown for Slack (streamed `markdown_text`, `markdown` blocks) keeps its `<`, but never
    as the start of a control sequence: a zero-width space after a `<` that `!`, `@` or `#`
    follows, so model output cannot ping `<!channel>` or a user. It reads the same."""
    return _CONTROL.sub("<\u200b", text)


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def to_mrkdwn(markdown: str) -> str:
    out: list[str] = []
    lines = markdown.split("\n")
    fence: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if fence is not None:
            m = _FENCE.match(line)
            if m and m["fence"][0] == fence[0] and len(m["fence"]) >= len(fence):
                out.append("```")
                fence = None
            else:
                out.append(escape(line))
            continue
        m = _FENCE.match(line)
        if m and not (m["fence"][0] == "`" and "`" in m["info"]):
            fence = m["fence"]
            out.append("```")
            continue
        if line.lstrip().startswith("|") and i < len(lines) and _TABLE_RULE.match(lines[i]):
            # Slack has no tables: keep their columns aligned in a code block.
            table = [line]
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                table.append(lines[i])
                i += 1
            out += ["```", *(escape(row) for row in table), "```"]
            continue
        out.append(_block_line(line))
    if fence is not None:  # an unclosed block: close it, Slack would show the fence otherwise
        out.append("```")
    return "\n".join(out)


def _block_line(line: str) -> str:
    if m := _HEADING.match(line):
        text = _BOLD.sub(r"\g<t>", m["text"]).replace("*", "")
        return f"*{inline(text)}*" if text.strip() else ""
    if _RULE.match(line):
        return "──────────"
    if m := _QUOTE.match(line):
        return "> " + inline(m["text"])
    if m := _BULLET.match(line):
        indent = m["indent"].replace("\t", "    ")
        text = m["text"]
        if t := _TASK.match(text):
            box = "☐" if t["mark"] == " " else "☑"
            text = f"{box} {text[t.end() :]}"
        bullet = "•" if len(indent) < 2 else "◦"
        return f"{' ' * len(indent)}{bullet} {inline(text)}"
    if m := _ORDERED.match(line):
        return f"{m['indent']}{m['n']}. {inline(m['text'])}"
    return inline(line)


def inline(text: str) -> str:
    """Convert inline Markdown in one line: code spans, links, emphasis; escape the rest."""
    saved: list[str] = []

    def keep(value: str) -> str:
        saved.append(value)
        return _TOKEN.format(len(saved) - 1)

    def sub(pattern: re.Pattern[str], fn: Callable[[re.Match[str]], str], s: str) -> str:
        return pattern.sub(fn, s)

    text = sub(_CODE_SPAN, lambda m: keep(f"`{escape(m['code'].replace('`', 'ˋ'))}`"), text)
    text = sub(_LINK, lambda m: keep(_link(m["url"], m["text"], image=bool(m["img"]))), text)
    text = sub(_AUTOLINK, lambda m: keep(_link(m["url"], "")), text)
    text = escape(text)
    text = sub(_BOLD_ITALIC, lambda m: f"{_BOLD_MARK}_{m['t']}_{_BOLD_MARK}", text)
    text = sub(_BOLD, lambda m: f"{_BOLD_MARK}{m['t']}{_BOLD_MARK}", text)
    text = sub(_ITALIC_STAR, lambda m: f"_{m['t']}_", text)
    text = sub(_STRIKE, lambda m: f"~{m['t']}~", text)
    text = text.replace(_BOLD_MARK, "*")
    return _TOKEN_RE.sub(lambda m: saved[int(m[1])], text)


def _link(url: str, text: str, *, image: bool = False) -> str:
    label = escape(text.replace("|", "¦").strip())
    if not re.match(r"^(https?://|mailto:)", url, re.IGNORECASE):
        # Relative or odd links cannot be clicked in Slack: show them as text.
        return f"{label} ({escape(url)})" if label else escape(url)
    target = escape(url).replace("|", "%7C")
    if image and not label:
        label = "image"
    return f"<{target}|{label}>" if label else f"<{target}>"
