"""The specs of skills.when.triggers on the real Temporal dev server: it fires when croniter says.

Each check creates a paused schedule (no worker needed: nothing runs) and reads the
server's own ``next_action_times``. ``spec.start_at`` moves the window to the clock changes
of 2027 in New York and Berlin. docs/triggers.md records what these tests found.
"""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from temporalio.client import Client, Schedule, ScheduleActionStartWorkflow, ScheduleSpec, ScheduleState
from temporalio.testing import WorkflowEnvironment

from adapters.schedule_spec import schedule_spec
from skills.spec.models import TriggerConfig
from skills.when.triggers import MACROS, cron_next_times, trigger_next_times
from tests.adapters.test_schedule_spec import TemporalSimulator, is_repeated_wall_time, utc, wall_clock

# The instants (UTC) the clocks change in 2027.
NEW_YORK_SPRING = datetime(2027, 3, 14, 7, 0, tzinfo=UTC)  # 02:00 EST -> 03:00 EDT
NEW_YORK_FALL = datetime(2027, 11, 7, 6, 0, tzinfo=UTC)  # 02:00 EDT -> 01:00 EST
BERLIN_SPRING = datetime(2027, 3, 28, 1, 0, tzinfo=UTC)  # 02:00 CET -> 03:00 CEST
BERLIN_FALL = datetime(2027, 10, 31, 1, 0, tzinfo=UTC)  # 03:00 CEST -> 02:00 CET

DST_EXPRESSIONS = [
    "30 2 * * *",
    "30 1 * * *",
    "0 2 * * *",
    "0 3 * * *",
    "59 1 * * *",
    "0 1-3 * * *",
    "0,30 1,2 * * *",
    "*/20 2 * * *",
    "0 * * * *",
    "*/15 * * * *",
]
CHANGES = [
    ("America/New_York", NEW_YORK_SPRING),
    ("America/New_York", NEW_YORK_FALL),
    ("Europe/Berlin", BERLIN_SPRING),
    ("Europe/Berlin", BERLIN_FALL),
]


@pytest.fixture
def server(env: WorkflowEnvironment) -> Client:
    """The session's dev server (tests/conftest.py): a schedule here is paused, needs no worker and is deleted by
    its own check, so the server every other test of this process uses answers alike, without a second one."""
    return env.client


async def next_fires(
    client: Client, spec: ScheduleSpec, *, start_at: datetime | None = None
) -> list[datetime]:
    """The server's next action times for the spec, from a paused throwaway schedule."""
    if start_at is not None:
        spec = dataclasses.replace(spec, start_at=start_at)
    action = ScheduleActionStartWorkflow("NoWorkerNeeded", id="never-started", task_queue="no-worker")
    handle = await client.create_schedule(
        f"spec-{uuid.uuid4().hex[:12]}", Schedule(action=action, spec=spec, state=ScheduleState(paused=True))
    )
    try:
        return (await handle.describe()).info.next_action_times
    finally:
        await handle.delete()


def cron_spec(expr: str, tz: str) -> ScheduleSpec:
    return schedule_spec(TriggerConfig(schedule=expr, timezone=tz), anchor=datetime(2026, 1, 1, tzinfo=UTC))


def raw_spec(spec: ScheduleSpec) -> ScheduleSpec:
    """Only the cron's own calendars: what Temporal does around clock changes left alone."""
    return ScheduleSpec(
        calendars=[c for c in spec.calendars if not c.year], time_zone_name=spec.time_zone_name
    )


FROM_NOW = [
    *(
        (expr, "UTC")
        for expr in [
            "0 9 1,15 * mon",
            "*/15 * 1 * 1-5",
            "0 0 */2 * 0",
            "0 12 * * 7",
            "0 0 29 2 *",
            "5-55/10 * * * *",
            "0 22-2 * * sat-sun",
            "0 12 13 * fri",
            "30 4 1-7 * mon",
            "0 0 31 * *",
            "* * * * *",
            *MACROS,
        ]
    ),
    ("30 2 * * *", "America/New_York"),
    ("0 9 * * mon-fri", "Europe/Berlin"),
    ("*/15 * * * *", "Australia/Sydney"),
    ("0 0 1 jan,jul *", "Asia/Kolkata"),
]


@pytest.mark.parametrize(("expr", "tz"), FROM_NOW)
async def test_next_fires_from_now_are_croniter_times(server: Client, expr: str, tz: str) -> None:
    before = datetime.now(UTC)
    fired = await next_fires(server, cron_spec(expr, tz))
    expected = utc(cron_next_times(expr, tz, before, len(fired) + 1))
    assert len(fired) == 10
    if any(is_repeated_wall_time(t, ZoneInfo(tz)) for t in expected) \
            and before.astimezone(ZoneInfo(tz)).utcoffset() > timedelta():
        # Run within hours of a fall-back east of UTC (docs/triggers.md, "Clock changes"): in the repeated
        # hour the server fires only at croniter's times, not at each; what holds on any day.
        assert set(fired) <= set(utc(cron_next_times(expr, tz, before, 20)))
        return
    # A fire may fall between our clock reading and the server's.
    assert fired in (expected[:-1], expected[1:])


