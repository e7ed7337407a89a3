"""Credentials inside readable files: found by content and replaced by `[redacted secret]`.

Files that look like secrets by name never get this far (`core.code.secrets`); this module is
for the key, token or password that sits in an ordinary file (`settings.py`, a deploy script, a
test fixture). `redact(text, path)` is applied at every boundary where file content leaves the
disk: chunking (so nothing secret is stored in SQL, embedded, or put in a sparse vector),
`read_file`, `grep_code` lines and search snippets. It replaces the secret value only
(`password = "[redacted secret]"`, `postgres://app:[redacted secret]@db`) and never adds or
removes a line, so line numbers stay those of the file.

Detection reuses the detectors of Yelp's detect-secrets (pinned: we call its plugins'
patterns, filters and entropy functions directly, not its scanning machinery, which is built for
whole repositories and global settings):

- token formats: AWS, Azure storage, Discord, GitHub, GitLab, JWT, Mailchimp, npm, OpenAI,
  PyPI, SendGrid, Slack, Square, Stripe, Telegram, Twilio, Artifactory, and Cloudant and
  SoftLayer URLs;
- `KeywordDetector`: a literal assigned to a secret-sounding name (`password = "..."`,
  `api_key: ...` in config files), with the file-type rules of detect-secrets (shell and env
  files count as config files here, so unquoted `export DB_PASSWORD=...` is caught too);
- in logs and text dumps only (`.log`, `.txt`, ... or `log=True`, as attached files are
  read): any secret-named `key=value` / `key: value` pair, quoted or not
  (`AWS_SECRET_ACCESS_KEY=...`, `password=...`, `token: ...` mid-line), but not counts,
  lengths, names, paths or numbers (`max_tokens=1024`, `password_file=/etc/pw`);
- the base64 and hex high-entropy detectors, but only on a string assigned to (or keyed by) a
  name that says secret (key, token, secret, password, credential, auth) and not a digest
  (`key_sha256`): anywhere else a random-looking string is far more often a hash, an id or test
  data than a credential.

Added here because detect-secrets has no detector for them: private-key blocks are redacted
whole (from `-----BEGIN ... PRIVATE KEY-----` to its END line, PuTTY keys to `Private-MAC`; the
detect-secrets plugin only flags the BEGIN line), connection-string passwords (a superset of
its basic-auth pattern: the user may be empty, as in `redis://:pw@host`, and the password may
hold characters the URL should have escaped), `Bearer` tokens, GitHub fine-grained tokens,
Slack app tokens, Stripe webhook secrets, Google API keys, and Anthropic / OpenAI project keys.

Left out: its public IP plugin (an address is not a credential), and its IBM Cloud and
Cloudant / SoftLayer `name = value` patterns (slow, and what they find is a long random value
assigned to a key or password name, which the keyword and entropy detectors catch).

Not secrets (to keep ordinary code readable): detect-secrets' filters drop templates
(`${DB_PASSWORD}`, `<password>`, `{password}`), indirect references (`password =
get_password()`), ids, UUIDs and sequential strings; on top, stand-ins (`changeme`,
`your-token-here`, `my-secret`, `xxxx`, `hf_...`), values of fewer than four characters, and
values made only of letters (names, paths and prose: `secret_type = 'JSON Web Token'`,
`mode == 'warn'`). The price of the last rule: a password that is a plain word (`tiger`) is
not recognised; one with a digit or a symbol is.

Speed: this runs over every line of every indexed file, so each detector sits behind a cheap
"gate" (a literal such as `eyJ` or `aws`, searched over the whole text at C speed); a detector
runs only on the lines where its gate fired, and on long (minified) lines only on a window
around the hit. bench/secret_scan.py measures what it adds to indexing.

The module's parts: `redact_values` (what is not a secret), `redact_detectors` (the detectors
and their gates), `redact_files` (which rules read which file), `redact_keys` (private-key
blocks); this one is the scan.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator
from itertools import accumulate

from core.code.redact_detectors import Rule, gate_hits
from core.code.redact_files import rules_for
from core.code.redact_keys import KEY_GATE, redact_key_blocks
from core.code.redact_values import REDACTED as REDACTED

LONG_LINE = 2_000  # past this, detectors see windows around their gate's hits, not the line
WINDOW_BEFORE = 400
WINDOW_AFTER = 1_200
MAX_PASSES = 3  # a line is re-scanned after redaction: several secrets of one shape per line

_PLUS_ONE = (1).__add__  # line length + its newline, mapped in C


def _windows(line: str, columns: list[int]) -> Iterator[str]:
    if len(line) <= LONG_LINE:
        yield line
        return
    last_end = -1
    for col in sorted(columns):
        start, end = max(0, col - WINDOW_BEFORE), col + WINDOW_AFTER
        if end <= last_end:
            continue
        last_end = end
        yield line[start:end]


def _ascii_lower(text: str) -> str:
    low = text.lower()
    if len(low) == len(text):
        return low
    # A few non-ASCII letters lowercase to two code points: keep offsets aligned instead.
    return text.encode("utf-8", "surrogatepass").lower().decode("utf-8", "surrogatepass")


def _replace(line: str, values: Iterable[str]) -> str:
    for value in sorted(set(values), key=len, reverse=True):
        line = line.replace(value, REDACTED)
    return line


class _Lines:
    """`text` split into lines on first need, with a character offset -> (line, column) map."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._lines: list[str] | None = None
        self._ends: list[int] = []

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = self.text.split("\n")
            self._ends = list(accumulate(map(_PLUS_ONE, map(len, self._lines))))
        return self._lines

    @property
    def split(self) -> bool:
        return self._lines is not None

    def locate(self, pos: int) -> tuple[int, int]:
        self.lines  # noqa: B018  (splits on first use)
        row = bisect_right(self._ends, pos)
        return row, pos - (self._ends[row - 1] if row else 0)


