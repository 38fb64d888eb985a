"""The normalizer's *when* fields: the trigger (cron, interval, one-shot, event), the time zone and instants, the
schedule's shape (timeout, end, runs, jitter, spread, overlap, catch-up), and the days a schedule skips
(``skills.spec.normalize`` calls them; ``docs/security.md`` classifies them as *when*)."""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import available_timezones

from skills.display import span
from skills.owner.reach import reminds_only
from skills.spec.context import NormalizeContext
from skills.spec.fields import (
    Problems,
    boolean,
    integer,
    number,
)
from skills.spec.limits import (
    IN_HOURS,
    IN_MINUTES,
    INTERVAL_MINUTES,
    JITTER_SECONDS,
    MAX_RUNS,
    RELATIVE_MINUTES_LIMIT,
    TIMEOUT_MINUTES,
)
from skills.spec.models import (
    CATCH_UPS,
    OVERLAPS,
    SkillSpec,
    TriggerConfig,
)
from skills.suggest import did_you_mean
from skills.when.calendar import check_holidays
from skills.when.events import event_name_problem
from skills.when.spread import crowded, default_spread
from skills.when.triggers import LAST_CALENDAR_YEAR, MAX_ZONE_NAME, check_cron, zone_info

MAX_CRON_LENGTH = 1000
"""Characters of a cron expression: every value of every field listed (0,1,...,59 ...) is under 400."""

TRIGGER_KEYS = {"schedule", "timezone", "interval_minutes", "at", "in_minutes", "in_hours", "event"}
WHEN_KEYS = TRIGGER_KEYS - {"timezone", "event"}
"""The keys that give a schedule (a cron-type skill); ``event`` makes an event-type skill."""

TRIGGER_TYPES = ("cron", "event", "manual")


def schedule_shape(data: dict[str, Any], given: set[str], trigger: TriggerConfig | None, ctx: NormalizeContext,
                   notes: list[str], problems: Problems) -> dict[str, Any]:
    """The shape fields, each checked. ``given``: the fields of this input (an update's merged fields were
    accepted when they were given: an ``end_at`` passed since then is the skill's end, not a mistake). The
    default spread of a new skill is :func:`crowded_spread`'s, once the whole skill is read."""
    timeout = data.get("timeout_minutes")
    end_at = data.get("end_at")
    if end_at is not None:
        zone = (trigger.timezone if trigger else None) or ctx.default_timezone
        end_at = instant(end_at, zone, problems, "end_at")
        if end_at is not None and "end_at" in given and end_at <= ctx.now:
            problems.add("end_at", f"{end_at.isoformat()} is in the past (now is {ctx.now.isoformat()})")
        elif end_at is not None and end_at.year > LAST_CALENDAR_YEAR:
            problems.add("end_at", f"must be before {LAST_CALENDAR_YEAR + 1}-01-01 (got {end_at.isoformat()})")
    shape = {
        "timeout_minutes": number(timeout, "timeout_minutes", problems, bound=TIMEOUT_MINUTES)
        if timeout is not None else None,
        "end_at": end_at,
        "max_runs": integer(data.get("max_runs"), "max_runs", None, problems, bound=MAX_RUNS),
        "jitter_seconds": integer(data.get("jitter_seconds"), "jitter_seconds", 0, problems, bound=JITTER_SECONDS),
        "spread": spread(data, given, problems),
        "overlap": choice(data.get("overlap"), "overlap", OVERLAPS, problems),
        "catch_up": choice(data.get("catch_up"), "catch_up", CATCH_UPS, problems),
    }
    if shape["catch_up"] == "all" and shape["overlap"] == "allow":
        problems.add("catch_up", "'all' runs the missed fires one after another; overlap 'allow' would start "
                                 "them all at once: give one of the two")
    elif shape["catch_up"] == "all" and {"catch_up", "overlap"} & given:
        notes.append("catch_up 'all' queues fires: a fire that finds the previous run still going waits for "
                     "it instead of being skipped")
    kind = trigger.kind if trigger else None
    scheduled_only = [f for f in ("end_at", "max_runs", "jitter_seconds", "overlap", "catch_up")
                      if f in given and data.get(f) not in (None, 0, "skip", "once")]
    if kind is None and scheduled_only:
        notes.append(f"{', '.join(scheduled_only)}: no effect, this skill has no schedule")
    elif kind == "at" and {"max_runs", "jitter_seconds"} & set(scheduled_only):
        notes.append("max_runs and jitter_seconds: no effect on a one-shot, which fires once at its time")
    return shape


