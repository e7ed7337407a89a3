"""Prometheus metrics, kept in a registry owned by the running app (no global state)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.request import Reply

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry


class Metrics:
    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.registry: CollectorRegistry = CollectorRegistry()
        self.requests = Counter(
            "threadline_requests", "Requests handled", ["platform", "ok"], registry=self.registry
        )
        self.latency = Histogram(
            "threadline_request_seconds",
            "Time to answer a request",
            ["platform"],
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
            registry=self.registry,
        )
        self.tool_calls = Counter(
            "threadline_tool_calls",
            "Tool calls by outcome",
            ["tool", "outcome"],
            registry=self.registry,
        )
        self.tokens = Counter(
            "threadline_llm_tokens", "Model tokens by kind", ["kind"], registry=self.registry
        )

    def observe(self, platform: str, reply: Reply, seconds: float) -> None:
        self.requests.labels(platform, str(reply.ok).lower()).inc()
        self.latency.labels(platform).observe(seconds)
        for call in reply.tool_calls:
            self.tool_calls.labels(call.name[:64], call.error or "ok").inc()
        self.tokens.labels("prompt").inc(reply.usage.prompt_tokens)
        self.tokens.labels("completion").inc(reply.usage.completion_tokens)
        self.tokens.labels("cached").inc(reply.usage.cached_tokens)

    def render(self) -> tuple[bytes, str]:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return generate_latest(self.registry), CONTENT_TYPE_LATEST
