"""Classic cron on the days the clock changes, decided against Vixie cron and checked on the real server:
docs/triggers.md, "DST and holidays", is the table of what these tests show.

Vixie cron (cron.c, ``find_jobs`` and the "time has changed" cases) runs a fixed-time job whose time the
spring-forward gap swallows right after the change, runs a fixed-time job once in a repeated hour, and
runs wildcard jobs (minute or hour ``*``) by the clock as it is, so not in a missing hour. The year is
the one after the machine's, found from the zone's rules: the tests hold on any day they run.
"""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from temporalio.client import Client, Schedule, ScheduleActionStartWorkflow, ScheduleSpec, ScheduleState

from activities.runs import RunActivities
from adapters.schedule_spec import offset_changes, schedule_spec
from adapters.store import Store
from skills.spec.models import Skill, SkillSpec, TriggerConfig
from skills.spec.normalize import NormalizeContext, normalize
from skills.when.calendar import upcoming
from tests.activities.test_runs import fire, runs, store, table  # noqa: F401  (fixtures)

YEAR = datetime.now(UTC).year + 1
NEW_YORK, BERLIN = ZoneInfo("America/New_York"), ZoneInfo("Europe/Berlin")


def changes(zone: ZoneInfo) -> tuple[datetime, datetime]:
    """The zone's spring-forward and fall-back instants in YEAR (UTC)."""
    spring, fall = [c for c in offset_changes(zone.key, YEAR) if c.year == YEAR][:2]
    return spring, fall


def local(zone: ZoneInfo, at: datetime) -> str:
    return at.astimezone(zone).strftime("%m-%d %H:%M %Z")


def predicted(expr: str, zone: ZoneInfo, now: datetime, count: int) -> list[datetime]:
    anchor = now - timedelta(days=30)
    skill = Skill(id=1, agent_id="me", name="dst", trigger_type="cron", instructions="x", created_at=anchor,
                  updated_at=anchor, trigger_config=TriggerConfig(schedule=expr, timezone=zone.key))
    return [fire.at.astimezone(UTC) for fire in upcoming(skill, anchor=anchor, now=now, count=count)]


async def server_times(client: Client, spec: ScheduleSpec, now: datetime) -> list[datetime]:
    spec = dataclasses.replace(spec, start_at=max(now + timedelta(seconds=1), spec.start_at or now))
    action = ScheduleActionStartWorkflow("NoWorkerNeeded", id="never-started", task_queue="no-worker")
    handle = await client.create_schedule(f"dst-{uuid.uuid4().hex[:12]}",
                                          Schedule(action=action, spec=spec, state=ScheduleState(paused=True)))
    try:
        return [t.astimezone(UTC) for t in (await handle.describe()).info.next_action_times]
    finally:
        await handle.delete()


async def cron_times(client: Client, expr: str, zone: ZoneInfo, now: datetime) -> list[datetime]:
    spec = schedule_spec(TriggerConfig(schedule=expr, timezone=zone.key), anchor=now - timedelta(days=30))
    return await server_times(client, spec, now)


async def test_a_daily_job_in_the_missing_hour_runs_right_after_the_change(client: Client) -> None:
    # Vixie: a fixed-time job whose time the gap swallows runs at once after the change. Here: at the
    # first minute after the gap (03:00), then at 02:30 again from the next day.
    for zone in (NEW_YORK, BERLIN):
        spring, _ = changes(zone)
        now = spring - timedelta(hours=12)
        fired = await cron_times(client, "30 2 * * *", zone, now)
        assert [local(zone, t) for t in fired[:2]] == [
            local(zone, spring), local(zone, spring + timedelta(hours=23, minutes=30))]
        assert fired[0].astimezone(zone).strftime("%H:%M") == "03:00"
        assert predicted("30 2 * * *", zone, now, 10) == fired


async def test_a_wildcard_job_has_no_fires_in_the_missing_hour(client: Client) -> None:
    # Vixie: wildcard jobs run by the clock as it is: the hour that does not exist has none.
    spring, _ = changes(BERLIN)
    now = spring - timedelta(hours=1, minutes=1)  # 00:59 CET
    fired = await cron_times(client, "*/30 * * * *", BERLIN, now)
    assert [local(BERLIN, t) for t in fired[:4]] == [
        f"{spring:%m-%d} 01:00 CET", f"{spring:%m-%d} 01:30 CET", f"{spring:%m-%d} 03:00 CEST",
        f"{spring:%m-%d} 03:30 CEST"]
    assert predicted("*/30 * * * *", BERLIN, now, 10) == fired


