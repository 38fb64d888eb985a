"""Every figure an operator asks of the engine beside raw Temporal, in one run: the benchmarks of
docs/performance.md one after the other, then one table of all their figures.

In order: process starts (spawn -> polling, spawn -> first queued fire done, idle RSS; bench.startup), the
worker's RSS with 1,000 skills (bench.rss), CPU per fire by process and single-fire lags (bench.engine),
then aligned bursts (bench.aligned) at each N, exact (at one N, 300, also raw's workflow started by the
engine's schedule shape, and raw's burning the engine worker's extra CPU per fire: what the gap is made of),
and at one N with the default spread. Each benchmark runs as its own process with its own dev server, as
when it is run alone, so one cannot leave load or memory to the next; its output is shown as it comes, and
its figures gathered (``BENCH_ROWS``). A benchmark that fails is named in the table and the others still run.

    .venv/bin/python -m bench.report                           # ~50 min on 2 cores: N = 10, 100, 300, 1000
    .venv/bin/python -m bench.report --n 10 100 --spread-n 0   # a shorter run: no N=1000, no spread, no gap
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Part:
    title: str
    args: list[str]

    @property
    def command(self) -> str:
        return " ".join(["python -m", *self.args])


def parts(ns: list[int], spread_n: int, gap_n: int, fires: int) -> list[Part]:
    found = [
        Part("process starts", ["bench.startup", "--runs", "3", "--spawns", "6"]),
        Part("worker RSS with 1,000 skills", ["bench.rss"]),
        Part("the fire path: CPU per fire, single-fire lags", ["bench.engine", "--fires", str(fires),
                                                              "--registrations", "20", "--calls", "100"]),
    ]
    found += [Part(f"aligned burst, N={n}, exact", ["bench.aligned", "--n", str(n)]) if n != gap_n else
              Part(f"aligned burst, N={n}, exact, and the gap taken apart", ["bench.aligned", "--n", str(n), "--sides",
                                                                            "raw,engine,shaped,busy"])
              for n in ns]
    if spread_n:
        found.append(Part(f"aligned burst, N={spread_n}, default spread (not counted toward the target)",
                          ["bench.aligned", "--n", str(spread_n), "--spread"]))
    return found


def run(part: Part, rows: Path) -> tuple[list[dict[str, str]], int, float]:
    """The figures ``part`` printed, its exit status and its wall seconds."""
    rows.write_text("")
    print(f"\n== {part.title}: {part.command}", flush=True)
    began = time.monotonic()
    status = subprocess.call([sys.executable, "-m", *part.args], cwd=ROOT, env={**os.environ, "BENCH_ROWS": str(rows)})
    figures = [json.loads(line) for line in rows.read_text().splitlines() if line.strip()]
    return figures, status, time.monotonic() - began


def table(results: list[tuple[Part, list[dict[str, str]], int, float]], wall: float) -> None:
    print(f"\n\n# All figures, engine beside raw Temporal (one run, {wall / 60:.0f} min; "
          f"{os.cpu_count()} cores, Python {platform.python_version()})\n", flush=True)
    print(f"{'':<50} {'engine':>18} {'raw Temporal':>16}   note")
    for part, figures, status, seconds in results:
        state = f"exit status {status}: see its output above" if status else f"{seconds / 60:.1f} min"
        print(f"\n## {part.title} ({state})\n   {part.command}")
        for f in figures:
            print(f"{f['what']:<50} {f['engine']:>18} {f['raw']:>16}   {f['note']}")
    print(flush=True)


def main(ns: list[int], spread_n: int, gap_n: int, fires: int) -> int:
    began = time.monotonic()
    results = []
    with tempfile.TemporaryDirectory(prefix="skills-bench-report-") as tmp:
        for part in parts(ns, spread_n, gap_n, fires):
            results.append((part, *run(part, Path(tmp) / "rows.jsonl")))
    table(results, time.monotonic() - began)
    return int(any(status for _, _, status, _ in results))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[10, 100, 300, 1000],
                        help="skills firing on the same minute, one aligned burst each")
    parser.add_argument("--spread-n", type=int, default=100,
                        help="N of one more burst with the default spread (0: none)")
    parser.add_argument("--gap-n", type=int, default=300,
                        help="the N whose burst also runs raw's workflow on the engine's schedule shape and raw's "
                             "burning the engine worker's extra CPU (bench.aligned --sides)")
    parser.add_argument("--fires", type=int, default=200, help="fires of bench.engine's CPU per fire")
    args = parser.parse_args()
    sys.exit(main(args.n, args.spread_n, args.gap_n, args.fires))
