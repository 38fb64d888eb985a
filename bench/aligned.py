"""Aligned fires beside raw Temporal: N skills due the same second, cron every minute, for a few fire minutes.

Raw first (N schedules, cron `* * * * *`, a workflow with one no-op activity each), then the engine (N
Direct-tier skills registered in bulk, one MCP tool call each), each alone on the machine, each on a dev
server of its own. For each: the lag from the scheduled second to the workflow's start and to its close (p50, p95,
max), the fires that closed, those still open or skipped when it stopped waiting (below), the duplicates
(two runs for one skill and one scheduled time: for the engine, two run records), the throughput in
the burst and the CPU per fire of the dev server and of this process (the workers), from just before the
first fire until the runs closed.

``--spread``: both sides with the default spread (``skills.when.spread``: 6 s for a cron every minute), the
engine's asked with ``spread: true`` (its skills are Direct plans, which take no default), raw's as the same
``jitter`` on its spec. Lags are from the whole minute, as the owner reads the time (Temporal records a fire's
own time, not the one it drew), so they include the spread. Without it both fire exactly (the engine's skills
say ``spread: false``).

Every schedule ends 30 s after the window's last minute (``end_at``), on both sides, so the drain adds no
fires. A fire of the window that did not close in the drain is accounted for: still open when the benchmark
stopped waiting (late), skipped by the overlap policy (the schedule's previous run was still open: the
server's own count, ``num_actions_skipped_overlap``, over the schedule's life, which begins a minute or two
before the window, so a skip before it lowers the unaccounted count), or neither (lost, or not yet started).

    .venv/bin/python -m bench.aligned --n 100 [--minutes 2] [--spread]     # then --n 300, --n 1000
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta

from temporalio.client import Client, Schedule, ScheduleActionStartWorkflow, ScheduleSpec
from temporalio.service import RPCError

from adapters.schedules import build_schedule
from adapters.store import Store
from bench.engine import Cpu, cpu_now
from bench.harness import RAW_QUEUE, header, percentile, row, started
from config.settings import Settings
from search_attributes import SCHEDULED_START_TIME
from skills.naming import SKILL_RUN
from skills.spec.models import Skill, TriggerConfig
from skills.when.spread import default_spread
from starter import exit_process

CRON = "* * * * *"
SPREAD = timedelta(seconds=default_spread(TriggerConfig(schedule=CRON, timezone="UTC")))

DRAIN = 90.0
"""Seconds after the last fire minute to wait for every run to close."""
END_AFTER = timedelta(seconds=30)
"""A schedule's ``end_at`` after the window's last minute: past its spread, before the next minute."""
REGISTERING = 0.06
"""Seconds the engine's bulk registration is given per skill, before the window's first minute (1,000
skills take 10 to 30 s on this machine)."""


def window(minutes: int, ready_margin: float = 10.0) -> list[datetime]:
    """The next ``minutes`` whole minutes, the first at least ``ready_margin`` seconds away."""
    now = datetime.now(UTC)
    first = (now + timedelta(seconds=ready_margin + 60)).replace(second=0, microsecond=0)
    return [first + timedelta(minutes=i) for i in range(minutes)]


async def sleep_until(moment: datetime) -> None:
    await asyncio.sleep(max(0.0, (moment - datetime.now(UTC)).total_seconds()))


async def listed(client: Client, query: str, times: list[datetime]) -> list[tuple[str, datetime, float, float]]:
    """(workflow id, scheduled time, lag to start, lag to close) of each closed run of the window's minutes
    (filtered here, not in the visibility query, so its time format cannot drop any). The scheduled time
    Temporal records is the fire's own, whatever its jitter: a spread fire's lags include its spread."""
    found = []
    wanted = set(times)
    async for w in client.list_workflows(f"{query} AND ExecutionStatus != 'Running'"):
        scheduled = w.typed_search_attributes.get(SCHEDULED_START_TIME)
        if scheduled is None or w.close_time is None or scheduled.replace(microsecond=0) not in wanted:
            continue
        found.append((w.id, scheduled, (w.start_time - scheduled).total_seconds() * 1000,
                      (w.close_time - scheduled).total_seconds() * 1000))
    return found


async def still_open(client: Client, query: str, times: list[datetime]) -> int:
    """The window's runs still open when the benchmark stopped waiting: late, not lost."""
    wanted = set(times)
    return len([w async for w in client.list_workflows(f"{query} AND ExecutionStatus = 'Running'")
                if (at := w.typed_search_attributes.get(SCHEDULED_START_TIME)) is not None
                and at.replace(microsecond=0) in wanted])


