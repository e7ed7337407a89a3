"""User- and model-facing strings of the code features (kept here, in one place)."""

from __future__ import annotations

INDEX_USAGE = "Usage: `/index NAME` — re-index a registered repository (needs `code.index`)."
INDEX_FAILED = "Re-indexing failed; the details are in the server log."
NO_REPOS = "No repositories are available in this conversation."


def repo_not_found(name: str, available: list[str]) -> str:
    """Also used for repos that exist but the policy hides: the two must read the same."""
    known = ", ".join(available) if available else "none"
    return f"there is no repository named {name!r} (available here: {known})"


def repo_not_found_reply(name: str, available: list[str]) -> str:
    text = repo_not_found(name, available)
    return text[0].upper() + text[1:] + "."


NO_SEARCH_RESULTS = "No code matched that in the repositories available here."


def index_done(name: str, summary: dict[str, int], vectors_error: str | None = None) -> str:
    text = (
        f"Indexed `{name}`: {summary['files']} files — {summary['added']} added, "
        f"{summary['changed']} changed, {summary['removed']} removed, "
        f"{summary['unchanged']} unchanged; {summary.get('chunks_written', 0)} chunks written"
    )
    if "vectors_embedded" in summary:
        text += f", {summary['vectors_embedded']} embedded"
        # Chunks re-made unchanged (the rest of an edited file) kept their vectors.
        reused = summary.get("vectors_reused", 0)
        text += f" ({reused} unchanged kept their vectors)." if reused else "."
    else:
        text += "."
    if vectors_error:
        text += f" Semantic search was not updated: {vectors_error}."
    return text


def index_progress(name: str, stage: str, done: int, total: int) -> str:
    what = "files scanned" if stage == "files" else "chunks embedded"
    return f"Indexing `{name}`: {done}/{total} {what}…"
