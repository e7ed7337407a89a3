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
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from itertools import accumulate
from pathlib import PurePosixPath
from typing import Any

REDACTED = "[redacted secret]"
MIN_SECRET_CHARS = 4
LONG_LINE = 2_000  # past this, detectors see windows around their gate's hits, not the line
WINDOW_BEFORE = 400
WINDOW_AFTER = 1_200
MAX_KEY_BLOCK_LINES = 200  # a 16k-bit RSA key in PEM is ~ 170 lines
MAX_PASSES = 3  # a line is re-scanned after redaction: several secrets of one shape per line

# A token-format match may stop short of the token (the JWT pattern ends lazily before the
# signature): what follows it in these characters is part of the same token.
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-.+/=]*")
_EDGE = " \t=:\"'`"

_PLUS_ONE = (1).__add__  # line length + its newline, mapped in C

Finder = Callable[[str], Iterable[str]]  # a line (or window) -> secret values in it


# -- values that are not secrets ----------------------------------------------------------------

_PLACEHOLDER_WORDS = frozenset(
    {
        "changeit",
        "none",
        "null",
        "nil",
        "true",
        "false",
        "undefined",
        "todo",
        "fixme",
        "empty",
        "default",
        "string",
        "value",
        "admin",
        "root",
        "user",
        "username",
        "pass",
        "required",
        "optional",
    }
)
# A value holding one of these is a stand-in (`"my-secret"`, `"your-token-here"`, `"hf_..."`).
_PLACEHOLDER_PARTS = (
    "secret",
    "password",
    "passwd",
    "token",
    "api-key",
    "api_key",
    "apikey",
    "example",
    "sample",
    "placeholder",
    "changeme",
    "change_me",
    "change-me",
    "dummy",
    "fake",
    "mock",
    "your",
    "redacted",
    "xxxx",
    "****",
    "...",
    "<",
    "%s",
    "%(",
    "{{",
    "#{",
)
_ONE_CHAR = re.compile(r"(.)\1*")
# Only letters, maybe in several words: a name, a path or prose (`CustomPrivateKeySign`,
# `DB_PASSWORD`, `JSON Web Token`, `HARDWARE\System`, `warn`), not a credential. The price: a
# password made of letters alone (`tiger`) is not recognised; one with a digit or symbol is.
_WORDS = re.compile(r"[A-Za-z]+(?:[\s\-_./\\:,]+[A-Za-z]+)*[.!?:]?")
_INNER_SPACE = re.compile(r"\S\s+\S")


def _placeholder(value: str) -> bool:
    low = value.lower()
    return (
        low in _PLACEHOLDER_WORDS
        or any(part in low for part in _PLACEHOLDER_PARTS)
        or _ONE_CHAR.fullmatch(value) is not None
    )


def _not_a_value(value: str) -> bool:
    """For values assigned to secret-sounding names (not for token formats, which are
    recognisable on their own)."""
    return (
        len(value) < MIN_SECRET_CHARS
        or _placeholder(value)
        or _WORDS.fullmatch(value) is not None
        or _INNER_SPACE.search(value) is not None
        or value.startswith("$")
        or (value[0], value[-1]) in (("{", "}"), ("<", ">"), ("[", "]"))
    )


def _quoted_in(value: str, line: str) -> bool:
    return any(f"{q}{value}{q}" in line for q in "\"'`")


# -- detectors -----------------------------------------------------------------------------------


Gate = str | re.Pattern[str]  # a literal (found with str.find, the fastest scan) or a pattern


@dataclass(frozen=True, slots=True)
class _Rule:
    """Detectors that run on a line only where one of `gates` matched it."""

    gates: tuple[Gate, ...]
    lowered: bool  # the gates run on the ASCII-lowercased text (fast case-insensitivity)
    finders: tuple[Finder, ...]


def _gate_hits(gate: Gate, text: str) -> Iterator[int]:
    if isinstance(gate, str):
        find = text.find
        pos = find(gate)
        while pos >= 0:
            yield pos
            pos = find(gate, pos + 1)
    else:
        for m in gate.finditer(text):
            yield m.start()


def _token_finder(
    patterns: Iterable[re.Pattern[str]], check: Callable[[str], bool] | None = None
) -> Finder:
    """Values matched by token-format patterns: the first group when it is the token itself (at
    least 8 characters), else the whole match, extended through the token's trailing
    characters and stripped of the delimiters some patterns include."""
    compiled = tuple(patterns)

    def find(line: str) -> Iterator[str]:
        for pattern in compiled:
            for m in pattern.finditer(line):
                group = m.group(1) if pattern.groups else None
                if group and len(group) >= 8:
                    start, end = m.span(1)
                else:
                    start, end = m.span()
                if end >= m.end():
                    tail = _TOKEN_TAIL.match(line, end)
                    end = tail.end() if tail else end
                value = line[start:end].strip(_EDGE)
                if len(value) >= 8 and not _placeholder(value) and (check is None or check(value)):
                    yield value

    return find


