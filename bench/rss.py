"""Worker memory with many skills: the resident set (RSS) of a real worker process (`python -m worker`)
with N registered skills, idle, and at its peak during a burst of runs; beside a bare Python worker
running the raw one-activity workflow.

    .venv/bin/python -m bench.rss [--skills 1000] [--burst 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

from bench.harness import header, row, rss_mib, started
from skills.messages.run import SkillRunInput
from skills.naming import SKILL_RUN
from starter import exit_process


def children_rss(pid: int) -> float:
    """RSS of the MCP servers a worker started (its child processes)."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if ppid == pid:
                    total += rss_mib(int(entry.name))
            except (OSError, ValueError):
                continue
    return total


async def peak_during(pid: int, work: asyncio.Task[object]) -> float:
    peak = rss_mib(pid)
    while not work.done():
        peak = max(peak, rss_mib(pid))
        await asyncio.sleep(0.1)
    await work
    return max(peak, rss_mib(pid))


async def main(count: int, burst: int) -> None:
    async with started(queue="bench-rss", worker_in_process=False) as h:
        address = h.env.client.service_client.config.target_host
        env = {**os.environ, "TEMPORAL_ADDRESS": address, "SKILLS_TASK_QUEUE": h.settings.task_queue,
               "SKILLS_DATA_DIR": str(h.settings.data_dir), "SKILLS_TIMEZONE": "UTC"}
        worker = await asyncio.create_subprocess_exec(sys.executable, "-m", "worker", env=env,
                                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        raw = await asyncio.create_subprocess_exec(sys.executable, "-m", "bench.raw", address, "bench-rss-raw", env=env)
        try:
            result = await h.skills.register_many([
                {"name": f"bench rss {i}", "instructions": "Say hello to the team. " * 20, "schedule": "0 9 * * *",
                 "notify_on_completion": False,
                 "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": f"rss {i}"}}]}
                for i in range(count)])
            assert not result.refused, result.refused[:3]
            await asyncio.sleep(5)
            idle = rss_mib(worker.pid)

            async def fire() -> None:
                ids = [item.skill_id for item in result.items[:burst]]
                handles = await asyncio.gather(*(h.client.start_workflow(
                    SKILL_RUN, SkillRunInput(skill_id=skill_id, trigger="manual"), id=f"bench-rss-{skill_id}-{time.time_ns()}",
                    task_queue=h.settings.task_queue) for skill_id in ids))
                await asyncio.gather(*(handle.result() for handle in handles))

            peak = await peak_during(worker.pid, asyncio.create_task(fire()))

            async def fire_raw() -> None:
                handles = await asyncio.gather(*(h.client.start_workflow(
                    "BenchRaw", "x", id=f"bench-rss-raw-{i}-{time.time_ns()}", task_queue="bench-rss-raw")
                    for i in range(burst)))
                await asyncio.gather(*(handle.result() for handle in handles))

            raw_idle = rss_mib(raw.pid)
            raw_peak = await peak_during(raw.pid, asyncio.create_task(fire_raw()))
            header()
            row(f"worker RSS, {count} skills, idle (MiB)", f"{idle:.0f}", f"{raw_idle:.0f}",
                f"target <= 150; the MCP servers it started: {children_rss(worker.pid):.0f} MiB more")
            row(f"worker RSS, peak in a burst of {burst} runs (MiB)", f"{peak:.0f}", f"{raw_peak:.0f}",
                "target <= 150; raw: a bare worker of the one-activity workflow")
        finally:
            worker.terminate()
            raw.terminate()
            await asyncio.wait_for(worker.wait(), 30)
            await asyncio.wait_for(raw.wait(), 30)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument("--burst", type=int, default=200)
    args = parser.parse_args()
    asyncio.run(main(args.skills, args.burst))
    exit_process(0)  # temporalio/sdk-python#300: skip teardown once the figures are out (flushed)
