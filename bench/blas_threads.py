"""The encoder's speed on one BLAS thread (the engine's) against numpy's default pool (a thread a core).

The engine holds numpy's BLAS to one thread (``adapters.blas.load_numpy``; why: docs/skill-files.md,
"One BLAS thread"). This measures what that costs or saves: each mode in a fresh process, alternated,
the first 40 unseen evaluation messages encoded one at a time (as a chat turn encodes its message),
then 96 skill texts at once (as the "skill-vectors" thread encodes skills). The load average is printed
before and after: on a shared machine the pool's threads wait for cores other work holds.

    .venv/bin/python -m bench.blas_threads [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

MESSAGES = Path("tests/skills/skillmd/data/unseen_messages.json")
SKILLS = Path("tests/skills/skillmd/data/unseen_collections.json")


def child(mode: str) -> dict[str, float]:
    if mode == "pool":
        import numpy  # noqa: F401  imported first, as numpy makes it: its pool, a thread a core
    from adapters import blas, semantic

    if mode == "pool":
        blas.one_blas_thread = lambda: []  # the pool left as numpy made it
    encoder = semantic.Encoder()
    messages = [pair[0] for pair in json.loads(MESSAGES.read_text())["unseen"]["positives"]][:40]
    texts = _skill_texts()[:96]
    encoder.encode(messages[:3])  # the first call pays for allocations and lazily read pages
    one = []
    for message in messages:
        started = time.perf_counter()
        encoder.encode([message])
        one.append((time.perf_counter() - started) * 1000)
    started = time.perf_counter()
    encoder.encode(texts)
    return {"median_ms": statistics.median(one), "p95_ms": sorted(one)[int(len(one) * 0.95)],
            "texts": len(texts), "batch_s": time.perf_counter() - started}


def _skill_texts() -> list[str]:
    """Skills' names and descriptions, as the index encodes them."""
    found: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("name"), str) and isinstance(value.get("description"), str):
                found.append(f"{value['name'].replace('-', ' ')}: {value['description']}")
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(json.loads(SKILLS.read_text()))
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.blas_threads", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", choices=["one", "pool"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child)))
        return
    load = lambda: " ".join(f"{x:.1f}" for x in os.getloadavg())  # noqa: E731
    print(f"load average before: {load()} ({os.cpu_count()} cores)")
    for _ in range(args.rounds):
        for mode in ("one", "pool"):
            done = subprocess.run([sys.executable, "-m", "bench.blas_threads", "--child", mode], check=True,
                                  capture_output=True, text=True)
            r = json.loads(done.stdout)
            label = "one thread (the engine's)" if mode == "one" else "numpy's default pool"
            print(f"{label:27}: a message {r['median_ms']:.0f} ms median, p95 {r['p95_ms']:.0f} ms; "
                  f"{r['texts']} skill texts {r['batch_s']:.2f} s")
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
