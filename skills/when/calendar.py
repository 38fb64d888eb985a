"""Business days and public holidays: the days a skill's schedule skips, and its fires to come.

``skip_holidays: US-CA`` skips the public holidays of a country (and subdivision) as the
``holidays`` package knows them; ``business_days_only: true`` skips the weekend (the country's,
when one is named and the package knows it; else Saturday and Sunday). Days are the skill's
time zone's dates. The schedule gets a date-exact skip list reaching ``SKIP_HORIZON`` ahead
(``adapters.schedule_spec``), which Maintenance renews ``SKIP_RENEW_BEFORE`` before it runs out.

Pure code: every "now" is a parameter. ``holidays`` is imported where it is used, so that a
workflow importing the models never loads it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import BaseModel, Field

from skills.display import span
from skills.spec.models import Skill, SkillSpec, TriggerConfig
from skills.suggest import did_you_mean
from skills.when.spread import skill_spread
from skills.when.triggers import (
    CronFields,
    check_cron,
    expand_cron,
    one_shot_second,
    require_aware,
    trigger_times,
    zone_info,
)

SKIP_HORIZON = timedelta(days=400)
"""How far ahead a schedule's skip list reaches: a year, and a month to spare."""
SKIP_RENEW_BEFORE = timedelta(days=30)
"""Maintenance renews a skip list this long before it runs out."""
MAX_SKIP_TEXT = 40
"""Characters of a ``skip_holidays`` value: country and subdivision codes are a few each."""
WEEKEND = frozenset({5, 6})
"""Saturday and Sunday (Python's weekday numbers): the weekend where no country says otherwise."""
MAX_UPCOMING = 100
"""Fires ``skills next`` lists at most."""
MAX_SKIPPED_LISTED = 100
"""Skipped days one answer lists at most; the search for the fires asked for goes on past them (it ends
after ``SKIP_HORIZON`` of skipped fires)."""


class UpcomingFire(BaseModel):
    """A fire to come, in the skill's time zone; ``skipped`` says why the schedule will not start it then."""

    at: datetime
    skipped: str | None = None


# --- the field ----------------------------------------------------------------------------------