async def skipped(client: Client, schedule_ids: list[str]) -> tuple[int, int]:
    """The fires the schedules' overlap policy skipped (the server's count), over each schedule's life; and
    the schedules that did not answer. A describe is a query of the schedule's workflow, which a server still
    working through a burst's backlog may not answer in time: each is asked three times, a minute each."""
    gate = asyncio.Semaphore(10)

    async def one(schedule_id: str) -> int | None:
        async with gate:
            for _ in range(3):
                try:
                    described = await client.get_schedule_handle(schedule_id).describe(rpc_timeout=timedelta(minutes=1))
                    return described.info.num_actions_skipped_overlap
                except RPCError:
                    continue
            return None

    counts = await asyncio.gather(*(one(i) for i in schedule_ids))
    return sum(c for c in counts if c is not None), sum(c is None for c in counts)


async def drain(client: Client, query: str, times: list[datetime], expected: int) -> Cpu:
    """Wait for the window's runs to close (at most ``DRAIN`` seconds after its last minute); the CPU every
    process spent from just before the first fire until then."""
    await sleep_until(times[0] - timedelta(seconds=2))
    before = cpu_now()
    await sleep_until(times[-1])
    deadline = time.monotonic() + DRAIN
    for _ in range(int(DRAIN)):
        if time.monotonic() > deadline or len(await listed(client, query, times)) >= expected:
            break
        await asyncio.sleep(2)
    return cpu_now() - before


RAW_WORKFLOW = {"raw": "BenchRaw", "shaped": "BenchRawShaped", "busy": "BenchRawBusy"}


def raw_schedule(kind: str, schedule_id: str, end: datetime, spread: bool, settings: Settings,
                 busy_ms: float) -> Schedule:
    """Raw's schedule of ``kind``: ``raw`` a plain cron schedule of the one-activity workflow; ``busy`` the same,
    its activity burning ``busy_ms`` of CPU; ``shaped`` the schedule the engine builds for a skill of the
    same cron (its spec, policy, state, search attributes, summary, run timeout and input), starting the
    one-activity workflow on raw's worker instead of a SkillRun."""
    if kind != "shaped":
        return Schedule(
            action=ScheduleActionStartWorkflow(RAW_WORKFLOW[kind], busy_ms if kind == "busy" else "x",
                                               id=schedule_id, task_queue=RAW_QUEUE),
            spec=ScheduleSpec(cron_expressions=[CRON], jitter=SPREAD if spread else None, end_at=end))
    now = datetime.now(UTC)
    skill = Skill(id=1, agent_id="default", name=schedule_id, trigger_type="cron", instructions="bench",
                  trigger_config=TriggerConfig(schedule=CRON, timezone="UTC"), created_at=now, updated_at=now,
                  schedule_id=schedule_id, end_at=end, spread=spread,
                  execution_plan=[{"id": "send", "toolName": "outbox_send_message", "parameters": {"message": "x"}}])
    schedule = build_schedule(skill, settings)
    assert isinstance(schedule.action, ScheduleActionStartWorkflow)
    schedule.action.workflow, schedule.action.task_queue = RAW_WORKFLOW[kind], RAW_QUEUE
    return schedule


async def raw_side(client: Client, settings: Settings, n: int, minutes: int, spread: bool, kind: str = "raw",
                   busy_ms: float = 0.0) -> dict[str, float]:
    ids = [f"bench-aligned-{kind}-{i}-{uuid.uuid4().hex[:6]}" for i in range(n)]
    gate = asyncio.Semaphore(10)
    times = window(minutes, ready_margin=10 + REGISTERING * n)

    async def create(schedule_id: str) -> None:
        async with gate:
            await client.create_schedule(schedule_id, raw_schedule(kind, schedule_id, times[-1] + END_AFTER, spread,
                                                                   settings, busy_ms))

    await asyncio.gather(*(create(i) for i in ids))
    ready(times)
    query = f"WorkflowType = '{RAW_WORKFLOW[kind]}' AND WorkflowId STARTS_WITH 'bench-aligned-{kind}-'"
    cpu = await drain(client, query, times, n * minutes)
    runs = await listed(client, query, times)
    late, (skips, silent) = await still_open(client, query, times), await skipped(client, ids)

    async def delete(schedule_id: str) -> None:
        async with gate:
            await client.get_schedule_handle(schedule_id).delete()

    await asyncio.gather(*(delete(i) for i in ids))
    # A schedule's workflow id is its action's id and the scheduled time: one per schedule and time.
    pairs = Counter(wid for wid, _, _, _ in runs)
    return figures(runs, n * minutes, sum(c - 1 for c in pairs.values()), cpu, late, skips, silent)


