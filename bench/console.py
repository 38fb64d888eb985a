"""The console's week view of 200 skills beside raw Temporal: ``GET /`` through real HTTP (uvicorn, the
console's application over the engine's worker and store), split into its parts (the skills read through
the worker, the week computed from the calendar, the page rendered), against listing 200 raw schedules with
their next action times, the nearest thing Temporal alone offers. Target: the week renders in at most
300 ms on the server (docs/performance.md). ``--cpu``: no server, the same skills built in memory, and the
CPU one week of their fires takes computed afresh (``pages.week`` without its cache), each in a fresh process's
first week too.

    .venv/bin/python -m bench.console [--skills 200] [--n 30]
    .venv/bin/python -m bench.console --cpu [--skills 200] [--n 30]
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import httpx2
import uvicorn
from temporalio.client import Schedule, ScheduleActionStartWorkflow, ScheduleSpec

from bench.harness import RAW_QUEUE, Harness, header, percentile, row, started, wait_for
from service.console import pages
from service.console.app import Console
from skills.spec.models import Skill
from starter import exit_process

TOKEN = "bench-console-token"
ZONE = ZoneInfo("Europe/Berlin")


def skill(i: int) -> dict[str, Any]:
    """A mix like an owner's: most daily at their own minute, some on business days skipping holidays,
    some hourly, a few paused (paused after registering)."""
    base: dict[str, Any] = {"name": f"bench console {i}", "instructions": "bench", "notify_on_completion": False,
                            "schedule": f"{i % 60} {7 + i % 12} * * *", "timezone": "Europe/Berlin",
                            "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "x"}}]}
    if i % 10 == 1:
        base.update(business_days_only=True, skip_holidays="DE-BY")
    if i % 20 == 2:
        base["schedule"] = f"{i % 60} * * * *"
    return base


def in_memory(count: int, created: datetime) -> list[Skill]:
    """The ``skill`` mix as stored skills, without a server: ids from 1, one in twenty paused."""
    found = []
    for i in range(count):
        fields = skill(i)
        found.append(Skill.model_validate({
            "id": i + 1, "agent_id": "default", "name": fields["name"], "instructions": "bench", "trigger_type": "cron",
            "trigger_config": {"schedule": fields["schedule"], "timezone": fields["timezone"]},
            "execution_plan": [{"id": "s1", **fields["execution_plan"][0]}], "notify_on_completion": False,
            "business_days_only": fields.get("business_days_only", False),
            "skip_holidays": fields.get("skip_holidays"), "enabled": i % 20 != 3,
            "created_at": created, "updated_at": created}))
    return found


def cpu(count: int, n: int) -> None:
    """CPU ms of one week of ``count`` skills' fires computed afresh: the first week in this process (what a
    console's first page pays: croniter and the holidays package loaded, every expression read), then the
    median of ``n`` more, each a day later (the console's cache left out)."""
    now = datetime(2026, 12, 21, 8, 30, tzinfo=UTC)  # a Monday, Christmas in the week: Bavaria's holidays
    skills = in_memory(count, now - timedelta(days=30))
    started_at = time.thread_time()
    first = pages.week(skills, now=now, zone=ZONE)
    cold = (time.thread_time() - started_at) * 1000
    samples = []
    for k in range(1, n + 1):
        started_at = time.thread_time()
        pages.week(skills, now=now + timedelta(days=k), zone=ZONE)
        samples.append((time.thread_time() - started_at) * 1000)
    fires = sum(len(day.fires) for day in first.days)
    print(f"{count} skills in memory: {fires} fires drawn in the week, {len(first.paused)} paused, "
          f"{len(first.frequent)} listed apart (hourly)")
    print(f"cpu ms per week: first {cold:.0f}, then median {percentile(samples, 0.5):.0f} / "
          f"p95 {percentile(samples, 0.95):.0f} of {n}")


async def timed(make: Any, n: int) -> list[float]:
    samples = []
    for _ in range(n):
        started_at = time.perf_counter()
        await make()
        samples.append((time.perf_counter() - started_at) * 1000)
    return samples


def ms(samples: list[float]) -> str:
    return f"{percentile(samples, 0.5):.0f} / {percentile(samples, 0.95):.0f} ms"


async def main(count: int, n: int) -> None:
    async with started(queue="bench-console") as h:
        await setup(h, count)
        console = Console(h.skills, TOKEN, zone=ZONE, settings=h.settings)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        server = uvicorn.Server(uvicorn.Config(console.app(), log_level="warning", lifespan="off"))
        serving = asyncio.create_task(server.serve(sockets=[sock]))

        async def up() -> bool:
            return bool(server.started)

        await wait_for(up, timeout=30)
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        async with httpx2.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            started_at = time.perf_counter()
            first = await http.get("/")
            cold = [(time.perf_counter() - started_at) * 1000]
            assert first.status_code == 200 and f"bench console {count - 1}" in first.text, first.status_code

            async def page() -> None:
                response = await http.get("/")
                assert response.status_code == 200

            whole = await timed(page, n)
        listed = await h.skills.list()
        read = await timed(h.skills.list, n)
        now = datetime.now(UTC)
        week = await timed(_async(lambda: pages.week(listed, now=now, zone=ZONE)), n)
        cpu_at = time.thread_time()
        for _ in range(n):
            pages.week(listed, now=now, zone=ZONE)
        week_cpu = (time.thread_time() - cpu_at) * 1000 / n
        kept = pages.FireCache()
        pages.week(listed, now=now, zone=ZONE, cache=kept)
        later = now + timedelta(hours=1)
        warm = await timed(_async(lambda: pages.week(listed, now=later, zone=ZONE, cache=kept)), n)
        drawn = pages.week(listed, now=now, zone=ZONE)
        render = await timed(_async(lambda: console.templates.get_template("week.html").render(
            week=drawn, csrf="", signed_in=True, zone=str(ZONE))), n)
        raw = await timed(lambda: _raw_week(h, count), n)
        server.should_exit = True
        await serving
        fires = sum(len(day.fires) for day in drawn.days)
        print(f"{count} skills: {fires} fires drawn in the week, {len(drawn.paused)} paused, "
              f"{len(drawn.frequent)} listed apart (hourly); page {len(first.content) / 1024:.0f} KiB; "
              f"median / p95 of {n}")
        header()
        row(f"week of {count} skills: first GET / (cold)", f"{cold[0]:.0f} ms", "", "the fires computed")
        row(f"week of {count} skills: GET / over HTTP", ms(whole), ms(raw), "raw: list the schedules, next times")
        row("  the skills read (list, through the worker)", ms(read), "")
        row("  the week computed afresh (skills.when.calendar)", ms(week), "", f"{week_cpu:.0f} ms CPU each")
        row("  the week from the kept fires, an hour later", ms(warm), "")
        row("  the page rendered (Jinja2)", ms(render), "")


def _async(work: Any) -> Any:
    async def run() -> None:
        work()
    return run


async def _raw_week(h: Harness, count: int) -> None:
    """What Temporal alone answers: ``count`` schedules, each with its next action times (the listing holds
    the engine's schedules too: the first ``count`` listed are taken, whichever they are)."""
    found = []
    async for listed in await h.client.list_schedules(page_size=1000):
        found.append(listed.info.next_action_times if listed.info else [])
        if len(found) == count:
            break
    assert len(found) == count


async def setup(h: Harness, count: int) -> None:
    result = await h.skills.register_many([skill(i) for i in range(count)])
    assert not result.refused, result.refused[:1]
    for i in range(count):
        if i % 20 == 3:
            await h.skills.pause(f"bench console {i}")
    for i in range(count):
        schedule_id = f"bench-raw-console-{i}-{uuid.uuid4().hex[:6]}"
        await h.client.create_schedule(schedule_id, Schedule(
            action=ScheduleActionStartWorkflow("BenchRaw", "x", id=schedule_id, task_queue=RAW_QUEUE),
            spec=ScheduleSpec(cron_expressions=[f"{i % 60} {7 + i % 12} * * *"])))


def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skills", type=int, default=200, help="Skills registered (and raw schedules created).")
    parser.add_argument("--n", type=int, default=30, help="Requests timed.")
    parser.add_argument("--cpu", action="store_true", help="No server: CPU ms per week of the skills in memory.")
    args = parser.parse_args()
    if args.cpu:
        cpu(args.skills, args.n)
        exit_process(0)
    asyncio.run(main(args.skills, args.n))
    exit_process(0)


if __name__ == "__main__":
    run()