def check_holidays(value: Any) -> str:
    """``us-ca`` -> ``US-CA``: a country code the ``holidays`` package supports, and optionally one of its
    subdivisions after a dash; ValueError saying what is wrong, with the closest code."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be a country code, optionally with a subdivision: 'US', 'US-CA', 'DE-BY'")
    text = value.strip()
    if len(text) > MAX_SKIP_TEXT:
        raise ValueError(f"is {len(text):,} characters; a country and subdivision code have at most {MAX_SKIP_TEXT}")
    country, _, subdivision = text.partition("-")
    countries = _countries()
    names = _country_names()
    code = {c.upper(): c for c in countries}.get(country.strip().upper()) or names.get(_name_key(country))
    if code is None:
        close = did_you_mean(_name_key(country), [*countries, *names])
        if close:
            word = close.split("'")[1]
            close = f"; did you mean '{names.get(word, word)}'{f' ({word.title()})' if word in names else ''}?"
        raise ValueError(f"unknown country '{country.strip()}'{close}: give an ISO 3166 code the holidays "
                         "package supports, such as 'US', 'GB', 'DE' or 'FR'")
    if not subdivision.strip():
        return code
    codes = {s.upper(): s for s in countries[code]}
    sub = codes.get(subdivision.strip().upper()) or _subdivision_alias(code, subdivision.strip())
    if sub is None:
        listed = countries[code]
        hint = did_you_mean(subdivision.strip(), listed) if listed else ""
        known = f" (its subdivisions: {', '.join(listed[:30])}{', ...' if len(listed) > 30 else ''})" if listed \
            else f" ({code} has no subdivisions in the holidays package: give '{code}' alone)"
        raise ValueError(f"unknown subdivision '{subdivision.strip()}' of {code}{hint}{'' if hint else known}")
    return f"{code}-{sub}"


@functools.cache
def _countries() -> dict[str, list[str]]:
    import holidays

    return {code: list(subdivisions) for code, subdivisions in holidays.list_supported_countries().items()}


@functools.cache
def _country_names() -> dict[str, str]:
    """``united states`` -> ``US``: the countries by the names the package files them under."""
    from holidays import registry

    return {name.replace("_", " "): entry[1] for name, entry in registry.COUNTRIES.items()}


def _name_key(text: str) -> str:
    return " ".join(text.replace("_", " ").split()).lower()


def _subdivision_alias(country: str, name: str) -> str | None:
    """A subdivision by its name (``Bayern`` for ``BY``), as the package knows it."""
    for code, aliases in _aliases(country).items():
        if any(alias.lower() == name.lower() for alias in aliases):
            return code
    return None


@functools.cache
def _aliases(country: str) -> dict[str, list[str]]:
    import holidays

    found = holidays.country_holidays(country)
    aliases = getattr(found, "get_subdivision_aliases", None)
    return dict(aliases()) if aliases else {}


# --- the days skipped ---------------------------------------------------------------------------


def skipped_days(skip_holidays: str | None, business_days_only: bool, first: date, last: date) -> dict[date, str]:
    """Every day from ``first`` to ``last`` (both included) that the schedule skips, with why."""
    if not skip_holidays and not business_days_only:
        return {}
    found = _holidays(skip_holidays, tuple(range(first.year, last.year + 1))) if skip_holidays else None
    weekend = frozenset(found.weekend) if found is not None else WEEKEND
    working = set(getattr(found, "weekend_workdays", ()) or ()) if found is not None else set()
    days: dict[date, str] = {}
    day = first
    while day <= last:
        name = found.get(day) if found is not None else None
        if name:
            days[day] = str(name)
        elif business_days_only and day.weekday() in weekend and day not in working:
            days[day] = "weekend"
        day += timedelta(days=1)
    return days


@functools.lru_cache(maxsize=256)
def _holidays(skip_holidays: str, years: tuple[int, ...]) -> Any:
    import holidays

    country, _, subdivision = skip_holidays.partition("-")
    return holidays.country_holidays(country, subdiv=subdivision or None, years=years)


def skips(spec: SkillSpec) -> bool:
    """Whether the skill's schedule skips any day."""
    return bool(spec.skip_holidays or spec.business_days_only)


def skip_window(trigger: TriggerConfig, now: datetime) -> tuple[date, date, datetime]:
    """The days a skip list built ``now`` covers (first, last, in the trigger's zone), and the instant
    it runs out: the start of the day after the last."""
    require_aware(now, "now")
    zone = zone_info(trigger.timezone or "UTC")
    today = now.astimezone(zone).date()
    # From yesterday: a fire just before midnight UTC may still be on yesterday's date in the zone.
    first, last = today - timedelta(days=1), today + SKIP_HORIZON
    return first, last, datetime.combine(last + timedelta(days=1), time(0), tzinfo=zone)


# --- the fires to come ----------------------------------------------------------------------------