def _keyword_finder(keyword_groups: dict[Any, int]) -> Finder:
    from detect_secrets.filters.heuristic import (
        is_indirect_reference,
        is_likely_id_string,
        is_not_alphanumeric_string,
        is_potential_uuid,
        is_prefixed_with_dollar_sign,
        is_sequential_string,
        is_templated_secret,
    )
    from detect_secrets.plugins.keyword import KeywordDetector

    detector = KeywordDetector()

    def find(line: str) -> Iterator[str]:
        for value in detector.analyze_string(line, denylist_regex_to_group=keyword_groups):
            value = value.strip()
            if (
                _not_a_value(value)
                or is_templated_secret(value)
                or is_prefixed_with_dollar_sign(value)
                or is_sequential_string(value)
                or is_potential_uuid(value)
                or is_likely_id_string(value, line)
                or is_not_alphanumeric_string(value)
                or (not _quoted_in(value, line) and is_indirect_reference(line))
            ):
                continue
            yield value

    return find


# A quoted string assigned to (or passed as, or keyed by) a name that says secret: the only
# strings the high-entropy detectors look at. The name runs on from the word to the
# assignment; what precedes the word is looked at separately (`_HASH_NAME`).
_ASSIGNED = re.compile(
    r"""(?i)(?:key|token|secret|pass|pwd|credential|auth)[\w.\-]*["'\]]*\s*"""
    r"""(?::=|=>|[:=(,])\s*[rbuf]{0,2}(["'`])([^"'`]*)\1"""
)
_NAME_BEFORE = re.compile(r"[\w.\-]*$")
# Names of digests and public material: a random-looking value there is what it says.
_HASH_NAME = re.compile(r"(?i)sha\d|md5|hash|digest|checksum|fingerprint|public|integrity")


def _entropy_finder() -> Finder:
    from detect_secrets.filters.heuristic import (
        is_likely_id_string,
        is_potential_uuid,
        is_sequential_string,
    )
    from detect_secrets.plugins.high_entropy_strings import (
        Base64HighEntropyString,
        HexHighEntropyString,
    )

    plugins = [
        (p, re.compile(f"[{re.escape(p.charset)}]+"))
        for p in (
            Base64HighEntropyString(),
            HexHighEntropyString(),
        )
    ]

    def find(line: str) -> Iterator[str]:
        for m in _ASSIGNED.finditer(line):
            value = m.group(2)
            before = _NAME_BEFORE.search(line, max(0, m.start() - 64), m.start())
            name = (before.group() if before else "") + m.group()[: m.start(1) - m.start()]
            if _HASH_NAME.search(name) or _not_a_value(value):
                continue
            for plugin, charset in plugins:
                # log2(distinct characters) bounds the entropy: most strings stop here, cheaply.
                if (
                    charset.fullmatch(value)
                    and math.log2(len(set(value))) > plugin.entropy_limit
                    and plugin.calculate_shannon_entropy(value) > plugin.entropy_limit
                    and not is_sequential_string(value)
                    and not is_potential_uuid(value)
                    and not is_likely_id_string(value, line)
                ):
                    yield value
                    break

    return find


# Patterns detect-secrets lacks (see the module docstring).
_EXTRA_PATTERNS = {
    # user optional, any character but the URL's own delimiters in the password
    "conn": re.compile(r"[A-Za-z][\w+.-]*://[^\s:/@'\"`<>]*:([^\s/@'\"`<>]+)@(?=[\w\[])"),
    "bearer": re.compile(r"(?i)\bbearer\s+([A-Za-z0-9\-._~+/]{16,}=*)"),
    "github_pat": re.compile(r"github_pat_[A-Za-z0-9_]{22,}"),
    "slack_app": re.compile(r"xapp-\d-[A-Za-z0-9-]{10,}"),
    "stripe_webhook": re.compile(r"whsec_[A-Za-z0-9]{24,}"),
    "google_api": re.compile(r"AIza[0-9A-Za-z_\-]{35}"),
    "sk_prefixed": re.compile(r"sk-(?:ant|proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}"),
}
_HAS_DIGIT_AND_LETTER = re.compile(r"(?=.*\d)(?=.*[A-Za-z])")


def _connection_password(line: str) -> Iterator[str]:
    for m in _EXTRA_PATTERNS["conn"].finditer(line):
        value = m.group(1)
        if not _not_a_value(value):
            yield value


