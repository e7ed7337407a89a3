"""Voice replies benchmark (not a pytest test): the local engines in their worker processes.

For each local engine (Piper with en_US-joe-medium, eSpeak NG):

  rtf        real-time factor of one worker (synthesis seconds / audio seconds), median of runs
  answer     a 2,000-character answer through the production path (prepare, segment, the
             worker pool of `--workers` processes in parallel, OGG/Opus encoding of each
             segment as soon as it and those before it are ready):
             time to first audio (first segment ready) and total, with the workers warm, and
             once cold (worker start-up included)
  size       bytes per minute of audio for OGG/Opus, MP3 and WAV
  memory     peak RSS (VmHWM) of a synthesis worker process

    python bench/tts_speed.py [--runs 3] [--workers 2] [--append bench/RESULTS.md]

Needs the voice extra (`pip install '.[voice]'`). Targets from issue 14: Piper real-time factor
<= 0.2 on 2 cores; a 2,000-character answer in under 5 s in total.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import append_section, machine_facts  # noqa: E402
from core.tts.audio import Audio, AudioFormat, encode  # noqa: E402
from core.tts.encoder import StreamingEncoder  # noqa: E402
from core.tts.local import LocalEngine  # noqa: E402
from core.tts.prepare import prepare  # noqa: E402
from core.tts.synth import synthesize  # noqa: E402

ENGINES = (("piper", "en_US-joe-medium"), ("espeak", "en-us"))

PARAGRAPH = (
    "The importer times out because each batch holds ten thousand rows, and the database "
    "applies every row's constraint checks inside one transaction. When the table is busy, "
    "the lock wait alone can pass the thirty second limit. Lowering the batch size to two "
    "thousand rows keeps each transaction short, and the retry policy then covers the rare "
    "conflicts that remain."
)

ANSWER_MD = """**Why the nightly import fails**

The importer in `jobs/import.py` reads the export in batches of 10,000 rows and writes each
batch in a single transaction. On a quiet database that takes about eight seconds. During the
nightly backup, though, the table is locked for long stretches, and the lock wait alone can
exceed the 30-second statement timeout, so the whole batch is rolled back and the job stops.

There are three ways out, from least to most work:

- Lower the batch size to 2,000 rows. Each transaction then finishes well inside the timeout,
  even with the backup running, and the total run time grows by only a few percent.
- Move the import to 02:30 UTC, after the backup window ends. This needs a change to the
  schedule in `deploy/cron.yaml` and a note to the data team, who read the tables at 03:00.
- Make the importer resumable: record the last committed row in the `import_runs` table, and
  start from there after a failure. This is the most robust option, and it also makes
  re-running a failed night cheap, but it needs a migration and about a day of work.

I would start with the smaller batches today, since it is a one-line change with no risk,
and plan the resumable importer for next sprint. The retry policy already handles the rare
serialization conflicts, so nothing else needs to change. See the runbook for how to re-run
a failed import by hand in the meantime, and ask in #data if the export format changes again.

```python
BATCH_SIZE = 2_000
```

For the record, the failures started on 12 November, when the export grew past four million
rows after the billing team added the invoice lines. Before that, a batch took about three
seconds and the backup never overlapped with the slow part. The metrics dashboard shows the
lock waits clearly: they jump from under a second to forty seconds at 01:10 every night, and
they fall back to normal as soon as the backup finishes. Ping me if it fails again.

