"""Schema migrations: Alembic revisions shipped inside the package, driven from code.

Nothing here needs an alembic.ini or a working directory: `alembic_config` points Alembic at
this folder. `core.store.schema` decides when to create, stamp or upgrade; a developer adds a
revision as core/store/migrations/README.md says.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from alembic.config import Config

# The newest revision. Read on every start-up without importing Alembic; a test checks that it
# is the one head of versions/.
HEAD = "0011"

FOLDER = Path(__file__).resolve().parent


def alembic_config(connection: Any = None) -> Config:
    """An Alembic configuration for this folder; `connection` (a synchronous SQLAlchemy
    Connection, e.g. inside `AsyncConnection.run_sync`) is what env.py migrates."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(FOLDER))
    config.attributes["connection"] = connection
    return config
