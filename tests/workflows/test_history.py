"""On a real worker: the maintenance round prunes the run history past its retention (by age,
and past the cap per skill) and counts the skills overdue; `skills runs` says how far back the history
goes; `skills doctor` finds each way the schedules can disagree with the store, and exits 1.

Real worker, real Temporal dev server, real store. Rows are moved back in time directly, as time would
have moved them (a test cannot wait 30 days)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import update
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleIntervalSpec,
    ScheduleSpec,
    ScheduleState,
)

from adapters.store import Store
from adapters.store.tables import RunRow, SkillRow
from config.settings import Settings
from skills.messages.run import SkillRunInput
from tests.cli_zygote import run_command
from tests.conftest import ROOT, Engine, schedule_exists
from tests.workflows.test_run_ends import _maintenance

SKILLS = Path(sys.executable).with_name("skills")


def _direct(name: str, schedule: str = "0 0 1 1 *") -> dict[str, object]:
    return {"name": name, "instructions": "x", "notify_on_completion": False, "schedule": schedule,
            "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": name}}]}


def _store(settings: Settings) -> Store:
    return Store.open(settings.store_url, schedule_prefix=settings.task_queue)


def _move_back(settings: Settings, run_ids: list[str], by: timedelta) -> None:
    store = _store(settings)
    with store.session() as session:
        for run_id in run_ids:
            row = session.get(RunRow, run_id)
            assert row is not None
            row.started_at -= by
            row.finished_at = row.finished_at - by if row.finished_at else None
            row.scheduled_at = row.scheduled_at - by if row.scheduled_at else None
            session.add(row)
        session.commit()


async def skills_cli(client: Client, settings: Settings, *argv: str) -> subprocess.CompletedProcess[str]:
    """`skills ARGV` in its own process (in a thread: the worker answering it runs on this event loop)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "SKILLS_", "OPENAI_"))}
    return await asyncio.to_thread(
        run_command, [str(SKILLS), *argv, "--address", client.service_client.config.target_host,
                      "--task-queue", settings.task_queue], env, ROOT, 120)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"run_retention_days": 30, "max_runs_per_skill": 3,
                                       "overdue_after": timedelta(minutes=10)})


async def test_maintenance_prunes_the_history_and_skills_runs_says_how_far_back_it_goes(
        client: Client, engine: Engine) -> None:
    skills = engine.skills
    await skills.register(_direct("chatty"))
    runs = [await skills.run("chatty") for _ in range(6)]
    assert all(r.status == "success" for r in runs)
    oldest_two = [r.run_id for r in sorted(runs, key=lambda r: r.started_at)[:2]]
    _move_back(engine.settings, oldest_two, timedelta(days=40))

    report = await _maintenance(client, engine)
    assert report.pruned is not None
    assert (report.pruned.by_age, report.pruned.by_count) == (2, 1)  # 40 days old; then 4 left, 3 kept
    kept = await skills.runs("chatty")
    assert len(kept) == 3 and not {r.run_id for r in kept} & set(oldest_two)
    history = await skills.run_history("chatty")
    assert (history.retention_days, history.max_runs_per_skill) == (30, 3)
    assert history.oldest == min(r.started_at for r in kept)

    shown = await skills_cli(client, engine.settings, "runs", "chatty")
    assert shown.returncode == 0, shown.stderr
    assert "History: the last 30 days, at most 3 a skill; the oldest kept started " in shown.stdout, shown.stdout
    assert (await _maintenance(client, engine)).pruned.by_count == 0  # type: ignore[union-attr]


async def test_skills_doctor_finds_each_way_the_schedules_disagree_with_the_store(
        client: Client, engine: Engine) -> None:
    skills, queue = engine.skills, engine.settings.task_queue
    healthy = await skills_cli(client, engine.settings, "doctor")
    assert healthy.returncode == 0 and "no problem found" in healthy.stdout, healthy.stdout + healthy.stderr

    gone = (await skills.register(_direct("gone"))).skill
    held = (await skills.register(_direct("held"))).skill
    # Hourly, at the minute of half an hour ago: due well past overdue_after, and its schedule does not fire
    # again while the test runs. At */5 a five-minute mark inside the test fired it, and the run recorded
    # made the skill on time: three problems, not four.
    minute = (datetime.now(UTC) - timedelta(minutes=30)).minute
    late = (await skills.register(_direct("late", f"{minute} * * * *"))).skill
    assert gone and held and late and gone.schedule_id and held.schedule_id and late.schedule_id
    # Behind the engine's back: a schedule deleted, one paused with no reason the store knows, a stray one
    # that starts runs on this queue.
    await client.get_schedule_handle(gone.schedule_id).delete()
    await client.get_schedule_handle(held.schedule_id).pause()
    stray = f"{queue}-9999-stray"
    await client.create_schedule(stray, Schedule(
        action=ScheduleActionStartWorkflow("SkillRun", SkillRunInput(skill_id=9999), id=stray, task_queue=queue),
        spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=timedelta(days=365))]),
        state=ScheduleState(paused=True)))
    # And a skill whose fires stopped arriving: its schedule set an hour ago, nothing recorded since.
    store = _store(engine.settings)
    with store.session() as session:
        an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
        session.execute(update(SkillRow).where(SkillRow.id == late.id)  # type: ignore[arg-type]
                        .values(updated_at=an_hour_ago, created_at=an_hour_ago))
        session.commit()
    try:
        found = await skills_cli(client, engine.settings, "doctor", "--json")
        assert found.returncode == 1, found.stdout + found.stderr
        answer = json.loads(found.stdout)
        assert answer["ok"] is False
        problems = {(p["kind"], p["schedule_id"]) for p in answer["problems"]}
        assert problems == {("missing", gone.schedule_id), ("paused", held.schedule_id), ("extra", stray),
                            ("overdue", late.schedule_id)}, answer["problems"]
        fixes = {p["kind"]: p["fix"] for p in answer["problems"]}
        assert fixes["missing"] == f"skills resume {gone.id}" and stray in fixes["extra"]

        text = await skills_cli(client, engine.settings, "doctor")
        assert text.returncode == 1 and "✗ paused: skill 'held'" in text.stdout
        assert "4 problem(s)" in text.stdout.splitlines(), text.stdout  # the count's own line: "14 problem(s)" held it

        # The fixes it prints work: what the engine made is whole again.
        await skills.resume(gone.id)
        await skills.resume(held.id)
        assert await schedule_exists(client, gone.schedule_id)
        report = await _maintenance(client, engine)
        assert report.overdue == 1  # the gauge's count: the late skill
    finally:
        await client.get_schedule_handle(stray).delete()
    again = json.loads((await skills_cli(client, engine.settings, "doctor", "--json")).stdout)
    assert {p["kind"] for p in again["problems"]} == {"overdue"}