def fire_times(trigger: TriggerConfig, *, anchor: datetime, now: datetime, skip_holidays: str | None = None,
               business_days_only: bool = False, end_at: datetime | None = None,
               runs_left: int | None = None) -> Iterator[tuple[datetime, str | None]]:
    """Every time the schedule of ``trigger`` fires strictly after ``now``, in order: the one calendar every
    prediction of fires comes from (the registration's next fire, ``skills next``, the 30-day outlook,
    collisions, proposals, the overdue watch, the run accounting).

    Yields ``(time, None)`` for a fire the schedule starts and ``(time, reason)`` for the first fire of each
    day it skips (the day is skipped whole, so its other fires are not yielded). Ends where the schedule
    does: a one-shot's time, ``end_at`` (inclusive, as the spec's), ``runs_left`` fires (Temporal's remaining
    actions; skipped fires take none), and after ``SKIP_HORIZON`` of nothing but skipped fires (a skill
    whose every day is skipped fires never: without the bound, asking for its next fire would not end).
    ``anchor``: when the trigger was set (an interval counts from it). Times are aware; a cron's are in its
    zone, compare them in UTC.

    These are the times the server starts runs at while the skip list is kept renewed (Maintenance
    does): tests/activities/test_calendar_matrix.py checks them against the server's own."""
    require_aware(now, "now")
    if runs_left is not None and runs_left <= 0:
        return
    zone = zone_info(trigger.timezone or "UTC")
    skipping = bool(skip_holidays or business_days_only)
    skipped: Mapping[date, str] = {}
    covered: date | None = None
    since = now
    times = trigger_times(trigger, anchor=anchor, after=now)  # stepped only as far as the caller reads
    while (at := next(times, None)) is not None:
        if end_at is not None and at > end_at:
            return
        if skipping:
            day = at.astimezone(zone).date()
            if covered is None or day > covered:
                # A year of days at a time: a skill's next fires are rarely further apart.
                covered = day + timedelta(days=366)
                skipped = skipped_days(skip_holidays, business_days_only, day, covered)
            reason = skipped.get(day)
            if reason is not None:
                if at - since > SKIP_HORIZON:
                    return
                yield at, reason
                # A day is skipped whole: go on from its last instant, past its other fires (a skill firing
                # every minute has 1,440), in UTC (aware arithmetic in the zone is by wall clock, and a
                # repeated hour's wall clock comes twice).
                after = max(at, day_start(day + timedelta(days=1), zone) - timedelta(microseconds=1))
                times = trigger_times(trigger, anchor=anchor, after=after)
                continue
        yield at, None
        since = at
        if runs_left is not None:
            runs_left -= 1
            if runs_left == 0:
                return


def spec_fires(spec: SkillSpec, *, anchor: datetime, now: datetime) -> Iterator[tuple[datetime, str | None]]:
    """``fire_times`` of a skill's schedule: its trigger, skipped days, ``end_at`` and the runs ``max_runs``
    leaves; nothing for a skill that is not scheduled."""
    trigger = spec.trigger_config
    if trigger is None or not spec.is_scheduled:
        return iter(())
    runs_left = None if spec.max_runs is None else max(0, spec.max_runs - getattr(spec, "scheduled_runs", 0))
    return fire_times(trigger, anchor=anchor, now=now, skip_holidays=spec.skip_holidays,
                      business_days_only=spec.business_days_only, end_at=spec.end_at, runs_left=runs_left)



def count_fires(trigger: TriggerConfig, *, anchor: datetime, now: datetime, end: datetime,
                skip_holidays: str | None = None, business_days_only: bool = False, end_at: datetime | None = None,
                runs_left: int | None = None) -> int:
    """How many fires :func:`fire_times` starts after ``now`` and up to ``end`` (skipped ones not counted):
    the same count as reading them, found a day at a time for a cron (the 30-day outlook of ``* * * * *`` is
    43,200 of croniter's steps, seconds of CPU, on every proposal and ``skills get``).

    A day of the cron's zone that lies wholly in the window, is not skipped and has no clock change (24 hours,
    one offset) has, for each of its hours the cron names on that date, as many fires as the cron has minutes:
    every wall-clock time of such a day is one instant. The window's first and last days, and days the clock
    changes, are read from :func:`fire_times` as before, where croniter decides what a skipped or a repeated
    hour gives. For a window longer than ``SKIP_HORIZON`` (where a run of skipped days ends the reading) or a
    trigger that is not a cron, they are all read."""
    require_aware(now, "now")
    require_aware(end, "end")
    if end_at is not None:
        end = min(end, end_at)
    if runs_left is not None and runs_left <= 0 or end <= now:
        return 0
    fields = _cron_fields(trigger)
    counted = 0
    try:
        if fields is None or end - now > SKIP_HORIZON:
            for at, reason in fire_times(trigger, anchor=anchor, now=now, skip_holidays=skip_holidays,
                                         business_days_only=business_days_only, end_at=end_at, runs_left=runs_left):
                if at > end:
                    break
                counted += reason is None
            return counted
        zone = zone_info(trigger.timezone or "UTC")
        first, last = now.astimezone(zone).date(), end.astimezone(zone).date()
        skipped = skipped_days(skip_holidays, business_days_only, first, last)
        each_hour = len(fields.minutes) if fields.minutes is not None else 60
        day = first
        while day <= last:
            start, stop = day_start(day, zone), day_start(day + timedelta(days=1), zone)
            if day in skipped:
                pass
            elif now < start and stop <= end and _one_offset(start, stop, zone):
                counted += each_hour * sum(fields.fires_in(day, hour) for hour in range(24))
            else:
                for at in trigger_times(trigger, anchor=anchor, after=max(now, start - timedelta(microseconds=1))):
                    if at >= stop or at > end:
                        break
                    counted += 1
            if runs_left is not None and counted >= runs_left:
                return runs_left
            day += timedelta(days=1)
    except ValueError:
        pass  # bad input, or a time past the years Temporal schedules: the fires before it
    return counted


