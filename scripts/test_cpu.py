"""The tests' CPU, their processes' included: run slices of the suite with the recorder on, then sum.

    .venv/bin/python scripts/test_cpu.py run tests/faults tests/service      # each slice: pytest -n 2
    .venv/bin/python scripts/test_cpu.py report --top 50                      # from .flakes/cpu/*.jsonl
    .venv/bin/python scripts/test_cpu.py reads -n 200 [--config KEY=VALUE]    # what one read through Temporal costs

``run`` runs each argument as one `pytest -q -n WORKERS` session with ``SKILLS_TEST_CPU`` set
(tests/cpu_usage.py), into ``.flakes/cpu/<slice>.jsonl`` (replaced). ``report`` lists the costliest tests and the CPU per
directory over every file there. CPU seconds, not wall time: they do not move with the machine's load,
which on a shared machine wall time does. Never the whole suite at once on a shared 2-core machine: a slice
at a time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / ".flakes" / "cpu"  # .flakes/ is ignored by git


def slice_name(target: str) -> str:
    return target.strip("/").replace("/", "_").replace("::", "-").removesuffix(".py") or "all"


def run(targets: list[str], workers: int, extra: list[str], out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    status = 0
    for target in targets:
        path = out / f"{slice_name(target)}.jsonl"
        path.unlink(missing_ok=True)
        started, before = time.monotonic(), waited()
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", str(workers), "-p", "no:cacheprovider",
                               target, *extra], cwd=ROOT, env=environment(path))
        records = load([path])
        print(f"{target}: {len(records)} tests, {sum(r['cpu'] for r in records):.0f} CPU s, "
              f"session {waited() - before:.0f} CPU s (collection and start-ups included), "
              f"{time.monotonic() - started:.0f} s wall, exit {done.returncode}", flush=True)
        status = status or done.returncode
    return status


def environment(path: Path) -> dict[str, str]:
    """The recorder on, and bytecode cached as `make test` has it (PYTHONDONTWRITEBYTECODE, set on some machines,
    would have every process compile the engine again and pytest rewrite every test module's asserts again)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "SKILLS_TEST_CPU": str(path)}


def waited() -> float:
    """CPU of this process's ended children and theirs: a pytest session's, its xdist workers and dev servers
    included (not a PostgreSQL cluster's, which detaches)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def load(paths: list[Path]) -> list[dict]:
    records = []
    for path in paths:
        if path.exists():
            records += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return records


def directory(nodeid: str) -> str:
    return str(Path(nodeid.split("::")[0]).parent)


def report(paths: list[Path], top: int) -> None:
    records = load(paths)
    if not records:
        sys.exit(f"no records in {', '.join(map(str, paths)) or OUT}")
    total = sum(r["cpu"] for r in records)
    print(f"{len(records)} tests, {total:.0f} CPU s ({total / 60:.1f} CPU min)\n")
    print(f"The {top} costliest (CPU s, of which this process and its waited-for children; wall s):")
    for r in sorted(records, key=lambda r: -r["cpu"])[:top]:
        print(f"{r['cpu']:8.1f} {r['self_and_waited']:8.1f} {r['wall']:8.1f}  {r['test']}")
    by_dir: dict[str, list[float]] = defaultdict(list)
    for r in records:
        by_dir[directory(r["test"])].append(r["cpu"])
    print("\nPer directory (CPU s, tests):")
    for name, cpus in sorted(by_dir.items(), key=lambda kv: -sum(kv[1])):
        print(f"{sum(cpus):8.0f} {len(cpus):6d}  {name}")
    by_file: dict[str, list[float]] = defaultdict(list)
    for r in records:
        by_file[r["test"].split("::")[0]].append(r["cpu"])
    print("\nCostliest files (CPU s, tests):")
    for name, cpus in sorted(by_file.items(), key=lambda kv: -sum(kv[1]))[:25]:
        print(f"{sum(cpus):8.0f} {len(cpus):6d}  {name}")


def reads(count: int, config: list[str]) -> None:
    """CPU of ``count`` `SkillsClient` reads (``runs`` of one skill) against a dev server started as the tests'
    session starts its own (``config``: more dynamic config values), split into the server's and this process's
    (the client and the in-process worker)."""
    import asyncio
    import shutil
    import tempfile

    sys.path.insert(0, str(ROOT))
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.testing import WorkflowEnvironment

    from client.temporal_cli import temporal_binary
    from search_attributes import SKILL_AGENT, SKILL_APPROVAL, SKILL_NAME, SKILL_TIER, SKILL_WAITING
    from tests.conftest import DEV_SERVER_STARTUP, Engine, settings_in
    from tests.cpu_usage import descendants

    async def measure() -> None:
        extra = ["--dynamic-config-value", "system.forceSearchAttributesCacheRefreshOnRead=true"]
        for value in config:
            extra += ["--dynamic-config-value", value]
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=temporal_binary(), dev_server_startup_timeout=DEV_SERVER_STARTUP,
            data_converter=pydantic_data_converter, dev_server_extra_args=extra,
            search_attributes=[SKILL_NAME, SKILL_AGENT, SKILL_TIER, SKILL_WAITING, SKILL_APPROVAL])
        folder = Path(tempfile.mkdtemp(prefix="skills-reads-"))
        engine = await Engine(settings_in(folder), env.client).start()
        try:
            await engine.skills.register({
                "name": "water", "instructions": "remind", "notify_on_completion": False, "schedule": "0 0 1 1 *",
                "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "Drink water!"}}]})
            await engine.skills.runs("water")
            server, me = sum(descendants().values()), time.process_time()
            for _ in range(count):
                await engine.skills.runs("water")
            server, me = sum(descendants().values()) - server, time.process_time() - me
            print(f"{count} reads: {(server + me) / count * 1000:.0f} ms of CPU a read, {server / count * 1000:.0f} of "
                  f"them the dev server's ({server:.2f} CPU s; this process {me:.2f}); load {os.getloadavg()[0]:.1f}")
        finally:
            await engine.stop()
            await env.shutdown()
            shutil.rmtree(folder, ignore_errors=True)

    asyncio.run(measure())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run slices of the suite with the recorder on")
    r.add_argument("--workers", "-n", type=int, default=2)
    r.add_argument("--out", type=Path, default=OUT, help="the folder of the records (default .flakes/cpu)")
    r.add_argument("targets", nargs="+", help="a directory or file per slice; pytest options after --")
    p = sub.add_parser("report", help="the costliest tests and the CPU per directory")
    p.add_argument("--top", type=int, default=50)
    p.add_argument("files", nargs="*", type=Path, help="record files or folders (default .flakes/cpu)")
    q = sub.add_parser("reads", help="what one SkillsClient read costs, the dev server's CPU and this process's")
    q.add_argument("-n", type=int, default=200)
    q.add_argument("--config", action="append", default=[], help="a dynamic config value for the dev server")
    args, extra = parser.parse_known_args()
    if args.command == "reads":
        reads(args.n, args.config)
        return 0
    if args.command == "run":
        return run(args.targets, args.workers, extra, args.out)
    files = [f for given in args.files or [OUT] for f in (sorted(given.glob("*.jsonl")) if given.is_dir() else [given])]
    report(files, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
