"""The calendar (skills.when.calendar.fire_times) against the real Temporal dev server, for a generated matrix of
triggers and "now" values: the server's own next action times must be the fires the engine predicts.

Each case is a skill's whole schedule as the engine builds it (``build_schedule``: the trigger's spec, the
skip list written at "now", ``end_at``, the remaining actions of ``max_runs``), created paused (nothing
runs) with ``spec.start_at`` one second after "now": the server counts from there, whatever its own clock
says, as the probe in the module's first test shows. The year is the one after the machine's, so the
matrix is the same kind of matrix on any day the suite runs, and the server's clock is never ahead of it.

"Now" values: each day of a week, the minutes around a fire, the eves of holidays (of every country the
``holidays`` package knows), month ends, a 29 February, New Year, and both clock changes in six zones:
New York, Berlin, Sydney and Santiago (southern, Santiago's at midnight), Adelaide (DST on a :30 offset)
and Lord Howe (a 30-minute change).
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import holidays
from temporalio.api.workflowservice.v1 import (
    ListScheduleMatchingTimesRequest,
    ListScheduleMatchingTimesResponse,
)
from temporalio.client import Client, Schedule
from temporalio.service import RPCError, RPCStatusCode

from adapters.schedule_spec import offset_changes
from adapters.schedules import build_schedule, skip_list
from config.settings import Settings
from skills.spec.models import Skill, TriggerConfig
from skills.when.calendar import skip_window, spec_fires

YEAR = datetime.now(UTC).year + 1
"""The matrix's year: ahead of the server's clock on any day the suite runs."""
LEAP = next(y for y in range(YEAR, YEAR + 4) if y % 4 == 0 and (y % 100 or y % 400 == 0))
ANCHOR = datetime(YEAR - 1, 12, 1, 0, 0, 30, tzinfo=UTC)
"""When every case's skill was created: before every "now" (an interval counts from it)."""
LEAP_DAY = "0 0 29 2 *"
LISTED = 10
"""Next action times the server lists."""
AT_ONCE = 4
"""Schedules created at once: each is a workflow on the server, and the machine has two cores."""
ASKS = 5
"""Times one "now" is asked of the server: it answers by querying the schedule's workflow, and under load
that query can be cancelled (status CANCELLED or DEADLINE_EXCEEDED) before the workflow's task is picked up."""

DST_ZONES = ("America/New_York", "Europe/Berlin", "Australia/Sydney", "America/Santiago", "Australia/Adelaide",
             "Australia/Lord_Howe")


def skill(trigger: TriggerConfig, *, holidays: str | None = None, business: bool = False,
          **fields: object) -> Skill:
    return Skill(id=1, agent_id="me", name="matrix", trigger_type="cron", trigger_config=trigger, instructions="x",
                 created_at=ANCHOR, updated_at=ANCHOR, skip_holidays=holidays, business_days_only=business,
                 schedule_id=f"matrix-{uuid.uuid4().hex[:12]}", **fields)  # type: ignore[arg-type]


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def week() -> list[datetime]:
    """Monday to Sunday of a week in May at 15:00 UTC (after the day's fires in America, before Asia's next)."""
    monday = date(YEAR, 5, 10) - timedelta(days=date(YEAR, 5, 10).weekday())
    return [datetime.combine(monday + timedelta(days=d), datetime.min.time(), UTC) + timedelta(hours=15)
            for d in range(7)]


def around_a_fire() -> list[datetime]:
    """A minute before, at, and a minute after a 09:00 New York fire (a Wednesday)."""
    fire = datetime(YEAR, 6, 16, 9, 0, tzinfo=ZoneInfo("America/New_York")).astimezone(UTC)
    fire -= timedelta(days=(fire.weekday() - 2) % 7)
    return [fire - timedelta(minutes=1), fire, fire + timedelta(minutes=1)]


