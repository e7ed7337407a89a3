"""What the start-up check locks (bot/startup_checks.py), the lock itself within one machine,
the shutdown bound's setting, and the exit status the shutdown sequence reports."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.shutdown import EXIT_CUT, Shutdown
from bot.startup_checks import (
    SharedResourceError,
    held_alone,
    one_process_resources,
    sqlite_file,
)
from config.settings import SettingsError, load_settings


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite:////srv/data/threadline.db", Path("/srv/data/threadline.db")),
        ("sqlite+aiosqlite:////srv/t.db?timeout=5", Path("/srv/t.db")),
        ("sqlite://", None),
        ("sqlite:///:memory:", None),
        ("postgresql://threadline@127.0.0.1:5432/threadline", None),
    ],
)
def test_the_sqlite_file_of_a_database_url(url: str, expected: Path | None) -> None:
    assert sqlite_file(url) == expected


def test_a_relative_sqlite_path_is_taken_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert sqlite_file("sqlite:///data/t.db") == tmp_path / "data" / "t.db"


def test_only_sqlite_and_the_embedded_store_are_one_process_resources(
    make_settings: Callable[..., Any],
) -> None:
    default = one_process_resources(make_settings())
    assert [r.instead.split("=")[0] for r in default] == ["DATABASE_URL", "QDRANT_URL"]
    assert default[0].lock.name == "threadline.db.serving.lock"
    assert default[1].lock.name == "qdrant-edge.serving.lock"
    shared = make_settings(
        database_url="postgresql://threadline@127.0.0.1:5432/threadline",
        qdrant_url="http://127.0.0.1:6333",
    )
    assert one_process_resources(shared) == []


def test_the_lock_refuses_a_second_holder_and_names_the_first(
    make_settings: Callable[..., Any],
) -> None:
    # flock locks belong to open files, so a second open in this process is refused too.
    settings = make_settings(qdrant_url="http://127.0.0.1:6333")
    with held_alone(settings, "serve"):
        with pytest.raises(SharedResourceError) as refused, held_alone(settings, "worker"):
            pass
        message = str(refused.value)
        assert "(threadline serve)" in message
        assert "DATABASE_URL=postgresql://" in message
        assert "QDRANT_URL" not in message  # that one is a server already
    with held_alone(settings, "worker"):  # released with the block
        pass


def test_the_shutdown_grace_is_validated_and_named(tmp_path: Path) -> None:
    assert load_settings(data_dir=tmp_path).shutdown_grace == 25.0
    assert load_settings(data_dir=tmp_path, shutdown_grace=5).shutdown_grace == 5.0
    with pytest.raises(SettingsError, match="THREADLINE_SHUTDOWN_GRACE: Input should be greater"):
        load_settings(data_dir=tmp_path, shutdown_grace=0)


async def test_the_bound_counts_from_the_first_signal_and_a_cut_exits_non_zero() -> None:
    now = [100.0]
    shutdown = Shutdown(10.0, clock=lambda: now[0])
    assert shutdown.remaining() == 10.0
    assert shutdown.finished() == 0  # never started: nothing to report
    shutdown.begin("test")
    now[0] += 4
    shutdown.begin("again")  # the first start counts
    assert shutdown.remaining() == 6.0
    assert shutdown.requested.is_set()
    assert shutdown.finished() == 0
    shutdown.cut("1 Slack answer(s)")
    assert shutdown.finished() == EXIT_CUT
    now[0] += 20
    assert shutdown.remaining() == 0.0
    await asyncio.sleep(0)


async def test_parts_told_at_the_start_of_the_sequence_are_told_once() -> None:
    shutdown = Shutdown(10.0)
    told: list[str] = []
    shutdown.on_begin(lambda: told.append("scheduler"))
    shutdown.begin("test")
    shutdown.begin("again")
    shutdown.on_begin(lambda: told.append("late"))  # already begun: at once
    assert told == ["scheduler", "late"]
    assert shutdown.finished() == 0
