"""The detectors of `redact`: token formats, keyword assignments, high-entropy strings,
connection-string passwords and `Bearer` tokens, each behind a cheap gate (see `redact` for
which detect-secrets plugins are used and why). A detector (`Finder`) takes a line (or a
window of a long one) and yields the secret values in it."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from core.code.redact_values import not_a_value, placeholder, quoted_in

# A token-format match may stop short of the token (the JWT pattern ends lazily before the
# signature): what follows it in these characters is part of the same token.
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-.+/=]*")
_EDGE = " \t=:\"'`"

Finder = Callable[[str], Iterable[str]]  # a line (or window) -> secret values in it
Gate = str | re.Pattern[str]  # a literal (found with str.find, the fastest scan) or a pattern


@dataclass(frozen=True, slots=True)
class Rule:
    """Detectors that run on a line only where one of `gates` matched it."""

    gates: tuple[Gate, ...]
    lowered: bool  # the gates run on the ASCII-lowercased text (fast case-insensitivity)
    finders: tuple[Finder, ...]


def gate_hits(gate: Gate, text: str) -> Iterator[int]:
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
                if len(value) >= 8 and not placeholder(value) and (check is None or check(value)):
                    yield value

    return find


def keyword_finder(keyword_groups: dict[Any, int]) -> Finder:
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
                not_a_value(value)
                or is_templated_secret(value)
                or is_prefixed_with_dollar_sign(value)
                or is_sequential_string(value)
                or is_potential_uuid(value)
                or is_likely_id_string(value, line)
                or is_not_alphanumeric_string(value)
                or (not quoted_in(value, line) and is_indirect_reference(line))
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


def entropy_finder() -> Finder:
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
            if _HASH_NAME.search(name) or not_a_value(value):
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
        if not not_a_value(value):
            yield value


def _bearer(line: str) -> Iterator[str]:
    for m in _EXTRA_PATTERNS["bearer"].finditer(line):
        value = m.group(1)
        if _HAS_DIGIT_AND_LETTER.match(value) and not placeholder(value):
            yield value


# A secret-named key and its value as logs and plain-text dumps write them, quoted or not:
# `AWS_SECRET_ACCESS_KEY=...`, `password=...`, `token: ...`, `"api_key": "..."`. Only for log
# and text lines (`log_pair_finder`): in code, `name = value` is an assignment of anything.
_LOG_PAIR = re.compile(
    r"""(?i)(?<![\w.\-])([\w.\-]*?(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_\-]?key"""
    r"""|apikey|access[_\-]?key|auth[_\-]?key|private[_\-]?key|client[_\-]?key|credential"""
    r"""|contrase\w*)s?(?:[_.\-][\w.\-]*)?)["']?\s*[:=]\s*(["'`]?)"""
    r"""([^\s"'`,;&(){}\[\]<>]+)\2"""
)
# Keys that name something about a secret, not the secret (`token_count=12`, `password_file=`).
_ABOUT_A_SECRET = re.compile(
    r"(?i)(?:count|len|length|size|limit|ttl|expires?|expiry|type|name|file|path|dir|url"
    r"|used|total|max|min|kind|id|ids|policy|hash|sha\d*|md5|digest|fingerprint)$"
    r"|^(?:max|min|num|n)[_\-]"
)
_NUMBER = re.compile(r"[\d.,:+\-]+")


# Where a key naming a secret may be: the pair pattern is then matched only from the start of
# that word (searching with it over whole lines cost ~50 µs a line).
_SECRET_WORDS = ("pass", "pwd", "secret", "token", "key", "credential", "contrase")
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _pairs(line: str) -> Iterator[re.Match[str]]:
    low = line.lower()
    starts: set[int] = set()
    for word in _SECRET_WORDS:
        pos = low.find(word)
        while pos >= 0:
            start = pos
            while start > 0 and line[start - 1] in _KEY_CHARS:
                start -= 1
            starts.add(start)
            pos = low.find(word, pos + len(word))
    done = -1
    for start in sorted(starts):
        if start < done:
            continue
        m = _LOG_PAIR.match(line, start)
        if m is not None:
            done = m.end()
            yield m


def log_pair(line: str) -> Iterator[str]:
    """Values of secret-named keys in a log or text line, unquoted ones included."""
    for m in _pairs(line):
        name, value = m.group(1), m.group(3)
        if _ABOUT_A_SECRET.search(name) or _HASH_NAME.search(name):
            continue
        if _NUMBER.fullmatch(value) or not_a_value(value):
            continue
        yield value


# Lines that name a secret: the only ones where high-entropy strings count, and a superset of
# the keyword detector's names (each of its words contains one of these).
SECRET_NAMES = ("key", "token", "secret", "pass", "pwd", "credential", "auth", "contrase")


@cache
def token_rules() -> tuple[Rule, ...]:
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

    def rule(gate: Gate, *finders: Finder, lowered: bool = False) -> Rule:
        return Rule((gate,), lowered, finders)

    pattern = re.compile
    extra = _EXTRA_PATTERNS
    cloudant_urls = CloudantDetector.denylist[2:]  # the first two are name = value assignments
    softlayer_url = SoftlayerDetector.denylist[1]
    # Every gate matches a line wherever one of its detectors could: a literal (or a short
    # pattern) the detector's patterns require. tests/core/code/test_redact.py checks a sample of
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
