"""The code tools' locations: each names the lines its text shows, where they begin in it, so
that a result cut to fit the window keeps exactly the locations whose lines were shown."""

from __future__ import annotations

from core.code.results import CodeResult
from core.code.ripgrep import FileHits, GrepRun, grep_result
from core.code.tools import READ_BLOCK_LINES, read_result, search_result
from core.tools.result import seen


def test_read_file_names_its_lines_in_blocks_where_they_begin() -> None:
    lines = [f"line {n}" for n in range(1, 31)]
    result = read_result("api", "a.py", lines, 3, 25)
    spans = [(loc.start, loc.end) for loc in result.locations]
    assert spans == [(3, 12), (13, 22), (23, 25)]
    assert READ_BLOCK_LINES == 10
    for loc in result.locations:
        assert result.text[loc.at :].startswith(f"{loc.start:>2} | line {loc.start}\n")
        assert (loc.repo, loc.path, loc.kind) == ("api", "a.py", "read")
    # Cut after the second block began: the third was never shown.
    cut = result.locations[1].at + 5
    assert [loc.start for loc in seen(result.locations, cut)] == [3, 13]
    assert read_result("api", "empty.py", [], 1, None).locations == ()


def test_grep_names_each_run_of_consecutive_lines() -> None:
    run = GrepRun(limit=50, matches=3)
    run.files = [
        FileHits("api", "src/app.py", [(3, False, "a"), (4, True, "def x"), (9, True, "x()")]),
        FileHits("web", "lib/b.ts", [(1, True, "x")]),
    ]
    result = grep_result(run, "x")
    assert [(loc.repo, loc.path, loc.start, loc.end) for loc in result.locations] == [
        ("api", "src/app.py", 3, 4),
        ("api", "src/app.py", 9, 9),
        ("web", "lib/b.ts", 1, 1),
    ]
    starts = [result.text[loc.at :].split("\n", 1)[0] for loc in result.locations]
    assert starts == ["3- a", "9: x()", "1: x"]
    assert grep_result(GrepRun(limit=5), "x").locations == ()


def test_search_names_each_hit_with_its_symbol() -> None:
    hits = [
        CodeResult("api", "src/app.py", 4, 8, "retry", "function", "source", 0.9, "def retry():"),
        CodeResult("api", "src/job.py", 1, 3, "Job.run", "method", "source", 0.5, "run"),
    ]
    result = search_result(hits, "retry")
    assert [(loc.path, loc.start, loc.end, loc.symbol) for loc in result.locations] == [
        ("src/app.py", 4, 8, "retry"),
        ("src/job.py", 1, 3, "Job.run"),
    ]
    for i, loc in enumerate(result.locations, 1):
        assert result.text[loc.at :].startswith(f"{i}. api: {loc.path}:{loc.start}-{loc.end}")
