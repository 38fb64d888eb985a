"""The flake harness: chosen tests run again and again on a loaded machine, and every test that failed even once
listed with its rate and its first failure (docs/testing.md).

    make flakes                                   # the default tests below, 3 rounds
    make flakes TESTS="tests/faults" ROUNDS=5     # any pytest arguments, rounds of them
    .venv/bin/python scripts/flakes.py --count 8 --hogs 2 tests/adapters/store/test_migrations.py -k sqlite

Each round is one `pytest -n WORKERS` session (its own dev servers, as `make test` starts them) beside HOGS
processes that only burn CPU, so timing that holds on a quiet machine is tested as CI's loaded one sees it.
``--count`` repeats each test within a round (pytest-repeat): the copies run at once on the xdist workers,
which is what a race between processes wants. Exit status 1 when any test failed in any round.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

DEFAULT_TESTS = [
    # The two flakes of issue 51: a start race on a new SQLite store, and a client script's abort at exit.
    "tests/adapters/store/test_migrations.py",
    "tests/client/test_script_exit.py",
    "tests/workflows/test_refusals.py",
]

HOG = "import signal, sys\nsignal.signal(signal.SIGTERM, lambda *_: sys.exit(0))\nwhile True:\n    pass\n"

REPEAT_SUFFIX = re.compile(r"(?:\[|-)\d+-\d+\]$")


def test_id(case: ET.Element) -> str:
    """``path::name[params]`` of a junit test case, the copy number pytest-repeat added taken off."""
    name = case.get("name", "")
    found = REPEAT_SUFFIX.search(name)
    if found:
        name = name[:found.start()] + ("]" if found.group().startswith("-") else "")
    classname = case.get("classname", "")
    parts = classname.split(".")
    # junit's classname is the module (and class) dotted: find the module file it names.
    for cut in range(len(parts), 0, -1):
        path = Path(*parts[:cut]).with_suffix(".py")
        if (ROOT / path).exists():
            return "::".join([str(path), *parts[cut:], name])
    return f"{classname}::{name}"


def outcomes(report: Path) -> dict[str, list[str]]:
    """Each test's outcomes in one round's junit report: "passed", "skipped", or the failure's first line."""
    found: dict[str, list[str]] = defaultdict(list)
    if not report.exists():
        return found
    for case in ET.parse(report).getroot().iter("testcase"):
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            first = (problem.get("message") or problem.text or "failed").strip().splitlines()
            found[test_id(case)].append(f"{problem.tag}: {first[0][:300] if first else ''}")
        elif case.find("skipped") is not None:
            found[test_id(case)].append("skipped")
        else:
            found[test_id(case)].append("passed")
    return found


def start_hogs(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", HOG], start_new_session=True) for _ in range(count)]


def stop_hogs(hogs: list[subprocess.Popen[bytes]]) -> None:
    for hog in hogs:
        if hog.poll() is None:
            hog.send_signal(signal.SIGTERM)
    for hog in hogs:
        try:
            hog.wait(timeout=10)
        except subprocess.TimeoutExpired:
            hog.kill()
            hog.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tests", nargs=argparse.REMAINDER,
                        help=f"pytest arguments, after the harness's options (-k too); default: {' '.join(DEFAULT_TESTS)}")
    parser.add_argument("--rounds", type=int, default=3, help="pytest sessions, one after the other (3)")
    parser.add_argument("--count", type=int, default=1, help="copies of each test in a round (pytest-repeat; 1)")
    parser.add_argument("--workers", "-n", default="4", help="pytest-xdist workers, as `make test` (4)")
    parser.add_argument("--hogs", type=int, default=os.cpu_count() or 2,
                        help="processes burning CPU beside the tests (default: one a core)")
    parser.add_argument("--out", type=Path, default=ROOT / ".flakes", help="where each round's junit report goes")
    args = parser.parse_args(argv)

    tests = [test for test in args.tests if test != "--"] or DEFAULT_TESTS
    if args.count > 1:
        # pytest-repeat renames each copy (test[sqlite] becomes test[sqlite-1-5]): a node id's parameters no longer
        # select it, so they are dropped here (every parameter of the test runs; narrow with -k).
        tests = [re.sub(r"\[[^\]]*\]$", "", test) if "::" in test else test for test in tests]
    args.out.mkdir(parents=True, exist_ok=True)
    runs: dict[str, list[str]] = defaultdict(list)
    statuses: Counter[int] = Counter()
    started = time.monotonic()
    hogs = start_hogs(args.hogs)
    try:
        for number in range(1, args.rounds + 1):
            report = args.out / f"round-{number}.xml"
            report.unlink(missing_ok=True)
            command = [sys.executable, "-m", "pytest", "-q", "-n", str(args.workers), "-p", "no:cacheprovider",
                       f"--junitxml={report}", *(["--count", str(args.count)] if args.count > 1 else []), *tests]
            print(f"round {number}/{args.rounds}: {' '.join(command[1:])}  (load {os.getloadavg()[0]:.1f})",
                  flush=True)
            done = subprocess.run(command, cwd=ROOT, env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""},
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            statuses[done.returncode] += 1
            tail = [line for line in done.stdout.splitlines() if line.strip()][-1:]
            print(f"  exit {done.returncode}: {tail[0] if tail else '(no output)'}", flush=True)
            (args.out / f"round-{number}.log").write_text(done.stdout)
            for test, outcome in outcomes(report).items():
                runs[test].extend(outcome)
    finally:
        stop_hogs(hogs)

    failed = {test: results for test, results in runs.items()
              if any(result not in ("passed", "skipped") for result in results)}
    total = sum(len(results) for results in runs.values())
    print(f"\n{len(runs)} tests, {total} runs in {args.rounds} rounds, {time.monotonic() - started:.0f} s, "
          f"{args.hogs} CPU hogs beside; reports in {args.out}")
    if not failed:
        print("no test failed")
    for test, results in sorted(failed.items()):
        bad = [result for result in results if result not in ("passed", "skipped")]
        print(f"FLAKY {len(bad)}/{len(results)}  {test}\n      {bad[0]}")
    if not runs or set(statuses) - {0, 1}:
        print(f"pytest's exit statuses: {dict(statuses)} (2 and above: a round did not run its tests)")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