def _gated(text: _Lines, rules: tuple[Rule, ...]) -> dict[tuple[int, int], list[int]]:
    """(rule index, line) -> the columns where the rule's gates matched that line."""
    hits: dict[tuple[int, int], list[int]] = {}
    lowered: str | None = None
    for index, rule in enumerate(rules):
        source = text.text
        if rule.lowered:
            lowered = lowered if lowered is not None else _ascii_lower(text.text)
            source = lowered
        for gate in rule.gates:
            for pos in gate_hits(gate, source):
                row, col = text.locate(pos)
                hits.setdefault((index, row), []).append(col)
    return hits


def redact(text: str, path: str = "", *, log: bool = False) -> str:
    """`text` with every secret found in it replaced by REDACTED; same number of lines.
    `path` (repo-relative) picks the keyword rules of the file's type; `log` reads the text
    as a log (secret-named `key=value` pairs redacted even unquoted), as a `.log` name does."""
    if not text:
        return text
    rules = rules_for(path, log=log)
    source = _Lines(text)
    hits = _gated(source, rules)
    key_rows = [source.locate(m.start())[0] for m in KEY_GATE.finditer(text)]
    if not source.split:  # no gate fired anywhere: nothing to look at
        return text
    lines = source.lines

    found: dict[int, set[str]] = {}
    for (index, row), columns in hits.items():
        line = lines[row]
        for window in _windows(line, columns):
            for finder in rules[index].finders:
                values = set(finder(window))
                if values:
                    found.setdefault(row, set()).update(values)
    changed = False
    for row, values in found.items():
        line = _replace(lines[row], values)
        for _ in range(MAX_PASSES - 1):
            if len(line) > LONG_LINE:
                break
            # Another secret of a shape already found (the keyword patterns stop at the first).
            again = {v for rule in rules for f in rule.finders for v in f(line)}
            if not again:
                break
            line = _replace(line, again)
        lines[row] = line
        changed = True
    if key_rows:
        before = list(lines)
        redact_key_blocks(lines, key_rows)
        changed = changed or before != lines
    return "\n".join(lines) if changed else text