async def engine_side(client: Client, h: object, n: int, minutes: int, spread: bool) -> dict[str, float]:
    skills = h.skills  # type: ignore[attr-defined]
    settings = h.settings  # type: ignore[attr-defined]
    times = window(minutes, ready_margin=10 + REGISTERING * n)
    result = await skills.register_many([
        {"name": f"bench aligned {i}", "instructions": "bench", "schedule": CRON, "notify_on_completion": False,
         "end_at": (times[-1] + END_AFTER).isoformat(),
         "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": f"aligned {i}"}}],
         "spread": spread}
        for i in range(n)])
    assert not result.refused, result.refused[:3]
    ready(times)
    query = f"WorkflowType = '{SKILL_RUN}' AND SkillName STARTS_WITH 'bench aligned'"
    cpu = await drain(client, query, times, n * minutes)
    runs = await listed(client, query, times)
    late = await still_open(client, query, times)
    skips, silent = await skipped(client, [item.schedule_id for item in result.items if item.schedule_id])
    ids = {item.skill_id for item in result.items}
    store = Store.open(settings.store_url, schedule_prefix=settings.task_queue)
    records = Counter((r.skill_id, r.scheduled_at) for r in store.runs.list_runs(limit=10 * n * minutes)
                      if r.skill_id in ids and r.scheduled_at is not None and times[0] <= r.scheduled_at <= times[-1])
    return figures(runs, n * minutes, sum(c - 1 for c in records.values()), cpu, late, skips, silent)


def ready(times: list[datetime]) -> None:
    """Refuse a window whose first minute came before the schedules were all made: its burst would be partial."""
    if datetime.now(UTC) > times[0] - timedelta(seconds=2):
        raise SystemExit(f"the schedules were made after {times[0]:%H:%M:%S}, the window's first minute; "
                         f"raise REGISTERING in bench/aligned.py")


def figures(runs: list[tuple[str, datetime, float, float]], expected: int, dup: int,
            cpu: Cpu, late: int, skips: int, silent: int) -> dict[str, float]:
    start, done = [r[2] for r in runs], [r[3] for r in runs]
    # Throughput: each fire minute's closed runs over the seconds from that minute to its last close.
    by_minute: dict[datetime, list[float]] = {}
    for _, scheduled, _, lag in runs:
        by_minute.setdefault(scheduled.replace(second=0, microsecond=0), []).append(lag)
    rates = [len(lags) / (max(lags) / 1000) for lags in by_minute.values() if max(lags) > 0]
    per_fire = cpu.per(max(1, len(runs)))
    return {"runs": len(runs), "expected": expected, "dup": dup, "late": late,
            "skipped": skips, "silent": silent, "unaccounted": max(0, expected - len(runs) - late - skips),
            "start50": percentile(start, .5), "start95": percentile(start, .95),
            "done50": percentile(done, .5), "done95": percentile(done, .95), "done_max": max(done, default=0),
            "rate": sum(rates) / len(rates) if rates else 0.0,
            "cpu_server": per_fire.server, "cpu_worker": per_fire.worker + per_fire.mcp}


SIDES = ("raw", "engine", "shaped", "busy")
"""``shaped`` and ``busy`` take the engine's gap apart (docs/performance.md, "What the burst gap is made of"): raw's workflow
started by the engine's schedule shape, and raw's workflow made to burn the CPU per fire the engine's worker
spends beyond raw's (measured in this run: ``engine`` runs before ``busy``)."""