def spread(data: Mapping[str, Any], given: set[str], problems: Problems) -> bool:
    """Whether a cron takes the default spread (``skills.when.spread``) when it has no ``jitter_seconds``, as
    said or stored: said, it is what was said (a ``jitter_seconds`` above 0 replaces the default either way,
    so a stored skill with both reads back as it was); a ``jitter_seconds`` said without it (even 0: no
    jitter) is the owner's own answer, so no spread. Otherwise what is stored (an update or a file's re-sync
    never adds a spread its owner did not approve), and for a new skill none: :func:`crowded_spread` gives it
    one where its minute is crowded."""
    if "spread" in given:
        return boolean(data.get("spread"), "spread", False, problems)
    if "jitter_seconds" in given:
        return False
    return boolean(data.get("spread"), "spread", False, problems)


def crowded_spread(spec: SkillSpec, given: set[str], ctx: NormalizeContext, *, new: bool) -> str | None:
    """Why a new skill takes the default spread, or None when it keeps its exact time.

    Only a new Agent-tier cron that said neither ``spread`` nor ``jitter_seconds`` may take it, and only when
    its minute is crowded (``skills.when.spread.crowded``, over the count ``ctx.minute_crowd`` gives): more
    skills share it than the workers start within the spread. Agent-tier work ("a summary every morning")
    may start a few minutes late; a Direct plan's fixed calls and a reminder to the owner
    (``skills.owner.reach.reminds_only``) keep their time, for a reminder set for 8:30 that comes at 8:34 is
    a wrong reminder. A skill alone at 08:30, or one of a few, fires at 08:30."""
    trigger = spec.trigger_config
    if (not new or spec.tier != "agent" or {"spread", "jitter_seconds"} & given or ctx.minute_crowd is None
            or trigger is None or trigger.kind != "cron" or reminds_only(spec, ctx.notifier_tool)):
        return None
    seconds = default_spread(trigger)
    found = ctx.minute_crowd(trigger)
    if not seconds or not crowded(found, seconds, ctx.spread_fires_per_second):
        return None
    within, sharing = span(timedelta(seconds=seconds)), found.skills + 1
    minute = (f" ({found.at.astimezone(zone_info(trigger.timezone or 'UTC')):%Y-%m-%d %H:%M %a})"
              if found.at is not None else "")
    return (f"each fire spread up to {within}: its minute{minute} is crowded, {sharing:,} skill{'s' * (sharing != 1)} "
            f"this one included, more than the workers start in {within} ({ctx.spread_fires_per_second:.3g} a "
            "second); `spread: false` for the exact time")


def choice(value: Any, field: str, choices: tuple[str, ...], problems: Problems) -> str:
    """One of ``choices`` (the first when absent), read case- and dash-insensitively."""
    if value is None:
        return choices[0]
    text = value.strip().lower().replace("-", "_") if isinstance(value, str) else None
    if text not in choices:
        problems.add(field, f"must be one of {', '.join(choices)} (got {str(value)[:60]!r})")
        return choices[0]
    return text