async def test_a_daily_job_in_the_repeated_hour_west_of_utc_runs_at_both_occurrences(client: Client) -> None:
    # Here the engine is not Vixie's: croniter fires a named wall time at both of its occurrences, and the
    # server (west of UTC) does the same, as the calendar predicts.
    _, fall = changes(NEW_YORK)
    now = fall - timedelta(hours=3)
    fired = await cron_times(client, "30 1 * * *", NEW_YORK, now)
    assert [local(NEW_YORK, t) for t in fired[:3]] == [
        f"{fall:%m-%d} 01:30 EDT", f"{fall:%m-%d} 01:30 EST", f"{fall + timedelta(days=1):%m-%d} 01:30 EST"]
    assert predicted("30 1 * * *", NEW_YORK, now, 10) == fired


async def test_a_daily_job_in_the_repeated_hour_east_of_utc_runs_once(client: Client) -> None:
    # East of UTC the server reaches one occurrence only (docs/triggers.md, "Clock changes"): the second.
    # The calendar, croniter's, lists both: the one hour a year the prediction is wrong, by a fire too many.
    _, fall = changes(BERLIN)
    now = fall - timedelta(hours=3)
    fired = await cron_times(client, "30 2 * * *", BERLIN, now)
    assert [local(BERLIN, t) for t in fired[:2]] == [
        f"{fall:%m-%d} 02:30 CET", f"{fall + timedelta(days=1):%m-%d} 02:30 CET"]
    calendar = predicted("30 2 * * *", BERLIN, now, 11)
    assert [local(BERLIN, t) for t in calendar[:2]] == [f"{fall:%m-%d} 02:30 CEST", f"{fall:%m-%d} 02:30 CET"]
    assert calendar[1:] == fired


async def test_a_one_shot_at_a_local_time_that_does_not_exist_or_exists_twice(client: Client) -> None:
    # No Vixie rule (cron has no one-shot); at(1) reads a local time as mktime does: a time in the gap is
    # moved on by the gap's length, a repeated one is its first occurrence.
    spring, fall = changes(NEW_YORK)
    ctx = NormalizeContext(now=spring - timedelta(days=10), default_timezone=NEW_YORK.key, default_agent_id="me")
    gap = normalize({"name": "x", "instructions": "x", "trigger_config": {"at": f"{spring:%Y-%m-%d}T02:30:00"}}, ctx)
    twice = normalize({"name": "x", "instructions": "x", "trigger_config": {"at": f"{fall:%Y-%m-%d}T01:30:00"}}, ctx)
    for spec, expected in ((gap.spec, f"{spring:%m-%d} 03:30 EDT"), (twice.spec, f"{fall:%m-%d} 01:30 EDT")):
        assert spec.trigger_config is not None and spec.trigger_config.at is not None
        assert local(NEW_YORK, spec.trigger_config.at) == expected
        fired = await server_times(client, schedule_spec(spec.trigger_config, anchor=ctx.now), ctx.now)
        assert fired == [spec.trigger_config.at]


async def test_in_minutes_across_a_change_counts_real_minutes(client: Client) -> None:
    _, fall = changes(NEW_YORK)
    now = fall - timedelta(minutes=10)  # 01:50 EDT
    ctx = NormalizeContext(now=now, default_timezone=NEW_YORK.key, default_agent_id="me")
    spec = normalize({"name": "x", "instructions": "x", "trigger_config": {"in_minutes": 30}}, ctx).spec
    assert spec.trigger_config is not None and spec.trigger_config.at == now + timedelta(minutes=30)
    assert local(NEW_YORK, spec.trigger_config.at) == f"{fall:%m-%d} 01:20 EST"  # the clock says 30 minutes back
    assert await server_times(client, schedule_spec(spec.trigger_config, anchor=now), now) == [now + timedelta(minutes=30)]


def test_catch_up_after_downtime_across_a_change_counts_the_calendars_fires(
        runs: RunActivities, store: Store) -> None:  # noqa: F811
    # Down from the day before spring-forward to the day after: the fire missed is the calendar's one of
    # the change day (03:00, right after the gap), once; no fire at a wall time that did not exist.
    spring, _ = changes(NEW_YORK)
    spec = SkillSpec(agent_id="a", name="nightly", trigger_type="cron", instructions="x",
                     trigger_config=TriggerConfig(schedule="30 2 * * *", timezone=NEW_YORK.key))
    skill_id = store.skills.create_skill(spec, trigger_as_written=None, disabled_reason=None,
                                         now=spring - timedelta(days=20)).id
    before = spring - timedelta(days=1) + timedelta(minutes=30)  # 02:30 EST, the day before
    after = spring + timedelta(days=1) - timedelta(minutes=30)  # 02:30 EDT, the day after
    fire(runs, skill_id, 1, before, before)
    fire(runs, skill_id, 2, after, after + timedelta(minutes=5))  # late: the engine was down
    assert [(local(NEW_YORK, at), status) for at, status, _ in table(store, skill_id) if at] == [
        (local(NEW_YORK, before), "success"), (f"{spring:%m-%d} 03:00 EDT", "missed"),
        (local(NEW_YORK, after), "success")]