@pytest.mark.parametrize("expr", DST_EXPRESSIONS)
@pytest.mark.parametrize(
    ("tz", "change"), CHANGES, ids=["ny-spring", "ny-fall", "berlin-spring", "berlin-fall"]
)
async def test_around_clock_changes(server: Client, tz: str, change: datetime, expr: str) -> None:
    start = change - timedelta(minutes=90)
    fired = await next_fires(server, cron_spec(expr, tz), start_at=start)
    zone = ZoneInfo(tz)
    expected = {t for t in utc(cron_next_times(expr, tz, start - timedelta(seconds=1), 40)) if t <= fired[-1]}
    if change not in (BERLIN_FALL,):
        # West of UTC, and at every spring-forward change, exactly croniter's times.
        assert fired == sorted(expected)
        return
    # East of UTC in the repeated hour: only wall times croniter names there, maybe not at both occurrences.
    repeated = {wall_clock(t, zone) for t in expected if is_repeated_wall_time(t, zone)}
    assert all(t in expected or wall_clock(t, zone) in repeated for t in fired)
    assert all(is_repeated_wall_time(t, zone) for t in expected - set(fired))


@pytest.mark.parametrize("expr", DST_EXPRESSIONS)
@pytest.mark.parametrize(
    ("tz", "change"), CHANGES, ids=["ny-spring", "ny-fall", "berlin-spring", "berlin-fall"]
)
async def test_the_simulator_agrees_with_the_server(
    server: Client, tz: str, change: datetime, expr: str
) -> None:
    # The property tests in tests/adapters/test_schedule_spec.py trust the simulator; this is why.
    start = change - timedelta(minutes=90)
    for spec in (cron_spec(expr, tz), raw_spec(cron_spec(expr, tz))):
        fired = await next_fires(server, spec, start_at=start)
        assert (
            TemporalSimulator(dataclasses.replace(spec, start_at=start)).next_times(
                start - timedelta(days=1), len(fired)
            )
            == fired
        )


@pytest.mark.parametrize(
    ("tz", "expr", "day", "raw_local", "mapped_local"),
    [
        # Temporal alone skips a wall time the spring-forward gap swallows; croniter fires at the gap's end.
        ("America/New_York", "30 2 * * *", (2027, 3, 14), [], ["03:00-0400"]),
        ("Europe/Berlin", "30 2 * * *", (2027, 3, 28), [], ["03:00+0200"]),
        # East of UTC Temporal misplaces fires around the repeated hour ...
        ("Europe/Berlin", "30 1 * * *", (2027, 10, 31), ["01:30+0200", "02:30+0200"], ["01:30+0200"]),
        # (croniter fires 02:30 CEST and 02:30 CET; Temporal reaches only the second occurrence)
        ("Europe/Berlin", "30 2 * * *", (2027, 10, 31), ["02:30+0100"], ["02:30+0100"]),
        ("Europe/Berlin", "*/20 2 * * *", (2027, 10, 31), ["02:00+0100", "03:20+0100"], ["02:00+0100"]),
        (
            "Europe/Berlin",
            "0 * * * *",
            (2027, 10, 31),
            ["00:00+0200", "01:00+0200", "02:00+0200", "03:00+0100"],
            ["00:00+0200", "01:00+0200", "02:00+0200", "03:00+0100"],
        ),
        # ... while west of UTC it fires both occurrences of a repeated wall time, as croniter does.
        (
            "America/New_York",
            "30 1 * * *",
            (2027, 11, 7),
            ["01:30-0400", "01:30-0500"],
            ["01:30-0400", "01:30-0500"],
        ),
    ],
)
async def test_what_temporal_does_alone_and_with_the_mapping(
    server: Client,
    tz: str,
    expr: str,
    day: tuple[int, int, int],
    raw_local: list[str],
    mapped_local: list[str],
) -> None:
    """Server 1.32's own DST arithmetic, as found; if this fails after an upgrade, revisit docs/triggers.md."""
    zone = ZoneInfo(tz)
    midnight = datetime(*day, tzinfo=zone)

    def on_day(times: list[datetime]) -> list[str]:
        local = [t.astimezone(zone) for t in times]
        return [t.strftime("%H:%M%z") for t in local if midnight <= t < midnight + timedelta(hours=4)]

    spec = cron_spec(expr, tz)
    assert on_day(await next_fires(server, raw_spec(spec), start_at=midnight)) == raw_local
    assert on_day(await next_fires(server, spec, start_at=midnight)) == mapped_local


async def test_an_interval_fires_at_its_anchor_plus_whole_periods(server: Client) -> None:
    anchor = datetime.now(UTC) - timedelta(minutes=7, seconds=13, microseconds=250_000)
    trigger = TriggerConfig(interval_minutes=5)
    before = datetime.now(UTC)
    fired = await next_fires(server, schedule_spec(trigger, anchor=anchor))
    expected = trigger_next_times(trigger, anchor=anchor, after=before, count=len(fired) + 1)
    assert fired in (expected[:-1], expected[1:])
    assert all((t - anchor.replace(microsecond=0)) % timedelta(minutes=5) == timedelta() for t in fired)


async def test_an_interval_starts_one_period_after_its_anchor(server: Client) -> None:
    anchor = datetime.now(UTC) + timedelta(days=2, seconds=17)
    trigger = TriggerConfig(interval_minutes=90)
    fired = await next_fires(server, schedule_spec(trigger, anchor=anchor))
    assert fired[:3] == trigger_next_times(trigger, anchor=anchor, after=anchor, count=3)
    assert fired[0] == anchor.replace(microsecond=0) + timedelta(minutes=90)


async def test_at_fires_once_at_that_second(server: Client) -> None:
    at = (datetime.now(UTC) + timedelta(days=1, seconds=123.4)).astimezone(ZoneInfo("Asia/Kolkata"))
    fired = await next_fires(server, schedule_spec(TriggerConfig(at=at), anchor=datetime.now(UTC)))
    assert fired == [at.astimezone(UTC).replace(microsecond=0)]