def normalize_trigger(
    data: dict[str, Any], ctx: NormalizeContext, notes: list[str], problems: Problems
) -> TriggerConfig | None:
    config = data.get("trigger_config")
    if config and "event" in config:
        return event_trigger(config, problems)
    if not config or not WHEN_KEYS & config.keys():
        # A cron trigger_type without any of these is reported by _trigger_type.
        return None
    zone = config.get("timezone")
    if zone is not None:
        zone = timezone(zone, problems)

    at = None
    relative = {k: config[k] for k in ("in_minutes", "in_hours") if config.get(k) is not None}
    if relative:
        amounts = {k: number(v, f"trigger_config.{k}", problems, bound=IN_HOURS if k == "in_hours" else IN_MINUTES)
                   for k, v in relative.items()}
        minutes = sum((amount or 0) * (60 if k == "in_hours" else 1) for k, amount in amounts.items())
        if minutes > RELATIVE_MINUTES_LIMIT:
            problems.add("trigger_config", "in_minutes and in_hours together are more than ten years ahead; "
                                           "give an absolute 'at' instead")
            minutes = 0
        at = ctx.now.astimezone(UTC) + timedelta(minutes=minutes)
        # Schedules have whole seconds: round up, so a fraction of a minute is still in the future.
        at = at.replace(microsecond=0) + (timedelta(seconds=1) if at.microsecond else timedelta())
        # An amount too small for a timedelta (in_minutes: 1e-191) adds nothing: the next second, then.
        at = max(at, ctx.now.astimezone(UTC).replace(microsecond=0) + timedelta(seconds=1))
        words = " and ".join(f"{k}={v}" for k, v in relative.items())
        notes.append(f"{words} converted to at={at.isoformat()}")
    if config.get("at") is not None:
        if relative:
            problems.add("trigger_config.at", "give either at or in_minutes/in_hours, not both")
        else:
            at = instant(config["at"], zone or ctx.default_timezone, problems)
            if at is not None and at <= ctx.now:
                problems.add("trigger_config.at", f"{at.isoformat()} is in the past (now is {ctx.now.isoformat()})")
            elif at is not None and at.year > LAST_CALENDAR_YEAR:
                # Temporal's calendars match no later year: the schedule would never fire.
                problems.add("trigger_config.at", f"must be before {LAST_CALENDAR_YEAR + 1}-01-01 (got {at.isoformat()})")

    schedule = config.get("schedule")
    if schedule is not None:
        if not isinstance(schedule, str):
            problems.add("trigger_config.schedule", "must be a cron expression string")
            schedule = None
        elif len(schedule) > MAX_CRON_LENGTH:
            # croniter expands lists value by value: 100 KB of "1," took seconds.
            problems.add("trigger_config.schedule", f"is {len(schedule):,} characters long; the limit is "
                                                    f"{MAX_CRON_LENGTH:,}")
            schedule = None
        else:
            try:
                schedule = check_cron(schedule)
            except ValueError as e:
                problems.add("trigger_config.schedule", str(e))
                schedule = None
        if zone is None and config.get("timezone") is None:
            zone = ctx.default_timezone
            notes.append(f"timezone '{zone}' injected for the cron schedule")

    interval = config.get("interval_minutes")
    if interval is not None:
        interval = integer(interval, "trigger_config.interval_minutes", None, problems, bound=INTERVAL_MINUTES)

    given = [k for k in ("schedule", "interval_minutes", "at") if config.get(k) is not None]
    if relative and "at" not in given:
        given.append("in_minutes/in_hours")
    if len(given) > 1:
        problems.add("trigger_config", f"give exactly one of schedule, interval_minutes, at (got {', '.join(given)})")
        return None
    if not given:
        return None
    if zone is None and at is not None:
        zone = ctx.default_timezone
    return TriggerConfig(schedule=schedule, timezone=zone, interval_minutes=interval, at=at)


