"""Prometheus metrics, kept in a registry owned by the running app (no global state).

Documented in the README (Running in production). Labels stay low-cardinality: platform, tool
name, provider and model, outcome; never a user, channel or message.

Every label value is bounded by the server, never copied from model output or user text: a tool
name is one the registry holds at the time (a model may propose any name, and a name is
arbitrary text: a key, a user id), others count as `unknown`; platforms are the known ones;
outcomes are the dispatcher's and the digest runner's codes; provider and model names come from
the configuration.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from core.request import Reply, Usage

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
UNKNOWN = "unknown"
OTHER = "other"
# The shape of the server's own outcome codes (`invalid_args`, `confirm_timeout`, `posted`).
_CODE = re.compile(r"[a-z][a-z_]{0,39}")


def _code(value: str) -> str:
    return value if _CODE.fullmatch(value) else OTHER


class Metrics:
    def __init__(
        self, *, known_tool: Callable[[str], bool], known_platform: Callable[[str], bool]
    ) -> None:
        """`known_tool` says whether a name is registered now (MCP tools come and go);
        `known_platform` whether a platform is (`core.platforms.Platforms.known`)."""
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self._known_tool = known_tool
        self._known_platform = known_platform
        self.registry: CollectorRegistry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "threadline_requests", "Requests handled, by outcome", ["platform", "ok"], registry=r
        )
        self.latency = Histogram(
            "threadline_request_seconds",
            "Time to answer a request",
            ["platform"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.tool_calls = Counter(
            "threadline_tool_calls", "Tool calls by outcome", ["tool", "outcome"], registry=r
        )
        self.tool_latency = Histogram(
            "threadline_tool_seconds",
            "Time a tool call took, refusals included",
            ["tool"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.tokens = Counter(
            "threadline_llm_tokens",
            "Model tokens by kind (prompt, completion, cached) and model",
            ["kind", "provider", "model"],
            registry=r,
        )
        self.model_latency = Histogram(
            "threadline_llm_seconds",
            "Time a model call took",
            ["provider", "model", "ok"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.waiting = Gauge(
            "threadline_requests_waiting",
            "Requests waiting for their thread (one request at a time per thread)",
            registry=r,
        )
        self.queued = Gauge(
            "threadline_requests_queued",
            "Requests waiting for a free slot (THREADLINE_MAX_CONCURRENT_REQUESTS per process)",
            registry=r,
        )
        self.outbox_backlog = Gauge(
            "threadline_outbox_backlog", "Messages waiting in the outbox", ["platform"], registry=r
        )
        self.digest_runs = Counter(
            "threadline_digest_runs",
            "Digest periods handled by this process, by outcome",
            ["outcome"],
            registry=r,
        )
        # The model label is a configured model name, stored with the answer when it was given.
        self.feedback = Counter(
            "threadline_answer_feedback",
            "Ratings people gave answers (a changed rating counts again)",
            ["value", "platform", "model"],
            registry=r,
        )

    def rated(self, platform: str, value: str, model: str) -> None:
        shown = platform if self._known_platform(platform) else OTHER
        self.feedback.labels(_code(value), shown, model or UNKNOWN).inc()

    def tool_label(self, name: str) -> str:
        return name if self._known_tool(name) else UNKNOWN

    def observe(self, platform: str, reply: Reply, seconds: float) -> None:
        shown = platform if self._known_platform(platform) else OTHER
        self.requests.labels(shown, str(reply.ok).lower()).inc()
        self.latency.labels(shown).observe(seconds)
        for call in reply.tool_calls:
            self.tool_calls.labels(self.tool_label(call.name), _code(call.error or "ok")).inc()

    def model_call(
        self, provider: str, model: str, usage: Usage | None, seconds: float, ok: bool
    ) -> None:
        self.model_latency.labels(provider, model, str(ok).lower()).observe(seconds)
        if usage is not None:
            self.tokens.labels("prompt", provider, model).inc(usage.prompt_tokens)
            self.tokens.labels("completion", provider, model).inc(usage.completion_tokens)
            self.tokens.labels("cached", provider, model).inc(usage.cached_tokens)

    def tool_call(self, tool: str, seconds: float) -> None:
        self.tool_latency.labels(self.tool_label(tool)).observe(seconds)

    def watch_waiting(self, count: Callable[[], int]) -> None:
        self.waiting.set_function(count)

    def watch_queued(self, count: Callable[[], int]) -> None:
        self.queued.set_function(count)

    def digest_run(self, outcome: str) -> None:
        self.digest_runs.labels(_code(outcome)).inc()

    def render(self) -> tuple[bytes, str]:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return generate_latest(self.registry), CONTENT_TYPE_LATEST