def special_days() -> list[datetime]:
    """Holiday eves (US), month ends, a 29 February and New Year."""
    us = holidays.country_holidays("US", years=YEAR)
    thanksgiving = next(day for day, name in us.items() if name == "Thanksgiving Day")
    return [
        datetime.combine(thanksgiving - timedelta(days=1), datetime.min.time(), UTC) + timedelta(hours=15),
        utc(YEAR, 12, 24, 15), utc(YEAR, 7, 3, 15),
        utc(YEAR, 1, 31, 23, 30), utc(YEAR, 4, 30, 23, 30), utc(YEAR, 9, 30, 12), utc(YEAR, 2, 28, 23, 59),
        utc(LEAP, 2, 28, 23, 59), utc(LEAP, 2, 29, 12), utc(LEAP, 2, 29, 23, 59),
        utc(YEAR, 12, 31, 23), utc(YEAR + 1, 1, 1, 0, 30), utc(YEAR, 12, 31, 4, 59),
    ]


def clock_changes(zone: str) -> list[datetime]:
    """A few hours before, and just before, each of the zone's two changes in the year."""
    changes = [c for c in offset_changes(zone, YEAR) if c.year == YEAR][:2]
    assert len(changes) == 2, zone
    return [c - offset for c in changes for offset in (timedelta(hours=5), timedelta(minutes=45))]


GENERAL = [
    skill(TriggerConfig(schedule="0 9 * * *", timezone="America/New_York"), holidays="US", business=True),
    skill(TriggerConfig(schedule="30 8 * * mon-fri", timezone="Europe/Berlin"), holidays="DE-BY"),
    skill(TriggerConfig(schedule="0 */6 * * *", timezone="Asia/Kolkata"), holidays="IN", business=True),
    skill(TriggerConfig(schedule="15 7 1,15 * sun", timezone="Australia/Sydney"), holidays="AU-NSW"),
    skill(TriggerConfig(schedule="59 23 28-31 * *", timezone="Pacific/Auckland"), holidays="NZ", business=True),
    skill(TriggerConfig(interval_minutes=300, timezone="Australia/Adelaide"), holidays="AU-SA", business=True),
    skill(TriggerConfig(interval_minutes=90, timezone="UTC")),
    skill(TriggerConfig(interval_minutes=1440, timezone="Asia/Dubai"), holidays="AE", business=True),
    skill(TriggerConfig(at=utc(YEAR, 7, 5, 13, 7), timezone="UTC")),
    skill(TriggerConfig(schedule="0 10 * * *", timezone="Europe/London"), business=True,
          end_at=utc(YEAR, 7, 8, 9)),
    skill(TriggerConfig(schedule="0 12 * * *", timezone="America/Chicago"), holidays="US", max_runs=3),
    skill(TriggerConfig(schedule="0 12 * * *", timezone="America/Chicago"), max_runs=5, scheduled_runs=3),
]
COUNTRIES = ("US", "CA", "MX", "BR", "AR", "CL", "GB", "DE-BY", "FR", "ES", "IT", "SE", "RU", "TR", "EG", "SA",
             "IL", "IR", "AE", "IN", "NP", "CN", "JP", "KR", "ID", "PH", "AU-VIC", "NZ", "ZA", "NG", "KE")
"""A spread of the ~500 countries the holidays package knows: every continent, the weekends that are not
Saturday and Sunday (EG, SA, IL: Friday and Saturday; IR: Friday), the working weekends of CN and RU, and
subdivisions. (All 491 countries with a holiday after 10 January agreed with the server, two eves each,
in a one-off run over them: 204 s, too long for every suite run.)"""
DST_CRONS = ("30 2 * * *", "30 1 * * *", "0 0 * * *", "*/30 * * * *", "0 9 * * *")


SPAN = timedelta(days=45)
"""How far from "now" the server lists a case's matching times: ten fires of every case but the yearly ones."""


@dataclasses.dataclass
class Case:
    """One skill's schedule, asked about at each of ``nows``."""

    skill: Skill
    nows: list[datetime]
    span: timedelta = SPAN


