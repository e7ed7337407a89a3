"""Is the right skill in the index the agent sees? (not a pytest test)

    .venv/bin/python bench/skills_index.py [--window 32768] [--share 0.01]
        [--append bench/RESULTS.md]

Writes the corpus of `bench/skills_corpus.py` (200 skills, 315 messages each written for one
skill) into a temporary folder, loads it with the shipped examples beside it, and for every
message builds the skills part of the prompt exactly as a request does (`Skills.prompt`: the
index within its budget, 1% of the window by default, ranked by BM25 + the local embedding
model when not every skill fits). Reports how often the message's skill is listed (target
>= 95%), at rank 1 and in the top 3, the index tokens per request (the repo's token counter),
and the time `Skills.prompt` adds to a request (target < 20 ms with 200 skills), for the
hybrid ranking and for BM25 alone. The library's vectors are computed before timing (once per
library change in the bot, in a worker thread).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import append_results, peak_rss_mb, percentile  # noqa: E402
from bench.skills_corpus import Query, write_corpus  # noqa: E402
from core.memory.tokens import TokenCounter  # noqa: E402
from core.policy import Policy  # noqa: E402
from core.request import Request  # noqa: E402
from core.session import open_session  # noqa: E402
from core.skills.index import SkillRanker  # noqa: E402
from core.skills.library import SHIPPED_DIR, SkillLibrary  # noqa: E402
from core.skills.service import Skills, SkillsConfig  # noqa: E402


async def measure(
    folder: Path, queries: list[Query], window: int, share: float, semantic: bool
) -> dict[str, float]:
    embedder = None
    if semantic:
        from core.code.embeddings import LocalMiniLM

        embedder = LocalMiniLM()
    skills = Skills(
        SkillLibrary([folder, SHIPPED_DIR]),
        db=None,
        ranker=SkillRanker(embedder),
        config=SkillsConfig(index_share=share),
    )
    await skills.ready()
    if semantic:
        started = time.perf_counter()
        assert skills.ranker.wait_ready(), "no skill vectors: is the embedding model installed?"
        embed_s = time.perf_counter() - started
    else:
        embed_s = 0.0
    policy = Policy.from_dict({"defaults": {"permissions": ["ask", "skills.use"]}})
    count = TokenCounter().count_text
    listed = top1 = top3 = 0
    tokens: list[int] = []
    times: list[float] = []
    listed_counts: list[int] = []
    for q in queries:
        session = open_session(Request("bench", "t", "c", "th", "u", q.text), policy)
        started = time.perf_counter()
        part = await skills.prompt(session, q.text, window, count)
        times.append((time.perf_counter() - started) * 1000)
        assert part is not None and part.index is not None
        names = part.index.listed
        listed += q.skill in names
        top1 += names[:1] == (q.skill,)
        top3 += q.skill in names[:3]
        listed_counts.append(len(names))
        tokens.append(count(part.index.text))
    n = len(queries)
    return {
        "listed": listed / n,
        "top1": top1 / n,
        "top3": top3 / n,
        "listed_per_request": statistics.mean(listed_counts),
        "tokens_mean": statistics.mean(tokens),
        "tokens_max": max(tokens),
        "p50": percentile(times, 50),
        "p95": percentile(times, 95),
        "embed_library_s": embed_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=32_768, help="model context window")
    parser.add_argument("--share", type=float, default=0.01, help="index budget, share of it")
    parser.add_argument("--append", type=Path, help="append the results to this Markdown file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "skills"
        queries = write_corpus(folder)
        skill_count = sum(1 for p in folder.iterdir() if (p / "SKILL.md").is_file())
        rows = []
        for label, semantic in (("hybrid (BM25 + MiniLM, RRF)", True), ("BM25 alone", False)):
            r = asyncio.run(measure(folder, queries, args.window, args.share, semantic))
            rows.append(
                f"| {label} | {r['listed']:.1%} | {r['top1']:.1%} | {r['top3']:.1%} | "
                f"{r['listed_per_request']:.1f} | {r['tokens_mean']:.0f} / {r['tokens_max']} | "
                f"{r['p50']:.1f} | {r['p95']:.1f} |"
            )
            if semantic:
                embed_s = r["embed_library_s"]
    budget = max(64, int(args.window * args.share))
    header = (
        "| ranking | right skill listed | at rank 1 | in top 3 | skills listed | index tokens "
        "mean / max | added p50 (ms) | added p95 (ms) |\n|---|---:|---:|---:|---:|---:|---:|---:|"
    )
    table = "\n".join([header, *rows])
    print(table)
    notes = (
        f"- corpus: {skill_count} skills + the 3 shipped examples, {len(queries)} messages; "
        f"window {args.window:,} tokens, index budget {budget} tokens ({args.share:.0%})\n"
        f"- embedding the library's descriptions (once per change, in a worker thread): "
        f"{embed_s:.1f} s\n"
        f"- peak RSS of the bench process: {peak_rss_mb():.0f} MB\n"
    )
    print(notes)
    if args.append:
        append_results(
            args.append,
            "Skills index: right skill listed, tokens, added latency",
            f"{table}\n\n{notes}\n"
            "Targets: the right skill listed for >= 95% of messages; under 20 ms added per "
            "request with 200 skills. Added = `Skills.prompt` for one message: the index cut "
            "at its budget after ranking (query embedding included), as the agent calls it.",
        )


if __name__ == "__main__":
    main()
