"""What a code search returns. Standard library only: `threadline search` prints results a
bot process sent without importing the search machinery."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

MAX_TOP_K = 30


@dataclass(frozen=True, slots=True)
class CodeResult:
    """One search result; `as_json` is the documented `threadline search --json` row."""

    repo: str
    path: str
    start_line: int
    end_line: int
    symbol: str
    kind: str
    role: str
    score: float
    snippet: str

    def as_json(self) -> dict[str, Any]:
        row = asdict(self)
        row["score"] = round(self.score, 6)
        return row

    def as_wire(self) -> dict[str, Any]:
        """The result as the store socket carries it (the score unrounded: the text output
        prints it with four digits, and must print what a search in this process would)."""
        return asdict(self)

    @classmethod
    def from_wire(cls, row: dict[str, Any]) -> CodeResult:
        return cls(
            str(row["repo"]),
            str(row["path"]),
            int(row["start_line"]),
            int(row["end_line"]),
            str(row["symbol"]),
            str(row["kind"]),
            str(row["role"]),
            float(row["score"]),
            str(row["snippet"]),
        )
