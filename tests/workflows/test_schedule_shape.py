"""A skill's schedule and runs take a shape: timeout_minutes, end_at, max_runs, jitter_seconds,
overlap and catch_up. Each registers, shows in `skills get`, is refused out of range with its field named,
and takes effect on the real Temporal schedule; a run past its timeout ends as an error on a real worker,
a schedule that ran max_runs times or passed its end_at ends, and the skill shows `ended`.

Real worker, real Temporal dev server, real store, a real slow MCP server."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, ScheduleOverlapPolicy, WorkflowExecutionStatus, WorkflowFailureError

from config.settings import Settings
from skills.errors import SkillValidationError
from skills.management.manual import SCHEMAS
from skills.spec.limits import JITTER_SECONDS, MAX_RUNS, TIMEOUT_MINUTES
from skills.spec.models import ENDED, RunRecord
from skills.when.calendar import forecast
from tests.conftest import Engine, eventually, trigger_schedule, write_mcp_config
from tests.fakes.holding import held_outbox, release
from tests.fakes.llm_server import ScriptedLLM, call, hang_until, say
from tests.starter.test_cli import options, run_skills
from tests.workflows.test_run_ends import FAKES, _maintenance, _set_columns

SEND = [{"toolName": "outbox_send_message", "parameters": {"message": "hello"}}]


NOW = datetime(2027, 3, 1, 9, 30, tzinfo=UTC)
"""A pinned "now" for the fire lists: a Monday."""


def _skill(name: str, **fields: Any) -> dict[str, Any]:
    skill = {"name": name, "instructions": "x", "schedule": "0 0 1 1 *", "execution_plan": SEND,
             "notify_on_completion": False, **fields}
    return {k: v for k, v in skill.items() if v is not None}


async def _described(client: Client, schedule_id: str | None) -> Any:
    assert schedule_id is not None
    return (await client.get_schedule_handle(schedule_id).describe()).schedule


async def _get_lines(engine: Engine, name: str) -> list[str]:
    done = await asyncio.to_thread(run_skills, "get", name, *options(engine))
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


async def test_each_field_registers_shows_in_get_and_shapes_the_real_schedule(client: Client, engine: Engine) -> None:
    end = datetime.now(UTC).replace(microsecond=0) + timedelta(days=30)
    skill = (await engine.skills.register(_skill(
        "shaped", timeout_minutes=2.5, end_at=end.isoformat(), max_runs=5, jitter_seconds=90, overlap="buffer_one",
        catch_up="none"))).skill
    assert skill is not None
    got = await engine.skills.get("shaped")
    assert (got.timeout_minutes, got.end_at, got.max_runs, got.jitter_seconds, got.overlap, got.catch_up) == \
        (2.5, end, 5, 90, "buffer_one", "none")

    schedule = await _described(client, skill.schedule_id)
    assert schedule.spec.jitter == timedelta(seconds=90) and schedule.spec.end_at == end
    assert schedule.policy.overlap == ScheduleOverlapPolicy.BUFFER_ONE
    assert schedule.policy.catchup_window == timedelta(seconds=10)  # none: the least Temporal takes
    assert schedule.state.limited_actions and schedule.state.remaining_actions == 5 and not schedule.state.paused

    lines = await _get_lines(engine, "shaped")
    assert "timeout         2.5 min (then the run is an error)" in lines
    assert f"ends            at {end.astimezone().isoformat()} or after 5 runs (0 so far)" in lines
    assert {"jitter          up to 90 s", "overlap         buffer_one", "catch-up        none"} <= set(lines)

    # An update reshapes the schedule; the defaults are what a skill had before these fields.
    await engine.skills.update("shaped", {"overlap": "allow", "catch_up": "once", "end_at": None, "max_runs": None,
                                          "jitter_seconds": 0})
    schedule = await _described(client, skill.schedule_id)
    assert schedule.policy.overlap == ScheduleOverlapPolicy.ALLOW_ALL
    assert schedule.policy.catchup_window == engine.settings.catchup_window
    assert schedule.spec.jitter is None and schedule.spec.end_at is None and not schedule.state.limited_actions
    lines = await _get_lines(engine, "shaped")
    assert {"ends            never", "jitter          none", "overlap         allow", "catch-up        once"} <= set(lines)

    # catch_up all: each missed fire in the window runs, one after another (Temporal's BUFFER_ALL).
    await engine.skills.update("shaped", {"overlap": "skip", "catch_up": "all"})
    assert (await _described(client, skill.schedule_id)).policy.overlap == ScheduleOverlapPolicy.BUFFER_ALL

    plain = (await engine.skills.register(_skill("plain"))).skill
    assert plain is not None
    schedule = await _described(client, plain.schedule_id)
    # A new Direct cron (fixed calls: a reminder) keeps its exact time; an Agent one is spread (below).
    assert schedule.policy.overlap == ScheduleOverlapPolicy.SKIP and schedule.spec.jitter is None
    assert (plain.timeout_minutes, plain.overlap, plain.catch_up) == (None, "skip", "once")


async def _next_lines(engine: Engine, name: str) -> list[str]:
    done = await asyncio.to_thread(run_skills, "next", name, "-n", "3", *options(engine))
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[1:]


def _work(name: str, **fields: Any) -> dict[str, Any]:
    """Agent-tier work that reads something (not a reminder): spread where its minute is crowded."""
    return _skill(name, execution_plan=None, required_tools=["outbox_list_messages"], **fields)


@asynccontextmanager
async def _engine_starting(client: Client, settings: Settings, fires_per_second: float,
                           **more: Any) -> AsyncIterator[Engine]:
    """A worker whose workers are said to start ``fires_per_second`` fires a second in a burst."""
    running = await Engine(settings.model_copy(update={"spread_fires_per_second": fires_per_second, **more}),
                           client).start()
    try:
        yield running
    finally:
        await running.stop()


async def test_a_lone_agent_cron_fires_at_its_exact_time(client: Client, engine: Engine) -> None:
    """"A summary every morning at 08:30", alone in its minute (one worker starts 2,400 fires in a 5-min spread):
    the server starts it at 08:30, and nothing says a spread."""
    summary = await engine.skills.register(_work("summary", schedule="30 8 * * *"))
    assert summary.skill is not None and not summary.skill.spread
    assert (await _described(client, summary.skill.schedule_id)).spec.jitter is None
    assert not any("spread" in line for line in [*summary.notes, *await _next_lines(engine, "summary")])


async def test_the_skill_that_crowds_its_minute_is_spread_and_says_why(client: Client, settings: Settings) -> None:
    """Workers said to start 2 fires in 5 min: two skills at 08:30 are served within the spread, the third that
    shares the minute crowds it and is spread. Every enabled skill counts, whatever its agent or tier (an
    Agent-tier one here is registered paused: this worker has no LLM)."""
    async with _engine_starting(client, settings, 2 / 300) as crowded:
        assert (await crowded.skills.register(_skill("water", schedule="30 8 * * *"))).skill is not None
        second = (await crowded.skills.register(_work("news", schedule="30 8 * * *", agent_id="bob"))).skill
        assert second is not None and not second.spread
        assert (await crowded.skills.register(_skill("tea", schedule="30 8 * * *", agent_id="bob"))).skill
        third = await crowded.skills.register(_work("digest", schedule="30 8 * * *"))
        assert third.skill is not None and third.skill.spread
        assert (await _described(client, third.skill.schedule_id)).spec.jitter == timedelta(minutes=5)
        [why] = [note for note in third.notes if "spread" in note]
        assert re.fullmatch(r"each fire spread up to 5 min: its minute \(\d{4}-\d\d-\d\d 08:30 \w{3}\) is crowded, "
                            r"3 skills this one included, more than the workers start in 5 min \(0\.00667 a "
                            r"second\); `spread: false` for the exact time", why), why
        lines = await _next_lines(crowded, "digest")
        assert len(lines) == 3 and all(re.fullmatch(r"  \d{4}-\d\d-\d\d 08:30 \w{3} \(spread up to 5 min\)", line)
                                       for line in lines), lines
        # A minute apart, it is alone in its minute; a paused skill counts in no one's.
        assert not (await crowded.skills.register(_work("later", schedule="31 8 * * *"))).skill.spread  # type: ignore[union-attr]
        await crowded.skills.update("tea", {"enabled": False}, agent_id="bob")
        assert not (await crowded.skills.register(_work("brief", schedule="30 8 * * *"))).skill.spread  # type: ignore[union-attr]


async def test_a_reminder_is_not_spread_in_a_crowded_minute_unless_asked(client: Client, settings: Settings) -> None:
    """An Agent-tier skill whose only call messages the owner is a reminder: 8:34 for 8:30 is wrong, however many
    share 08:30 (here every minute is crowded: 0 fires a second)."""
    async with _engine_starting(client, settings, 0) as crowded:
        leave = await crowded.skills.register(_skill("leave", schedule="30 8 * * 1-5", execution_plan=None,
                                                     instructions="Tell me to leave for the train",
                                                     required_tools=["outbox_send_message"]))
        assert leave.skill is not None and not leave.skill.spread
        assert (await _described(client, leave.skill.schedule_id)).spec.jitter is None
        assert not any("spread" in line for line in [*leave.notes, *await _next_lines(crowded, "leave")])
        asked = (await crowded.skills.register(_skill("train", schedule="30 8 * * 1-5", execution_plan=None,
                                                      spread=True))).skill
        assert asked is not None and asked.spread
        assert (await _described(client, asked.schedule_id)).spec.jitter == timedelta(minutes=5)


async def test_a_chat_proposal_says_the_spread_and_why(client: Client, settings: Settings, llm: ScriptedLLM) -> None:
    """What the owner confirms is what is stored: the proposal shows the spread, and the crowd that gave it."""
    async with _engine_starting(client, settings, 0, llm_base_url=llm.base_url, llm_api_key="sk-fake-test-key",
                                llm_model="chat") as assistant:
        llm.script("chat", [call("memory_store_skill", _work("inbox digest", schedule="0 9 * * *")),
                            say("Shall I?")])
        reply = await assistant.skills.chat("every morning at 9 a digest of my inbox", session_id="crowded")
        [proposal] = reply.proposals
        assert "when: cron '0 9 * * *' (UTC), each fire spread up to 5 min\n" in proposal.summary, proposal.summary
        assert re.search(r"note: each fire spread up to 5 min: its minute \(\d{4}-\d\d-\d\d 09:00 \w{3}\) is "
                         r"crowded, 1 skill this one included, more than the workers start in 5 min \(0 a second\)",
                         proposal.summary), proposal.summary


async def test_an_update_keeps_the_stored_spread_however_crowded_the_minute(client: Client, settings: Settings) -> None:
    async with _engine_starting(client, settings, 2 / 300) as crowded:
        lone = (await crowded.skills.register(_work("lone", schedule="0 7 * * *"))).skill
        assert lone is not None and not lone.spread
        for name in ("a", "b"):
            await crowded.skills.register(_skill(name, schedule="0 7 * * *"))
        spread = (await crowded.skills.register(_work("spread", schedule="0 7 * * *"))).skill
        assert spread is not None and spread.spread  # the fourth in 07:00
        updated = await crowded.skills.update("lone", {"instructions": "changed", "schedule": "0 7 * * *"})
        assert updated.skill is not None and not updated.skill.spread
        assert (await _described(client, lone.schedule_id)).spec.jitter is None
        assert (await crowded.skills.update("spread", {"instructions": "changed"})).skill.spread  # type: ignore[union-attr]
        assert (await _described(client, spread.schedule_id)).spec.jitter == timedelta(minutes=5)


async def test_a_spread_agent_cron_shows_its_spread_on_the_real_schedule(client: Client, settings: Settings) -> None:
    """Temporal applies the jitter; what `skills next` and `skills get` list are the schedule's own times, each
    said with its spread. Every minute crowded (0 fires a second), Agent-tier work is spread: a tenth of the
    gap at most, so an every-minute cron's fires keep their order."""
    async with _engine_starting(client, settings, 0) as engine:
        hourly = (await engine.skills.register(_work("hourly", schedule="0 * * * *"))).skill
        minutely = (await engine.skills.register(_work("minutely", schedule="* * * * *", enabled=False))).skill
        assert hourly is not None and minutely is not None and hourly.spread and minutely.spread
        assert (await _described(client, hourly.schedule_id)).spec.jitter == timedelta(minutes=5)
        assert (await _described(client, minutely.schedule_id)).spec.jitter == timedelta(seconds=6)

        stored = await engine.skills.get("hourly")
        assert forecast(stored, now=NOW, count=2).lines() == ["2027-03-01 10:00 Mon (spread up to 5 min)",
                                                              "2027-03-01 11:00 Mon (spread up to 5 min)"]
        lines = await _next_lines(engine, "hourly")
        assert len(lines) == 3 and all(re.fullmatch(r"  \d{4}-\d\d-\d\d \d\d:00 \w{3} \(spread up to 5 min\)", line)
                                       for line in lines), lines
        assert all(line.endswith("(spread up to 6 s)") for line in await _next_lines(engine, "minutely"))
        assert "jitter          up to 5 min (the default spread; `spread: false` for the exact time)" in \
            await _get_lines(engine, "hourly")