def matrix() -> list[Case]:
    general = [*week(), *around_a_fire(), *special_days()]
    cases = [Case(case, general) for case in GENERAL
             if case.max_runs is None and case.trigger_config and case.trigger_config.schedule != LEAP_DAY]
    cases.append(Case(skill(TriggerConfig(schedule=LEAP_DAY, timezone="UTC")), special_days(), timedelta(days=1500)))
    for zone in DST_ZONES:
        for expr in DST_CRONS:
            cases.append(Case(skill(TriggerConfig(schedule=expr, timezone=zone), business=expr == "0 9 * * *"),
                              clock_changes(zone)))
    for country in COUNTRIES:
        code, _, subdivision = country.partition("-")
        found = holidays.country_holidays(code, subdiv=subdivision or None, years=YEAR)
        later = sorted(day for day in found if day >= date(YEAR, 1, 10))[:2]
        workdays = sorted(getattr(found, "weekend_workdays", ()) or ())[:1]
        eves = [datetime.combine(day - timedelta(days=1), datetime.min.time(), UTC) + timedelta(hours=12)
                for day in [*later, *workdays]]
        cases.append(Case(skill(TriggerConfig(schedule="0 9 * * *", timezone="UTC"), holidays=country,
                                business=True), eves))
    return cases


def predicted(case: Skill, now: datetime, until: datetime | None, count: int = LISTED) -> list[datetime]:
    fires: list[datetime] = []
    for at, reason in spec_fires(case, anchor=case.created_at, now=now):
        if len(fires) == count or (until is not None and at >= until):
            break
        if reason is None:
            fires.append(at.astimezone(UTC))
    return fires


def paused_schedule(case: Skill, settings: Settings, now: datetime) -> Schedule:
    """The schedule the engine builds for ``case`` at ``now`` (its skip list written then), paused."""
    days, _ = skip_list(case, now)
    schedule = build_schedule(case, settings, days)
    schedule.state = dataclasses.replace(schedule.state, paused=True)
    return schedule


async def asked(client: Client, request: ListScheduleMatchingTimesRequest) -> ListScheduleMatchingTimesResponse:
    """The server's answer to ``request``, asked again (up to ``ASKS`` times) when a loaded server cancelled
    its query into the schedule's workflow; any other error, or the last one, is raised."""
    for attempt in range(1, ASKS + 1):
        try:
            return await client.workflow_service.list_schedule_matching_times(request, timeout=timedelta(seconds=30))
        except RPCError as e:
            if attempt == ASKS or e.status not in (RPCStatusCode.CANCELLED, RPCStatusCode.DEADLINE_EXCEEDED):
                raise
    raise AssertionError("unreachable")


async def matching_times(client: Client, settings: Settings, case: Case) -> list[list[datetime]]:
    """For each "now" of ``case``, the server's first ``LISTED`` matching times of its spec after it, from
    one schedule whose skip list is written at the first "now"."""
    handle = await client.create_schedule(f"{case.skill.schedule_id}", paused_schedule(case.skill, settings,
                                                                                      min(case.nows)))
    try:
        found = []
        for now in case.nows:
            request = ListScheduleMatchingTimesRequest(namespace=client.namespace, schedule_id=handle.id)
            request.start_time.FromDatetime(now + timedelta(seconds=1))  # inclusive, to the second; "now" is not
            request.end_time.FromDatetime(now + case.span)
            answer = await asked(client, request)
            found.append([t.ToDatetime(UTC) for t in answer.start_time][:LISTED])
        return found
    finally:
        await handle.delete()


async def server_fires(client: Client, settings: Settings, case: Skill, now: datetime) -> list[datetime]:
    """The server's next action times for ``case`` built at ``now``, counted from ``now`` (``start_at``): what
    ``skills get`` shows, remaining actions included."""
    schedule = paused_schedule(case, settings, now)
    start = now + timedelta(seconds=1)  # the server's start_at is inclusive, to the second; "now" is not
    if schedule.spec.start_at is None or schedule.spec.start_at < start:
        schedule.spec = dataclasses.replace(schedule.spec, start_at=start)
    handle = await client.create_schedule(f"{case.schedule_id}-{uuid.uuid4().hex[:6]}", schedule)
    try:
        return [t.astimezone(UTC) for t in (await handle.describe()).info.next_action_times]
    finally:
        await handle.delete()