def _bearer(line: str) -> Iterator[str]:
    for m in _EXTRA_PATTERNS["bearer"].finditer(line):
        value = m.group(1)
        if _HAS_DIGIT_AND_LETTER.match(value) and not _placeholder(value):
            yield value


# Lines that name a secret: the only ones where high-entropy strings count, and a superset of
# the keyword detector's names (each of its words contains one of these).
_SECRET_NAMES = ("key", "token", "secret", "pass", "pwd", "credential", "auth", "contrase")


@cache
def _token_rules() -> tuple[_Rule, ...]:
    """Built on first use: importing detect-secrets costs ~0.1 s, which a command that never
    reads a file should not pay."""
    from detect_secrets.plugins.artifactory import ArtifactoryDetector
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.cloudant import CloudantDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.npm import NpmDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.softlayer import SoftlayerDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

    def tokens(*patterns: re.Pattern[str], check: Callable[[str], bool] | None = None) -> Finder:
        return _token_finder(patterns, check)

    def rule(gate: Gate, *finders: Finder, lowered: bool = False) -> _Rule:
        return _Rule((gate,), lowered, finders)

    pattern = re.compile
    extra = _EXTRA_PATTERNS
    cloudant_urls = CloudantDetector.denylist[2:]  # the first two are name = value assignments
    softlayer_url = SoftlayerDetector.denylist[1]
    # Every gate matches a line wherever one of its detectors could: a literal (or a short
    # pattern) the detector's patterns require. tests/unit/test_redact.py checks a sample of
    # every detector, so a gate that misses shows up there.
    return (
        rule(pattern(r"A(?:3T[A-Z0-9]|BIA|CCA|KIA|SIA)"), tokens(AWSKeyDetector.denylist[0])),
        rule("aws", tokens(AWSKeyDetector.denylist[1]), lowered=True),
        rule("AccountKey=", tokens(*AzureStorageKeyDetector.denylist)),
        rule("://", _connection_password, tokens(*cloudant_urls, softlayer_url)),
        rule("hooks.slack.com", tokens(SlackDetector.denylist[1])),
        rule(pattern(r"\.[\w-]{6}\.[\w-]{27}"), tokens(*DiscordBotTokenDetector.denylist)),
        rule(pattern(r"gh[pousr]_"), tokens(*GitHubTokenDetector.denylist)),
        rule("github_pat_", tokens(extra["github_pat"])),
        rule(pattern(r"gl[a-z]{2,5}-"), tokens(*GitLabTokenDetector.denylist)),
        rule("GR1348941", tokens(*GitLabTokenDetector.denylist)),
        rule("eyJ", tokens(*JwtTokenDetector.denylist, check=JwtTokenDetector.is_formally_valid)),
        rule(pattern(r"-us\d"), tokens(*MailchimpDetector.denylist)),
        rule("_authToken", tokens(*NpmDetector.denylist)),
        rule("T3BlbkFJ", tokens(*OpenAIDetector.denylist)),
        rule("sk-", tokens(extra["sk_prefixed"])),
        rule("pypi-", tokens(*PypiTokenDetector.denylist)),
        rule("SG.", tokens(*SendGridDetector.denylist)),
        rule("xox", tokens(SlackDetector.denylist[0]), lowered=True),
        rule("xapp-", tokens(extra["slack_app"])),
        rule("sq0csp-", tokens(*SquareOAuthDetector.denylist)),
        rule("k_live_", tokens(*StripeDetector.denylist)),
        rule("whsec_", tokens(extra["stripe_webhook"])),
        rule("AIza", tokens(extra["google_api"])),
        rule(pattern(r":[\w-]{35}"), tokens(*TelegramBotTokenDetector.denylist)),
        rule(pattern(r"AC[a-z0-9]{32}"), tokens(TwilioKeyDetector.denylist[0])),
        rule(pattern(r"SK[a-z0-9]{32}"), tokens(TwilioKeyDetector.denylist[1])),
        rule(pattern(r"AKC|AP[\dA-F]"), tokens(*ArtifactoryDetector.denylist)),
        rule("bearer", _bearer, lowered=True),
    )


# Files whose `KEY=value` lines are configuration (values unquoted): detect-secrets' config
# rules apply to them in addition to its own list (.ini, .cfg, .yaml, .toml, .properties).
_SHELL_SUFFIXES = frozenset({".sh", ".bash", ".zsh", ".ksh", ".env", ".envrc", ".service"})
_SHELL_NAMES = frozenset({"dockerfile", "containerfile", "makefile", "procfile", ".envrc"})


