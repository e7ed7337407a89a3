"""Developer entry point for migrations (not part of the `threadline` command):

    python -m core.store.migrations.dev revision -m "what changed"   (or: make migration MSG=...)
    python -m core.store.migrations.dev check

`revision` upgrades a scratch SQLite database to the current head, lets Alembic's
autogenerate compare it with the models, writes versions/NNNN_<slug>.py and moves `HEAD` in
__init__.py to it. Read the file before committing it: autogenerate does not see renames
(it writes drop + add, which loses the column's data) and knows nothing about data moves.
`check` prints what the models have that the migrations do not make (nothing: exit 0).
`--url` runs either against another database (say a scratch PostgreSQL schema), for changes
that only show there.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from core.store.migrations import FOLDER, HEAD, alembic_config
from core.store.migrations.compare import differences as differences


def _next_id() -> str:
    numbers = [
        int(m.group(1))
        for p in (FOLDER / "versions").glob("*.py")
        if (m := re.match(r"(\d{4})_", p.name))
    ]
    return f"{max(numbers, default=0) + 1:04d}"


def _move_head(revision: str) -> None:
    init = FOLDER / "__init__.py"
    text = init.read_text(encoding="utf-8")
    init.write_text(
        re.sub(r'^HEAD = "[^"]*"$', f'HEAD = "{revision}"', text, count=1, flags=re.M),
        encoding="utf-8",
    )


async def _run(command: str, url: str, message: str) -> int:
    from alembic import command as alembic_command

    from core.store.engine import Database
    from core.store.schema import upgrade_to_head

    db = Database(url)
    try:
        async with db.schema_connection() as conn:
            await conn.run_sync(upgrade_to_head)
            found = await conn.run_sync(differences)
            if command == "check":
                for diff in found:
                    print(diff)
                print(f"{len(found)} difference(s) between head ({HEAD}) and the models")
                return 1 if found else 0
            if not found:
                print(f"the models and head ({HEAD}) agree: no revision written")
                return 1
            revision = _next_id()

            def write(sync_conn: Any) -> None:
                alembic_command.revision(
                    alembic_config(sync_conn),
                    message=message,
                    autogenerate=True,
                    rev_id=revision,
                )

            await conn.run_sync(write)
    finally:
        await db.dispose()
    target = next((FOLDER / "versions").glob(f"{revision}_*.py"))
    _move_head(revision)
    print(f"wrote {target}; HEAD is now {revision}. Review it by hand before committing.")
    return 0


def _house_style() -> None:
    """The newest revision formatted as `make check` wants it (a missing ruff only warns)."""
    target = max((FOLDER / "versions").glob("[0-9][0-9][0-9][0-9]_*.py"))
    for ruff in (["check", "--fix", "--quiet"], ["format", "--quiet"]):
        subprocess.run([sys.executable, "-m", "ruff", *ruff, str(target)], check=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.store.migrations.dev")
    parser.add_argument("command", choices=("revision", "check"))
    parser.add_argument("-m", "--message", default="", help="what the revision changes")
    parser.add_argument("--url", help="database to compare with (default: a scratch SQLite)")
    args = parser.parse_args(argv)
    if args.command == "revision" and not args.message:
        parser.error("revision needs -m MESSAGE")
    with tempfile.TemporaryDirectory() as tmp:
        url = args.url or f"sqlite:///{Path(tmp) / 'scratch.db'}"
        code = asyncio.run(_run(args.command, url, args.message))
    if args.command == "revision" and code == 0:
        _house_style()
    return code


if __name__ == "__main__":
    sys.exit(main())
