"""`/readyz`: can this process do its work right now? The database answers, the vector store
is reachable (a Qdrant server at QDRANT_URL; the embedded store's folder is writable), and the
model endpoint answers when one is configured. Each check has a short timeout; results are
kept for a few seconds so a busy load balancer does not turn into load on the database or the
provider. `/healthz` stays "the process is alive"."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Coroutine
    from typing import Any

    from bot.app import App

log = logging.getLogger(__name__)

CHECK_TIMEOUT = 5.0
CACHE_SECONDS = 5.0


@dataclass
class Readiness:
    ok: bool
    checks: dict[str, str] = field(default_factory=dict)  # part -> "ok" or why not

    @property
    def failing(self) -> list[str]:
        return [part for part, state in self.checks.items() if state != "ok"]


class ReadinessProbe:
    def __init__(self, app: App) -> None:
        self._app = app
        # Each model endpoint's own state at the last check (`checks["model"]` sums them up).
        self.model_states: dict[str, str] = {}
        self._cached: tuple[float, Readiness] | None = None
        self._lock = asyncio.Lock()

    async def check(self) -> Readiness:
        async with self._lock:
            now = time.monotonic()
            if self._cached is not None and now - self._cached[0] < CACHE_SECONDS:
                return self._cached[1]
            parts = {"database": self._database(), "vector_store": self._vectors()}
            if self._app.model is not None or self._app.models:
                parts["model"] = self._model()
            results = await asyncio.gather(*(_bounded(c) for c in parts.values()))
            checks = dict(zip(parts, results, strict=True))
            ready = Readiness(all(v == "ok" for v in checks.values()), checks)
            if not ready.ok:
                log.warning("not ready: %s", ", ".join(f"{k}: {checks[k]}" for k in ready.failing))
            self._cached = (now, ready)
            return ready

    async def _database(self) -> str:
        from sqlalchemy import text

        async with self._app.db.session() as s:
            # sqlmodel types `exec` for its own selects; raw SQL goes to the connection.
            await (await s.connection()).execute(text("SELECT 1"))
        return "ok"

    async def _vectors(self) -> str:
        settings = self._app.settings
        if settings.qdrant_url:
            import httpx

            headers = {}
            if settings.qdrant_api_key is not None:
                headers["api-key"] = settings.qdrant_api_key.get_secret_value()
            async with httpx.AsyncClient(timeout=CHECK_TIMEOUT) as client:
                resp = await client.get(f"{settings.qdrant_url}/readyz", headers=headers)
            return "ok" if resp.status_code < 400 else f"Qdrant answered HTTP {resp.status_code}"
        folder = settings.data_dir
        if not folder.exists():
            return "ok"  # created on first use
        if not os.access(folder, os.W_OK):
            return f"the data folder {folder} is not writable (embedded vector store)"
        return "ok"

    async def _model(self) -> str:
        """Every configured model endpoint (the default and those policy rules choose)."""
        models = [m for m in [self._app.model, *self._app.models] if m is not None]
        # Models without a network endpoint (tests' own) have no ping. All asked at once: one
        # slow endpoint must not use up the others' time.
        pinged = [(m.spec, ping) for m in models if (ping := getattr(m, "ping", None))]
        answers: list[str] = await asyncio.gather(*(ping(CHECK_TIMEOUT) for _, ping in pinged))
        specs = [spec for spec, _ in pinged]
        # The console's overview shows each endpoint; /readyz the first that is not ready.
        self.model_states = {
            f"{spec.name} ({spec.model})": state for spec, state in zip(specs, answers, strict=True)
        }
        failing = [f"{spec.name}: {a}" for spec, a in zip(specs, answers, strict=True) if a != "ok"]
        return failing[0] if failing else "ok"


async def _bounded(check: Coroutine[Any, Any, str]) -> str:
    try:
        async with asyncio.timeout(CHECK_TIMEOUT + 1):
            return await check
    except TimeoutError:
        return "did not answer in time"
    except Exception as exc:  # the part is not ready; say what kind of failure, no secrets
        return f"unreachable ({type(exc).__name__})"
