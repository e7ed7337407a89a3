"""`/readyz` names what is not ready (database, vector store, model endpoint) with a 503, and
`/healthz` stays about the process being alive; through the real Starlette app and httpx."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import httpx

from bot.app import build_app
from bot.server import create_http_app
from tests.support.fakes.openai_server import FakeOpenAI


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def get(app: Any, path: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=create_http_app(app))
    async with httpx.AsyncClient(transport=transport, base_url="http://threadline.test") as c:
        return await c.get(path)


async def test_ready_without_a_model(make_settings: Callable[..., Any]) -> None:
    app = build_app(make_settings())
    try:
        resp = await get(app, "/readyz")
        assert resp.status_code == 200
        assert resp.json() == {
            "status": "ready",
            "checks": {"database": "ok", "vector_store": "ok"},
        }
    finally:
        await app.aclose()


async def test_the_model_endpoint_is_checked(
    make_settings: Callable[..., Any], fake_llm: FakeOpenAI
) -> None:
    app = build_app(make_settings(llm_base_url=fake_llm.url, llm_model="m", llm_max_retries=0))
    try:
        assert (await get(app, "/readyz")).json()["checks"]["model"] == "ok"
    finally:
        await app.aclose()
    fake_llm.models_status = 401
    app = build_app(make_settings(llm_base_url=fake_llm.url, llm_model="m", llm_max_retries=0))
    try:
        resp = await get(app, "/readyz")
        assert resp.status_code == 503
        body = resp.json()
        assert body["failing"] == ["model"]
        assert body["checks"]["model"] == (
            "default: the model endpoint refused our credentials (HTTP 401)"
        )
    finally:
        await app.aclose()


async def test_unreachable_parts_are_named(make_settings: Callable[..., Any]) -> None:
    port = closed_port()
    app = build_app(
        make_settings(
            database_url=f"postgresql://nobody@127.0.0.1:{closed_port()}/none",
            llm_base_url=f"http://127.0.0.1:{port}/v1",
            llm_model="m",
            qdrant_url=f"http://127.0.0.1:{port}",
        )
    )
    try:
        resp = await get(app, "/readyz")
        assert resp.status_code == 503
        body = resp.json()
        assert body["status"] == "not ready"
        assert body["failing"] == ["database", "vector_store", "model"]
        assert body["checks"]["model"] == "default: the model endpoint cannot be reached"
        assert body["checks"]["database"] in ("did not answer in time",) or body["checks"][
            "database"
        ].startswith("unreachable (")
        assert "nobody" not in resp.text  # no URL, user or password in the answer
    finally:
        await app.aclose()