async def test_a_registration_answer_names_the_fire_the_calendar_gives(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "daily.json"
    path.write_text(json.dumps(_skill("daily", schedule="0 9 * * *")))
    done = await asyncio.to_thread(run_skills, "register", str(path), *options(engine))
    assert done.returncode == 0, done.stderr
    [fire] = [line for line in done.stdout.splitlines() if line.startswith("  next fire")]
    assert re.fullmatch(r"  next fire +\S+", fire), done.stdout


async def test_a_reminder_a_pinned_cron_a_one_shot_and_an_interval_are_not_spread(client: Client,
                                                                                    engine: Engine) -> None:
    # A reminder set for 8:30 that comes at 8:34 is a wrong reminder: a Direct plan keeps its exact time.
    reminder = (await engine.skills.register(_skill("leave", schedule="30 8 * * 1-5"))).skill
    pinned = (await engine.skills.register(_skill("pinned", schedule="0 9 * * *", spread=False,
                                                  execution_plan=None))).skill
    once = (await engine.skills.register(_skill("once", schedule=None, in_minutes=600))).skill
    every = (await engine.skills.register(_skill("every", schedule=None, interval_minutes=60))).skill
    assert reminder is not None and not reminder.spread
    for skill in (reminder, pinned, once, every):
        assert skill is not None
        assert (await _described(client, skill.schedule_id)).spec.jitter is None, skill.name
        assert not any("spread" in line for line in await _next_lines(engine, skill.name))
    assert "jitter          none" in await _get_lines(engine, "pinned")
    # Asked later, the spread comes; its own jitter_seconds is the owner's own.
    await engine.skills.update("pinned", {"spread": True})
    assert (await _described(client, pinned.schedule_id)).spec.jitter == timedelta(minutes=5)
    await engine.skills.update("pinned", {"jitter_seconds": 20})
    assert (await _described(client, pinned.schedule_id)).spec.jitter == timedelta(seconds=20)


async def test_a_skill_stored_before_the_spread_keeps_its_exact_time_when_changed(client: Client,
                                                                                    engine: Engine) -> None:
    """A row as the migration leaves it (spread false): an update, and the schedule it rewrites, add none."""
    skill = (await engine.skills.register(_skill("old", schedule="0 9 * * *"))).skill
    assert skill is not None
    _set_columns(engine.settings, skill.id, spread=False)
    await engine.skills.update("old", {"instructions": "changed", "schedule": "0 * * * *"})
    assert not (await engine.skills.get("old")).spread
    assert (await _described(client, skill.schedule_id)).spec.jitter is None
    assert not any("spread" in line for line in await _next_lines(engine, "old"))


async def test_a_bad_spread_is_refused_naming_the_field(engine: Engine) -> None:
    with pytest.raises(SkillValidationError) as refused:
        await engine.skills.register(_skill("bad", spread="maybe"))
    assert {e.field: e.message for e in refused.value.errors} == {"spread": "must be true or false, got 'maybe'"}
    with pytest.raises(SkillValidationError) as refused:
        await engine.skills.register(_skill("bad", jitter_seconds=-5))
    assert {e.field: e.message for e in refused.value.errors} == {"jitter_seconds": "must be between 0 and 3600 (got -5)"}


async def test_each_field_out_of_range_is_refused_naming_it(engine: Engine) -> None:
    with pytest.raises(SkillValidationError) as refused:
        await engine.skills.register(_skill(
            "bad", timeout_minutes=0, end_at="2020-01-01T00:00:00", max_runs=0, jitter_seconds=3601,
            overlap="never", catch_up="later"))
    problems = {e.field: e.message for e in refused.value.errors}
    assert problems["timeout_minutes"] == "must be between 0.05 and 10080 (got 0)"
    assert problems["max_runs"] == "must be between 1 and 1000000 (got 0)"
    assert problems["jitter_seconds"] == "must be between 0 and 3600 (got 3601)"
    assert problems["overlap"] == "must be one of skip, buffer_one, allow (got 'never')"
    assert problems["catch_up"] == "must be one of once, none, all (got 'later')"
    assert "is in the past (now is " in problems["end_at"]
    with pytest.raises(SkillValidationError, match="catch_up: 'all' runs the missed fires one after another"):
        await engine.skills.register(_skill("both", overlap="allow", catch_up="all"))
    assert await engine.skills.list() == []

    # The management tools give a model the same ranges.
    properties = SCHEMAS["memory_store_skill"]["properties"]
    for bound in (TIMEOUT_MINUTES, MAX_RUNS, JITTER_SECONDS):
        assert {k: v for k, v in properties[bound.name].items() if k != "description"} == bound.schema()
    assert properties["overlap"]["enum"] == ["skip", "buffer_one", "allow"]
    assert properties["catch_up"]["enum"] == ["once", "none", "all"]


@pytest.fixture
async def slow_engine(client: Client, settings: Settings, tmp_path: Path) -> AsyncIterator[Engine]:
    """A worker with the slow server's `slow_slow(seconds, message)`."""
    config = write_mcp_config(tmp_path / "mcp.json", {"slow": {
        "command": sys.executable, "args": [str(FAKES / "slow_server.py")],
        "env": {"FAKE_SLOW_LOG": str(tmp_path / "slow.log")}}})
    running = await Engine(settings.model_copy(update={"mcp_config": config}), client).start()
    yield running
    await running.stop()


async def test_a_run_past_its_timeout_ends_as_an_error_counted_and_notified(client: Client, slow_engine: Engine,
                                                                           tmp_path: Path) -> None:
    """A 10-minute tool call in a skill with a 3-second timeout: the run ends as an error, timed out, in
    seconds; counted by the backoff, notified, the workflow failed and the schedule free again."""
    engine = slow_engine
    skill = (await engine.skills.register(_skill(
        "hasty", timeout_minutes=0.05,
        execution_plan=[{"toolName": "slow_slow", "parameters": {"seconds": 600, "message": "hasty"}}]))).skill
    assert skill is not None and skill.schedule_id is not None
    await trigger_schedule(client, skill.schedule_id)

    async def closed() -> RunRecord | None:
        runs = [r for r in await engine.skills.runs("hasty") if r.status != "running"]
        return runs[0] if runs else None

    run = await eventually(closed, timeout=90)
    assert run.status == "error" and run.summary == "timed out: the run took longer than its timeout_minutes (0.05)"
    assert run.finished_at is not None and run.finished_at - run.started_at < timedelta(seconds=60)
    # The 3 seconds count from the run's start, the engine's own opening of the run (begin_run) included: under
    # load that alone can take them, and then the call is never made. A call that was made was in flight at the
    # timeout: recorded as failed, cancelled with the run (which ended in seconds, not in the call's 10 minutes).
    assert [(call.tool, call.ok) for call in run.tool_calls] in ([], [("slow_slow", False)])
    slow_log = tmp_path / "slow.log"
    if slow_log.exists() and "start hasty" in slow_log.read_text():  # it reached its server: it was made
        assert run.tool_calls

    stored = await engine.skills.get("hasty")
    assert stored.consecutive_failures == 1 and stored.backoff_until is not None
    # The notice follows the run's record (the run is recorded, then its consequences are seen to).
    notices = await eventually(lambda: [m["message"] for m in engine.outbox() if m["message"].startswith("❌")],
                               timeout=30)
    assert len(notices) == 1 and "timed out" in notices[0]
    with pytest.raises(WorkflowFailureError):
        await client.get_workflow_handle(run.workflow_id).result()
    assert (await client.get_workflow_handle(run.workflow_id).describe()).status == WorkflowExecutionStatus.FAILED
    assert not (await client.get_schedule_handle(skill.schedule_id).describe()).info.running_actions


async def test_a_schedule_ends_after_max_runs_and_the_skill_shows_ended(client: Client, engine: Engine) -> None:
    skill = (await engine.skills.register(_skill("twice", max_runs=2))).skill
    assert skill is not None and skill.schedule_id is not None
    for done in (1, 2):
        await trigger_schedule(client, skill.schedule_id)
        await eventually(lambda done=done: _finished(engine, "twice", done), timeout=60)

    ended = await eventually(lambda: _disabled(engine, "twice"), timeout=30)
    assert (ended.disabled_reason, ended.scheduled_runs) == (ENDED, 2)
    schedule = await eventually(lambda: _paused(client, skill.schedule_id), timeout=30)
    assert schedule.state.note == "disabled: ended" and schedule.state.remaining_actions == 0
    assert "state           ended (ran 2 of max_runs 2)" in await _get_lines(engine, "twice")

    # Resumed as it is, it would never fire: refused, saying what to do; more runs and a resume start it again.
    with pytest.raises(Exception, match="give a later end_at or a larger max_runs first"):
        await engine.skills.resume("twice")
    await engine.skills.update("twice", {"max_runs": 3})
    resumed = await engine.skills.resume("twice")
    assert resumed.enabled
    schedule = await _described(client, skill.schedule_id)
    assert not schedule.state.paused and schedule.state.remaining_actions == 1


END_AHEAD = timedelta(seconds=15)
"""How far ahead of the test's clock an ``end_at`` is given: the registration refuses an end already past when it
is normalized, which is a workflow and an activity later (at 3 s, a loaded machine's registration can take longer)."""


async def test_a_schedule_ends_at_end_at_and_maintenance_records_it(client: Client, engine: Engine) -> None:
    end = datetime.now(UTC).replace(microsecond=0) + END_AHEAD
    skill = (await engine.skills.register(_skill("brief", end_at=end.isoformat()))).skill
    assert skill is not None and skill.schedule_id is not None
    assert (await _described(client, skill.schedule_id)).spec.end_at == end

    await eventually(lambda: datetime.now(UTC) > end, timeout=END_AHEAD.total_seconds() + 30)
    # Shown ended at once, before any round has recorded it: the end is the skill's own field.
    lines = await _get_lines(engine, "brief")
    assert f"state           ended (end_at {end.isoformat()} has passed)" in lines

    report = await _maintenance(client, engine)
    assert report.ended == ["brief"]
    stored = await engine.skills.get("brief")
    assert (stored.enabled, stored.disabled_reason) == (False, ENDED)
    schedule = await _described(client, skill.schedule_id)
    assert schedule.state.paused and schedule.state.note == "disabled: ended"
    assert (await _maintenance(client, engine)).ended == []  # recorded once


async def _finished(engine: Engine, name: str, count: int) -> bool:
    return len([r for r in await engine.skills.runs(name) if r.status == "success"]) >= count


async def _disabled(engine: Engine, name: str) -> Any:
    skill = await engine.skills.get(name)
    return None if skill.enabled else skill


async def _paused(client: Client, schedule_id: str | None) -> Any:
    schedule = await _described(client, schedule_id)
    return schedule if schedule.state.paused else None


@pytest.mark.parametrize(("overlap", "runs"), [("skip", 1), ("buffer_one", 2)])
async def test_overlap_decides_a_fire_that_comes_while_the_previous_run_is_going(
        client: Client, settings: Settings, tmp_path: Path, overlap: str, runs: int) -> None:
    # The first run's call is held (its message stored, its answer not given) until the second fire has been
    # decided: a run "going" for as long as the test needs, where a 4-second call had to outlast the test's own
    # describe, wait and trigger on a loaded machine. The call's timeout is far from the hold's few seconds.
    held, hold = held_outbox(settings.model_copy(update={"tool_call_timeout": timedelta(minutes=10)}), tmp_path)
    engine = await Engine(held, client).start()
    try:
        skill = (await engine.skills.register(_skill("held", overlap=overlap))).skill
        assert skill is not None and skill.schedule_id is not None
        handle = client.get_schedule_handle(skill.schedule_id)
        await handle.trigger()
        await eventually(engine.outbox, timeout=60)  # the first run's call is made, and held
        first = (await handle.describe()).info
        assert first.running_actions
        # A second fire while the first run is going (in a later second: a fire's workflow id carries its second).
        last = max(action.scheduled_at for action in first.recent_actions)
        await eventually(lambda: datetime.now(UTC).replace(microsecond=0) > last, timeout=5, interval=0.05)
        await handle.trigger()
        await eventually(lambda: _overlap_decided(handle, overlap), timeout=30)  # skipped, or buffered
        release(hold)

        await eventually(lambda: _finished(engine, "held", runs), timeout=60)
        await eventually(lambda: _idle(client, skill.schedule_id), timeout=30)
        info = (await handle.describe()).info
        assert len([r for r in await engine.skills.runs("held") if r.status == "success"]) == runs
        assert info.num_actions_skipped_overlap == (1 if overlap == "skip" else 0)
    finally:
        if hold.exists():
            release(hold)
        await engine.stop()


async def _overlap_decided(handle: Any, overlap: str) -> bool:
    described = await handle.describe()
    if overlap == "skip":
        return described.info.num_actions_skipped_overlap == 1
    return described.raw_description.info.buffer_size == 1


async def _idle(client: Client, schedule_id: str | None) -> bool:
    assert schedule_id is not None
    info = (await client.get_schedule_handle(schedule_id).describe()).info
    return not info.running_actions


async def test_an_agent_run_whose_llm_turn_outlasts_the_timeout_ends_as_an_error(
        client: Client, settings: Settings, llm: ScriptedLLM) -> None:
    """The timer races the Agent loop too: the LLM turn in flight is cancelled and the run is timed out."""
    release = threading.Event()
    llm.script("default", [hang_until(release, say("too late"), timeout=60)])
    engine = await Engine(settings.model_copy(update={"llm_base_url": llm.base_url, "llm_api_key": "sk-fake",
                                                      "llm_model": "default"}), client).start()
    try:
        await engine.skills.register({"name": "ponder", "instructions": "Think, then send a note.",
                                      "required_tools": ["outbox_send_message"], "timeout_minutes": 0.05})
        run = await engine.skills.run("ponder")
        assert isinstance(run, RunRecord)
        assert (run.status, run.tier) == ("error", "agent")
        assert run.summary == "timed out: the run took longer than its timeout_minutes (0.05)"
        assert run.finished_at is not None and run.finished_at - run.started_at < timedelta(seconds=50)
        assert (await engine.skills.get("ponder")).consecutive_failures == 1
    finally:
        release.set()
        await engine.stop()