async def main(n: int, minutes: int, spread: bool, sides: list[str]) -> None:
    results: dict[str, dict[str, float]] = {}
    for side in sides:
        # A dev server of its own for each side: one server's CPU per fire and lags grow with the runs and
        # schedules the sides before left in it (raw's workflow on the engine's schedule, run third on a
        # shared server, cost it 184 ms a fire; 105 on a server of its own).
        if side == "busy" and "engine" not in results:
            continue
        try:
            async with started(worker_in_process=side == "engine") as h:
                if side == "engine":
                    results[side] = await engine_side(h.client, h, n, minutes, spread)
                    continue
                busy_ms = 0.0
                if side == "busy":
                    busy_ms = max(0.0, results["engine"]["cpu_worker"] - results["raw"]["cpu_worker"])
                    print(f"busy: raw's activity burns {busy_ms:.1f} ms a fire", flush=True)
                results[side] = await raw_side(h.client, h.settings, n, minutes, spread, side, busy_ms)
        except Exception as e:  # the sides measured so far are still worth printing
            if side == "raw":
                raise
            print(f"N={n} {side}: failed: {e!r}", flush=True)
    header()
    raw = results["raw"]
    for side, figs in results.items():
        if side != "raw":
            report(n, minutes, spread, side, figs, raw)


def report(n: int, minutes: int, spread: bool, side: str, engine: dict[str, float], raw: dict[str, float]) -> None:
    """``side``'s figures beside raw's (the engine column holds ``side``'s)."""
    at = f"N={n}" if side == "engine" else f"N={n} {side}"
    how = f"spread up to {SPREAD.total_seconds():g} s" if spread else "exact"
    row(f"{at}: runs closed / expected", f"{engine['runs']}/{engine['expected']}",
        f"{raw['runs']}/{raw['expected']}", f"{minutes} fire minutes, cron every minute, {how}"
        + ("" if side == "engine" else f"; {side}: {VARIANT[side]}"))
    row(f"{at}: lag to start p50/p95 (ms)", f"{engine['start50']:.0f}/{engine['start95']:.0f}",
        f"{raw['start50']:.0f}/{raw['start95']:.0f}", "from the whole minute")
    row(f"{at}: lag to done p50/p95/max (ms)",
        f"{engine['done50']:.0f}/{engine['done95']:.0f}/{engine['done_max']:.0f}",
        f"{raw['done50']:.0f}/{raw['done95']:.0f}/{raw['done_max']:.0f}",
        f"p95 ratio {engine['done95'] / raw['done95']:.2f}" + (" (target <= 1.2)" if side == "engine" else ""))
    silent = f"; schedules that did not answer: {engine['silent']} (raw {raw['silent']})" \
        if engine["silent"] or raw["silent"] else ""
    row(f"{at}: open at the end / skipped (overlap)", f"{engine['late']}/{engine['skipped']}",
        f"{raw['late']}/{raw['skipped']}",
        f"of the fires not closed within {DRAIN:.0f} s: still running or queued (late); skipped by the "
        f"overlap policy, the server's count{silent}")
    row(f"{at}: unaccounted / duplicate fires", f"{engine['unaccounted']}/{engine['dup']}",
        f"{raw['unaccounted']}/{raw['dup']}",
        "unaccounted: neither closed, open nor skipped (or skipped by a schedule that did not answer); "
        "duplicate: two runs of one skill and minute")
    row(f"{at}: throughput in the burst (fires/s)", f"{engine['rate']:.1f}", f"{raw['rate']:.1f}",
        "a fire minute's closed runs over the seconds to its last close, mean of the minutes")
    row(f"{at}: CPU per closed fire, server + workers (ms)",
        f"{engine['cpu_server']:.1f} + {engine['cpu_worker']:.1f}", f"{raw['cpu_server']:.1f} + {raw['cpu_worker']:.1f}",
        f"ratio {(engine['cpu_server'] + engine['cpu_worker']) / max(1e-9, raw['cpu_server'] + raw['cpu_worker']):.2f}; "
        "the dev server; this process (both workers, the outbox in the engine's, the client)")


VARIANT = {"shaped": "raw's workflow, started by the engine's schedule shape",
           "busy": "raw's workflow, its activity burning the engine worker's extra CPU per fire"}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--minutes", type=int, default=2)
    parser.add_argument("--spread", action="store_true",
                        help="both sides with the default spread of a cron every minute, not exact")
    parser.add_argument("--sides", default="raw,engine",
                        help="in order, from " + ", ".join(SIDES) + "; raw first, engine before busy")
    args = parser.parse_args()
    sides = args.sides.split(",")
    if sides[0] != "raw" or set(sides) - set(SIDES) or ("busy" in sides and "engine" not in sides[:sides.index("busy")]):
        parser.error(f"--sides: raw first, then any of {', '.join(SIDES[1:])}, with engine before busy")
    asyncio.run(main(args.n, args.minutes, args.spread, sides))
    exit_process(0)  # temporalio/sdk-python#300: skip teardown once the figures are out (flushed)