@cache
def _named_rule(suffix: str, shell: bool) -> _Rule:
    """High-entropy strings and the keyword detector, on lines that name a secret; the keyword
    rules are those of the file's type."""
    from detect_secrets.plugins.keyword import (
        CONFIG_DENYLIST_REGEX_TO_GROUP,
        DENYLIST,
        QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP,
        REGEX_BY_FILETYPE,
    )
    from detect_secrets.util.filetype import determine_file_type

    if shell:
        groups = CONFIG_DENYLIST_REGEX_TO_GROUP
    else:
        kind = determine_file_type(f"x{suffix}")
        groups = REGEX_BY_FILETYPE.get(kind, QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP)
    keyword = _keyword_finder(groups)
    entropy = _entropy_finder()
    # The keyword detector is the costly one: only where one of its own words is on the line.
    denylist = re.compile("|".join(DENYLIST))

    def find(line: str) -> Iterator[str]:
        yield from entropy(line)
        if denylist.search(line.lower()):
            yield from keyword(line)

    return _Rule(_SECRET_NAMES, True, (find,))


def _rules_for(path: str) -> tuple[_Rule, ...]:
    name = PurePosixPath(path).name.lower()
    suffix = PurePosixPath(name).suffix
    shell = suffix in _SHELL_SUFFIXES or name in _SHELL_NAMES or name.startswith(".env")
    return (*_token_rules(), _named_rule(suffix, shell))


# -- private-key blocks --------------------------------------------------------------------------

_KEY_GATE = re.compile(r"PRIVATE KEY|PuTTY-User-Key-File-")
_KEY_BEGIN = re.compile(
    r"-{4,5} ?BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)? ?-{4,5}|PuTTY-User-Key-File-\d+:"
)
_KEY_END = re.compile(
    r"-{4,5} ?END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)? ?-{4,5}|Private-MAC: *\S*"
)
# What a line inside a key block holds: base64, an RFC 1421 / PuTTY header, or nothing, maybe
# inside a string literal (quotes, a `\n` escape, a concatenation).
_KEY_MATERIAL = re.compile(
    r"""\s*["'`]?\s*(?:[A-Za-z0-9+/=]+|[A-Za-z][A-Za-z0-9-]*: .*)?(?:\\n)?["'`]?\s*[,+;\\]?\s*"""
)
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/=]{16,}")


def _redact_key_blocks(lines: list[str], candidates: Iterable[int]) -> None:
    """Replace each private-key block: from its BEGIN marker to the end of its END marker, when
    it holds key material (a PEM header alone, as in a parser's constants, is left)."""
    done = -1
    for i in sorted(candidates):
        if i <= done:
            continue
        line = lines[i]
        begin = _KEY_BEGIN.search(line)
        if begin is None:
            continue
        end = _KEY_END.search(line, begin.end())
        if end is not None:  # one line, e.g. JSON with "\n" escapes
            if _BASE64_RUN.search(line, begin.end(), end.start()):
                lines[i] = line[: begin.start()] + REDACTED + line[end.end() :]
            continue
        material = _BASE64_RUN.search(line, begin.end()) is not None
        j = i + 1
        while j < len(lines) and j - i <= MAX_KEY_BLOCK_LINES:
            if _KEY_END.search(lines[j]) or not _KEY_MATERIAL.fullmatch(lines[j]):
                break
            material = material or _BASE64_RUN.search(lines[j]) is not None
            j += 1
        closing = _KEY_END.search(lines[j]) if j < len(lines) else None
        if not material:
            continue
        lines[i] = line[: begin.start()] + REDACTED
        for k in range(i + 1, j):
            lines[k] = REDACTED
        if closing is not None:
            lines[j] = REDACTED + lines[j][closing.end() :]
            done = j
        else:
            done = j - 1


# -- the scan ------------------------------------------------------------------------------------


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


def _gated(text: _Lines, rules: tuple[_Rule, ...]) -> dict[tuple[int, int], list[int]]:
    """(rule index, line) -> the columns where the rule's gates matched that line."""
    hits: dict[tuple[int, int], list[int]] = {}
    lowered: str | None = None
    for index, rule in enumerate(rules):
        source = text.text
        if rule.lowered:
            lowered = lowered if lowered is not None else _ascii_lower(text.text)
            source = lowered
        for gate in rule.gates:
            for pos in _gate_hits(gate, source):
                row, col = text.locate(pos)
                hits.setdefault((index, row), []).append(col)
    return hits


def redact(text: str, path: str = "") -> str:
    """`text` with every secret found in it replaced by REDACTED; same number of lines.
    `path` (repo-relative) picks the keyword rules of the file's type."""
    if not text:
        return text
    rules = _rules_for(path)
    source = _Lines(text)
    hits = _gated(source, rules)
    key_rows = [source.locate(m.start())[0] for m in _KEY_GATE.finditer(text)]
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
        _redact_key_blocks(lines, key_rows)
        changed = changed or before != lines
    return "\n".join(lines) if changed else text