def event_trigger(config: Mapping[str, Any], problems: Problems) -> TriggerConfig | None:
    """``{event: NAME}`` (and optionally a timezone): no schedule beside it."""
    others = sorted(WHEN_KEYS & config.keys())
    if others:
        problems.add("trigger_config", f"give either event or a schedule, not both (got event and {', '.join(others)})")
        return None
    zone = timezone(config["timezone"], problems) if config.get("timezone") is not None else None
    problem = event_name_problem(config["event"])
    if problem:
        problems.add("trigger_config.event", problem)
        return None
    # A time zone may come along: the one {{now}} and {{today}} are read in by a run's plan.
    return TriggerConfig(event=config["event"].strip(), timezone=zone)


SKIP_FIELDS = frozenset({"skip_holidays", "business_days_only"})


def skip_days(data: dict[str, Any], given: Collection[str], trigger_type: str, notes: list[str],
              problems: Problems) -> dict[str, Any]:
    """``skip_holidays`` (a supported country[-subdivision]) and ``business_days_only``: only a repeating
    schedule has days to skip. Kept from a stored skill whose update takes its schedule away, they go
    with a note; given with no repeating schedule, they are refused."""
    value = data.get("skip_holidays")
    holidays = None
    if value not in (None, "", False):
        try:
            holidays = check_holidays(value)
        except ValueError as e:
            problems.add("skip_holidays", str(e))
    business = boolean(data.get("business_days_only"), "business_days_only", False, problems)
    config = data.get("trigger_config")
    repeats = trigger_type == "cron" and isinstance(config, Mapping) and "event" not in config and any(
        config.get(key) is not None for key in ("schedule", "interval_minutes"))
    for field, on in (("skip_holidays", holidays is not None), ("business_days_only", business)):
        if not on or repeats:
            continue
        if field in given:
            problems.add(field, "only a repeating schedule (trigger_config.schedule or interval_minutes) skips "
                                "days; a one-shot, an event or a manual skill has none to skip")
        else:
            notes.append(f"{field} dropped: the skill no longer has a repeating schedule")
    if not repeats:
        return {"skip_holidays": None, "business_days_only": False}
    return {"skip_holidays": holidays, "business_days_only": business}


def skip_zone(trigger: TriggerConfig | None, ctx: NormalizeContext, notes: list[str]) -> TriggerConfig | None:
    """Days are the dates of the skill's zone: an interval, which needs none to fire, gets the default one."""
    if trigger is None or trigger.timezone is not None:
        return trigger
    notes.append(f"timezone '{ctx.default_timezone}' injected: the days skipped are its dates")
    return trigger.model_copy(update={"timezone": ctx.default_timezone})


def timezone(value: Any, problems: Problems) -> str | None:
    if not isinstance(value, str) or not value.strip():
        problems.add("trigger_config.timezone", "must be an IANA time zone name such as 'Europe/Paris'")
        return None
    try:
        zone_info(value.strip())
    except ValueError:
        name = value.strip()
        if len(name) > MAX_ZONE_NAME:
            problems.add("trigger_config.timezone", f"is {len(name):,} characters; a time zone name has at most "
                                                    f"{MAX_ZONE_NAME} (use an IANA name such as America/New_York)")
            return None
        hint = did_you_mean(name, zone_names())
        problems.add("trigger_config.timezone",
                     f"unknown time zone '{value}'{hint or ' (use an IANA name such as America/New_York)'}")
        return None
    return value.strip()


@functools.cache
def zone_names() -> frozenset[str]:
    return frozenset(available_timezones())


def instant(value: Any, zone: str, problems: Problems, field: str = "trigger_config.at") -> datetime | None:
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            problems.add(field, f"'{value}' is not an ISO 8601 date-time such as '2026-02-14T15:00:00'")
            return None
    else:
        problems.add(field, "must be an ISO 8601 date-time string")
        return None
    if moment.tzinfo is None:
        try:
            moment = moment.replace(tzinfo=zone_info(zone))
        except ValueError:
            return None
    try:
        return moment.astimezone(UTC).replace(microsecond=0)
    except OverflowError:  # year 1 or 9999 shifted by its zone leaves the calendar
        problems.add(field, f"must be before {LAST_CALENDAR_YEAR + 1}-01-01 (got {value})")
        return None
