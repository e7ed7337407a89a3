"""Persisting the token counter's calibration per provider model.

Without it every new process starts from the conservative default ratio and over-counts, so a
thread compacted just under the limit would be summarized again after a restart.
"""

from __future__ import annotations

from core.llm.providers import ProviderSpec
from core.memory.tokens import TokenCounter
from core.store.engine import Database
from core.store.tables import table_of

SAVE_EVERY = 5  # calibrations between writes: one small upsert, not one per model call


class CalibrationStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def load(self, spec: ProviderSpec, counter: TokenCounter) -> bool:
        from sqlmodel import col, select

        from core.store.models import ModelCalibration

        stmt = select(ModelCalibration.chars_per_token, ModelCalibration.samples).where(
            col(ModelCalibration.provider) == spec.name,
            col(ModelCalibration.model) == spec.model,
        )
        async with self._db.session() as s:
            row = (await s.exec(stmt)).first()
        if row is None:
            return False
        counter.restore(row[0], row[1])
        return True

    async def save(self, spec: ProviderSpec, counter: TokenCounter) -> None:
        from core.store.models import ModelCalibration, utcnow

        stmt = self._db.upsert(
            table_of(ModelCalibration),
            {
                "provider": spec.name[:64],
                "model": spec.model[:128],
                "chars_per_token": counter.chars_per_token,
                "samples": counter.samples,
                "updated_at": utcnow(),
            },
            ["provider", "model"],
            ["chars_per_token", "samples", "updated_at"],
        )
        async with self._db.session() as s:
            await s.exec(stmt)