That should keep the nightly run green.
"""


@dataclass
class EngineResult:
    engine: str
    rtf: float
    rtf_cpu: float  # CPU seconds of the worker per second of audio
    answer_cpu: float  # CPU seconds of the warm answer: workers and encoding together
    rtf_parallel: float
    audio_seconds: float
    first_warm: float
    total_warm: float
    first_cold: float
    total_cold: float
    segments: int
    peak_mb: float
    sizes: dict[str, float]  # bytes per minute of audio


TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far: unlike wall time, barely moved by other
    work on a shared machine."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def vm_hwm_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


async def single_worker_rtf(engine: str, voice: str, runs: int) -> tuple[float, float]:
    """(wall-clock RTF, CPU RTF) of one worker, median of the runs."""
    pool = LocalEngine(engine, voice, workers=1, segment_bytes=4096)
    await pool.start()
    try:
        walls, cpus = [], []
        for _ in range(runs):
            (pid,) = pool.pids()
            cpu, started = cpu_seconds(pid), time.perf_counter()
            segment = await pool.synthesize(PARAGRAPH)
            walls.append((time.perf_counter() - started) / segment.audio.duration)
            cpus.append((cpu_seconds(pid) - cpu) / segment.audio.duration)
        return statistics.median(walls), statistics.median(cpus)
    finally:
        await pool.aclose()


async def answer_run(
    engine: str, voice: str, workers: int, text: str, *, warm: bool
) -> tuple[float, float, int, float, Audio, float, float]:
    """(first audio, total incl. encoding, segments, audio seconds, audio, peak MB, CPU s of
    workers and encoding together; warm runs only)."""
    pool = LocalEngine(engine, voice, workers=workers)
    try:
        if warm:
            await pool.start()
            await synthesize(pool, "Warm up.")  # both code paths loaded in each worker
        pids = pool.pids()
        cpu = sum(cpu_seconds(p) for p in pids) + time.process_time()
        started = time.perf_counter()
        encoder = StreamingEncoder("ogg")  # as the bot does: encoding overlaps synthesis
        speech = await synthesize(pool, text, on_segment=encoder.add)
        await encoder.finish()
        total = time.perf_counter() - started
        used = sum(cpu_seconds(p) for p in pids) + time.process_time() - cpu
        peak = max(vm_hwm_mb(pid) for pid in pool.pids())
        audio = speech.audio
        return speech.first_audio, total, speech.segments, audio.duration, audio, peak, used
    finally:
        await pool.aclose()


async def bench_engine(engine: str, voice: str, runs: int, workers: int) -> EngineResult:
    text = prepare(ANSWER_MD).text
    rtf, rtf_cpu = await single_worker_rtf(engine, voice, runs)
    warm = [await answer_run(engine, voice, workers, text, warm=True) for _ in range(runs)]
    cold = await answer_run(engine, voice, workers, text, warm=False)
    first_warm = statistics.median(r[0] for r in warm)
    total_warm = statistics.median(r[1] for r in warm)
    audio = warm[0][4]
    minutes = audio.duration / 60
    formats: tuple[AudioFormat, ...] = ("ogg", "mp3", "wav")
    sizes = {fmt: len(encode(audio, fmt)) / minutes for fmt in formats}
    return EngineResult(
        engine=engine,
        rtf=rtf,
        rtf_cpu=rtf_cpu,
        answer_cpu=statistics.median(r[6] for r in warm),
        rtf_parallel=total_warm / warm[0][3],
        audio_seconds=warm[0][3],
        first_warm=first_warm,
        total_warm=total_warm,
        first_cold=cold[0],
        total_cold=cold[1],
        segments=warm[0][2],
        peak_mb=max(max(r[5] for r in warm), cold[5]),
        sizes=sizes,
    )


def report(results: list[EngineResult], chars: int, workers: int, runs: int) -> str:
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    facts = "\n".join(f"- {k}: {v}" for k, v in machine_facts().items())
    spoken = len(prepare(ANSWER_MD).text)
    lines = [
        f"## Voice replies: local engine speed — {now}",
        "",
        f"Command: `.venv/bin/python bench/tts_speed.py --runs {runs} --workers {workers}"
        " --append bench/RESULTS.md`",
        "",
        facts,
        "",
        f"A {chars:,}-character answer (Markdown prepared for speech: {spoken:,} characters "
        f"spoken), {workers} worker processes; median of {runs} runs.",
        "",
        "| engine | RTF, 1 worker | CPU RTF, 1 worker | RTF, answer end to end | audio (s) "
        "| segments | first audio, warm (s) | total, warm (s) | CPU s of the answer "
        "| first audio, cold (s) | total, cold (s) | peak RSS of a worker (MB) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.engine} | **{r.rtf:.3f}** | {r.rtf_cpu:.3f} | {r.rtf_parallel:.3f} | "
            f"{r.audio_seconds:.1f} | {r.segments} | {r.first_warm:.2f} | **{r.total_warm:.2f}** "
            f"| {r.answer_cpu:.1f} | {r.first_cold:.2f} | {r.total_cold:.2f} | {r.peak_mb:.0f} |"
        )
    lines += [
        "",
        "| engine | OGG/Opus (KB per minute) | MP3 (KB per minute) | WAV 16-bit (KB per minute) |",
        "|---|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.engine} | {r.sizes['ogg'] / 1024:.0f} | {r.sizes['mp3'] / 1024:.0f} | "
            f"{r.sizes['wav'] / 1024:.0f} |"
        )
    lines += [
        "",
        "RTF = synthesis seconds / audio seconds (lower is faster); CPU RTF counts the worker's "
        "CPU seconds instead, which other work on a shared machine moves much less than the "
        "wall clock. CPU s of the answer = CPU time of the workers and of the encoding; on an "
        "otherwise idle machine with 2 cores, the total cannot be below half of it. "
        "Warm: the worker processes "
        "were already running with their voice loaded (as in a bot that has spoken once); cold "
        "includes starting them. Total = synthesize all segments in parallel and encode "
        "OGG/Opus (each segment as soon as it and those before it are ready) until the file is "
        "complete. Targets (issue 14): Piper RTF <= 0.2; a 2,000-character answer under 5 s.",
        "",
    ]
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--append", type=Path)
    args = parser.parse_args()
    results = []
    for engine, voice in ENGINES:
        print(f"{engine}...", file=sys.stderr)
        results.append(await bench_engine(engine, voice, args.runs, args.workers))
    text = report(results, len(ANSWER_MD), args.workers, args.runs)
    print(text)
    if args.append:
        append_section(args.append, text)


if __name__ == "__main__":
    asyncio.run(main())