def in_repeated_hour(moment: datetime, zone: ZoneInfo) -> bool:
    local = moment.astimezone(zone)
    return local.replace(fold=1 - local.fold).utcoffset() != local.utcoffset()


def disagreement(case: Skill, now: datetime, server: list[datetime], *, written: datetime | None = None,
                 span: timedelta | None = None) -> str | None:
    """None if the server's times are the predicted ones (up to where the skip list written at ``written``
    reaches, and within ``span`` of ``now``), else both, to read."""
    assert case.trigger_config is not None
    zone = ZoneInfo(case.trigger_config.timezone or "UTC")
    _, _, until = skip_window(case.trigger_config, written or now)
    until = until.astimezone(UTC) if case.skip_holidays or case.business_days_only else None
    if span is not None:
        until = min(until or now + span, now + span)
    ours = predicted(case, now, until, LISTED + 5)
    theirs = [t for t in server if until is None or t < until]
    if ours[:LISTED] == theirs:
        return None
    # docs/triggers.md, "Clock changes": inside a repeated hour east of UTC the server fires at wall times
    # croniter names there, at least once, but not at every occurrence; everywhere else, exactly.
    if len(theirs) == LISTED:
        ours = [t for t in ours if t <= theirs[-1]]
    plain = ([t for t in ours if not in_repeated_hour(t, zone)], [t for t in theirs if not in_repeated_hour(t, zone)])
    repeated = ({t for t in ours if in_repeated_hour(t, zone)}, {t for t in theirs if in_repeated_hour(t, zone)})
    east = (now.astimezone(zone).utcoffset() or timedelta()) > timedelta()
    if east and plain[0] == plain[1] and repeated[1] <= repeated[0] and (repeated[1] or not repeated[0]):
        return None
    return (f"{case.trigger_config.describe()} {case.skip_holidays or ''} business={case.business_days_only} "
            f"end_at={case.end_at} max_runs={case.max_runs} now={now.isoformat()}:\n"
            f"  predicted {[t.isoformat() for t in ours]}\n  server    {[t.isoformat() for t in theirs]}")


async def test_the_server_fires_when_the_calendar_says_for_every_case_of_the_matrix(
        client: Client, settings: Settings) -> None:
    cases = matrix()
    assert sum(len(case.nows) for case in cases) > 400
    gate = asyncio.Semaphore(AT_ONCE)

    async def check(case: Case) -> list[str]:
        async with gate:
            listed = await matching_times(client, settings, case)
        return [wrong for now, server in zip(case.nows, listed, strict=True)
                if (wrong := disagreement(case.skill, now, server, written=min(case.nows), span=case.span))]

    found = [wrong for ws in await asyncio.gather(*(check(case) for case in cases)) for wrong in ws]
    assert not found, f"{len(found)} cases disagree:\n" + "\n".join(found[:10])


async def test_max_runs_ends_the_fires_where_the_calendar_says(client: Client, settings: Settings) -> None:
    # Remaining actions are the schedule's state, not its spec: only its next action times show them.
    cases = [(case, now) for case in GENERAL if case.max_runs is not None
             for now in [*week()[4:6], *special_days()[:2]]]
    found = await asyncio.gather(*(server_fires(client, settings, case, now) for case, now in cases))
    wrong = [w for (case, now), server in zip(cases, found, strict=True) if (w := disagreement(case, now, server))]
    assert not wrong, "\n".join(wrong)
    assert {len(server) for server in found} == {2, 3}  # 3 runs, or 5 with 3 done: the server's list ends there


async def test_start_at_pins_the_servers_count_to_the_second(client: Client, settings: Settings) -> None:
    # The matrix rests on this: from start_at on, inclusive, whatever the server's clock.
    daily = skill(TriggerConfig(schedule="0 9 * * *", timezone="UTC"))
    fire = utc(YEAR, 3, 3, 9)
    assert (await server_fires(client, settings, daily, fire - timedelta(seconds=1)))[0] == fire
    assert (await server_fires(client, settings, daily, fire))[0] == fire + timedelta(days=1)