def _one_offset(start: datetime, stop: datetime, zone: ZoneInfo) -> bool:
    """Whether the day from ``start`` to ``stop`` is 24 hours of one offset: no clock change in it."""
    last = stop - timedelta(microseconds=1)
    return stop - start == timedelta(days=1) and start.astimezone(zone).utcoffset() == last.astimezone(zone).utcoffset()


def _cron_fields(trigger: TriggerConfig) -> CronFields | None:
    """A cron trigger's fields, None for another trigger or one croniter expands to what they cannot say."""
    if trigger.kind != "cron" or trigger.schedule is None or not trigger.timezone:
        return None
    try:
        return expand_cron(check_cron(trigger.schedule))
    except ValueError:
        return None

def upcoming(spec: SkillSpec, *, anchor: datetime, now: datetime, count: int) -> list[UpcomingFire]:
    """The skill's next ``count`` fires after ``now`` (``spec_fires``), in its zone, with the first fire of
    each day its skip list removes listed too, marked (at most ``MAX_SKIPPED_LISTED`` of them). Skipped days
    do not count: one fire asked of a business-days skill on a Friday evening is the weekend, marked, and
    Monday's fire. Fewer when the schedule ends first."""
    require_aware(now, "now")
    if count <= 0 or spec.trigger_config is None:
        return []
    zone = zone_info(spec.trigger_config.timezone or "UTC")
    found: list[UpcomingFire] = []
    fired = listed = 0
    for at, reason in spec_fires(spec, anchor=anchor, now=now):
        if reason is None:
            found.append(UpcomingFire(at=at.astimezone(zone)))
            fired += 1
            if fired >= count:
                break
        elif listed < MAX_SKIPPED_LISTED:
            found.append(UpcomingFire(at=at.astimezone(zone), skipped=reason))
            listed += 1
    if fired < count:
        # The schedule fires no more (or every day left is skipped): after its last fire, no more skipped days
        # than fires were asked for, as a list of nothing but skipped days says all it has to in a few.
        last = max((i for i, fire in enumerate(found) if fire.skipped is None), default=-1)
        del found[last + 1 + count:]
    return found


def day_start(day: date, zone: ZoneInfo) -> datetime:
    """The instant ``day`` begins in ``zone``, in UTC; where its midnight does not exist (the clock jumps
    from 00:00), the instant the clock jumps."""
    return datetime.combine(day, time(0), tzinfo=zone).astimezone(UTC)


def next_fire(spec: SkillSpec, *, anchor: datetime, now: datetime) -> datetime | None:
    """The skill's first fire after ``now`` that its schedule starts (no skipped one), in its zone, or None."""
    at = next((at for at, reason in spec_fires(spec, anchor=anchor, now=now) if reason is None), None)
    return at.astimezone(zone_info(spec.trigger_config.timezone or "UTC")) if at and spec.trigger_config else at


def next_skipped(spec: SkillSpec, *, now: datetime, count: int = 5) -> list[tuple[date, str]]:
    """The next ``count`` days the skill's schedule skips, from today in its zone (whether it fires on them
    or not): what ``skills get`` lists."""
    if not skips(spec) or spec.trigger_config is None or not spec.is_scheduled:
        return []
    first, last, _ = skip_window(spec.trigger_config, now)
    days = skipped_days(spec.skip_holidays, spec.business_days_only, first + timedelta(days=1), last)
    return sorted(days.items())[:count]


class Forecast(BaseModel):
    """``skills next``: a skill's fires to come, in its zone, the skipped ones marked."""

    skill_id: int
    name: str
    timezone: str | None = None
    trigger: str
    paused: str | None = None
    """Why it does not fire now (disabled, and the reason): the times are those it keeps once resumed."""
    fires: list[UpcomingFire] = Field(default_factory=list)
    spread_seconds: int = 0
    """How late each fire may start (``skills.when.spread``): the times listed are the schedule's own, and
    Temporal starts each up to this much after its time."""

    def lines(self) -> list[str]:
        """The fires as a person reads them: ``2026-12-24 09:00 Thu``, ``2026-12-25 skipped: Christmas Day``,
        and for a spread schedule ``2026-12-24 09:00 Thu (spread up to 5 min)``."""
        spread = f" (spread up to {span(timedelta(seconds=self.spread_seconds))})" if self.spread_seconds else ""
        return [f"{fire.at:%Y-%m-%d} skipped: {fire.skipped}" if fire.skipped
                else f"{fire.at:%Y-%m-%d %H:%M %a}{spread}" for fire in self.fires]


def forecast(skill: Skill, *, now: datetime, count: int) -> Forecast:
    """The skill's next ``count`` fires (``upcoming``), for ``skills next`` and the management tools."""
    if not 1 <= count <= MAX_UPCOMING:
        raise ValueError(f"count must be 1 to {MAX_UPCOMING} (got {count})")
    trigger = skill.trigger_config
    paused = None if skill.enabled else f"disabled ({skill.disabled_reason or 'by user'})"
    return Forecast(skill_id=skill.id, name=skill.name, timezone=trigger.timezone if trigger else None,
                    trigger=trigger.describe() if trigger else skill.trigger_type, paused=paused,
                    fires=upcoming(skill, anchor=skill.created_at, now=now, count=count),
                    spread_seconds=skill_spread(skill))


def coming_lines(skill: Skill, *, now: datetime, count: int = 5) -> list[str]:
    """The next fires of a skill that repeats, as ``Forecast.lines`` says them, or none: what a reply to a
    stored or proposed change shows, so a wrong schedule is seen before it fires. A disabled skill, a
    one-shot and an event skill have no list to show."""
    if not skill.enabled or not skill.is_scheduled or skill.is_one_shot:
        return []
    return forecast(skill, now=now, count=count).lines()


def first_fire(skill: Skill, now: datetime) -> datetime | None:
    """The first fire of a schedule just created for ``skill`` at ``now``, computed from its trigger and skip
    days (``next_fire``, which the server's own times are checked against)."""
    if not skill.enabled or skill.trigger_config is None:
        return None
    return next_fire(skill, anchor=skill.created_at, now=now)


def due_at_creation(skill: Skill, now: datetime) -> bool:
    """A one-shot whose second has come by ``now``, before its schedule exists: its time passed while it was
    registered (a reminder a few seconds out, a slow machine). Temporal starts no fire that a spec names before
    the schedule's creation, so it would never fire, and the owner told of a next fire would later read it
    missed; the create starts it at once instead (``ScheduleWriter.put``'s ``fire_on_create``). The spec's own
    second is past by then, so the fire is not made twice."""
    trigger = skill.trigger_config
    return (skill.enabled and trigger is not None and trigger.kind == "at" and trigger.at is not None
            and skill.scheduled_runs == 0 and one_shot_second(trigger.at) <= now)
