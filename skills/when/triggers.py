"""When a skill fires: classic cron checked against croniter, and the fire times of every trigger kind.

Pure code: no I/O, and no clock (every "now" is a parameter), so workflows, activities
and the starter can all import it. croniter is the authority on when a cron fires; the
Temporal Schedule spec that reproduces these times is built from here by
``adapters.schedule_spec`` (docs/triggers.md explains the mapping in prose).

An expression is checked, expanded and parsed by croniter once per process (``CRON_CACHE`` of them are kept).
Its fires are read from the expanded fields where that gives croniter's answer, away from clock changes
(``skills.when.walls``, a few microseconds a fire), and croniter is stepped near one (about 0.1 ms a fire).
"""

from __future__ import annotations

import copy
import functools
import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from skills import linear
from skills.spec.models import TriggerConfig
from skills.when.walls import CronFields, plain_next

MACROS: Mapping[str, str] = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

NOT_CLASSIC = "only classic 5-field cron and @hourly-style macros are supported"
_FIELD_ORDER = "minute hour day-of-month month day-of-week"

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_LONGEST_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)

_ELEMENT = linear.compile(r"(?:\*|(?P<start>[a-z0-9]+)(?:-(?P<end>[a-z0-9]+))?)(?:/(?P<step>[0-9]+))?")
# Quartz/Jenkins extensions croniter knows (L, W, #, ?, H, R): valid for croniter, not classic cron.
_EXTENSION_CHARS = linear.compile(r"[#?()]")
_EXTENSION_WORD = linear.compile(r"l|\d*l|l\d+|lw|\d+w|w\d+|h|r")

LAST_CALENDAR_YEAR = 2100
"""Temporal's calendars match no year after this one."""
CRON_CACHE = 1024
"""Expressions kept checked and parsed: an engine's distinct schedules, with room to spare."""

@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()
    """Names of the values ``low``, ``low + 1``, ... (month and day-of-week only)."""

    def value(self, word: str, text: str) -> int:
        if word.isdigit():
            number = int(word)
            if not self.low <= number <= self.high:
                raise ValueError(f"'{text}': {self.name} {number} is out of range ({self._allowed()})")
            return number
        if word in self.names:
            return self.low + self.names.index(word)
        if _EXTENSION_WORD.fullmatch(word):
            raise ValueError(
                f"'{text}': '{word}' in the {self.name} field is not classic cron; {NOT_CLASSIC}"
            )
        raise ValueError(f"'{text}': '{word}' is not a valid {self.name} ({self._allowed()})")

    def _allowed(self) -> str:
        allowed = f"{self.low}-{self.high}"
        if self.name == "day-of-week":
            allowed += " with 0 and 7 both Sunday, or sun-sat"
        elif self.names:
            allowed += f" or {self.names[0]}-{self.names[-1]}"
        return allowed


_FIELDS = (
    _Field("minute", 0, 59),
    _Field("hour", 0, 23),
    _Field("day-of-month", 1, 31),
    _Field("month", 1, 12, _MONTHS),
    _Field("day-of-week", 0, 7, _WEEKDAYS),
)


# --- checking ----------------------------------------------------------------------------------


def check_cron(expr: str) -> str:
    """The expression normalized (stripped, single spaces, lower case), or ValueError saying what is wrong.

    Accepts classic 5-field cron and the @yearly/@annually/@monthly/@weekly/@daily/@midnight/
    @hourly macros; refuses what croniter refuses, croniter's non-classic extensions, and
    expressions that can never fire. An expression once found good is not checked again.
    """
    if not isinstance(expr, str):
        raise ValueError(f"a cron expression is a string (got {type(expr).__name__})")
    return _checked(expr)


@functools.lru_cache(maxsize=CRON_CACHE)
def _checked(expr: str) -> str:
    text = " ".join(expr.split()).lower()
    if not text:
        raise ValueError(
            "the cron expression is empty; write 5 fields such as '0 9 * * mon-fri' or a macro such as @daily"
        )
    if text.startswith("@"):
        if text in MACROS:
            return text
        raise ValueError(f"'{text}' is not supported; {NOT_CLASSIC} ({', '.join(MACROS)})")
    fields = text.split(" ")
    if len(fields) in (6, 7):
        raise ValueError(
            f"'{text}' has {len(fields)} fields, but a seconds or year field is not classic cron; "
            f"{NOT_CLASSIC} ({_FIELD_ORDER})"
        )
    if len(fields) != 5:
        raise ValueError(f"'{text}' has {len(fields)} field(s); cron needs exactly 5: {_FIELD_ORDER}")
    for field, spec in zip(_FIELDS, fields, strict=True):
        for element in spec.split(","):
            _check_element(field, element, text)
    from croniter import CroniterError  # croniter (and dateutil) load with the first cron read, not at import

    try:
        fields = expand_cron(text)
    except CroniterError as exc:
        raise ValueError(f"'{text}' is not valid cron: {exc}") from None
    _refuse_if_never_fires(text, fields)
    return text


def _check_element(field: _Field, element: str, text: str) -> None:
    """One comma-separated element of a field: '*', a value, a range, each with an optional step."""
    match = _ELEMENT.fullmatch(element)
    if match is None:
        if _EXTENSION_CHARS.search(element):
            raise ValueError(
                f"'{text}': '{element}' in the {field.name} field is not classic cron; {NOT_CLASSIC}"
            )
        raise ValueError(
            f"'{text}': '{element}' in the {field.name} field is not a value, a range (a-b), "
            "a step (*/n, a-b/n, a/n) or a list of those"
        )
    start, end, step = match.group("start", "end", "step")
    if step is not None and int(step) < 1:
        raise ValueError(f"'{text}': the step in '{element}' must be 1 or more")
    if start is None:
        return
    low = field.value(start, text)
    high = field.value(end, text) if end is not None else None
    # croniter reads these differently from classic cron, so a user would not get what they wrote.
    if high is not None and _same_value(field, low, high) and low >= high:
        raise ValueError(
            f"'{text}': the range '{element}' starts and ends on the same value, which croniter "
            f"reads as the whole {field.name} field; write the single value or '*'"
        )
    if field.name == "day-of-week" and low == 7 and (high is not None or step is not None):
        raise ValueError(f"'{text}': '{element}' starts a range or step at 7; write 0 for Sunday there")


def _same_value(field: _Field, low: int, high: int) -> bool:
    if field.name == "day-of-week":
        return low % 7 == high % 7
    return low == high


def _refuse_if_never_fires(text: str, fields: CronFields) -> None:
    # With both day fields restricted croniter ORs them, and every month has every weekday.
    if fields.days is None or fields.weekdays is not None:
        return
    months = fields.months or range(1, 13)
    if min(fields.days) > max(_LONGEST_MONTH[m - 1] for m in months):
        in_months = ", ".join(_MONTHS[m - 1] for m in months)
        raise ValueError(f"'{text}' never fires: there is no day {min(fields.days)} in {in_months}")


# --- croniter's view ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=CRON_CACHE)
def expand_cron(text: str) -> CronFields:
    from croniter import croniter

    expanded, _ = croniter.expand(text)

    def values(field: list[int | str]) -> tuple[int, ...] | None:
        # A '*' anywhere in a list ('*,5') means every value, as croniter's _calc reads it.
        return None if "*" in field else tuple(sorted(int(v) for v in field))

    return CronFields(*(values(field) for field in expanded))


def cron_next_times(expr: str, tz: str, after: datetime, count: int) -> list[datetime]:
    """croniter's next ``count`` fire times strictly after the aware ``after``, computed in zone ``tz``.

    The times are aware and in ``tz``. Two times in a repeated hour share a wall clock and
    differ only in ``fold``, and Python compares datetimes of one zone by wall clock alone:
    compare them in UTC or by timestamp.
    """
    return list(itertools.islice(cron_times(expr, tz, after), max(0, count)))


def cron_times(expr: str, tz: str, after: datetime) -> Iterator[datetime]:
    """``cron_next_times`` without an end, computed only as far as the caller reads. croniter's next time
    depends on the time it steps from alone, so these are the times of asking it again from each one: read
    from the expression's fields (``skills.when.walls.plain_next``) where that is croniter's answer, away from
    clock changes, and croniter's own step near one. Bad input raises here, not at the first read."""
    require_aware(after, "after")
    text = check_cron(expr)
    return _stepped(text, expand_cron(text), zone_info(tz), after)


def _stepped(text: str, fields: CronFields, zone: ZoneInfo, after: datetime) -> Iterator[datetime]:
    at = after.astimezone(zone)
    while True:
        found = plain_next(fields, zone, at)
        if found is None:
            fires = copy.copy(_parsed(text))  # its own position: the parse is shared, read only
            fires.set_current(at, force=True)
            found = fires.get_next(datetime)
        at = found
        yield at


@functools.lru_cache(maxsize=CRON_CACHE)
def _parsed(text: str) -> Any:
    """croniter's parse of a checked expression, at no time yet: ``cron_times`` copies it and sets the
    copy's time and zone (croniter reads its expansion without changing it, and parses the same whatever the
    time it starts from)."""
    from croniter import croniter

    return croniter(text, 0.0, ret_type=datetime)


# --- when a trigger fires -------------------------------------------------------------------------


def trigger_next_times(
    trigger: TriggerConfig, *, anchor: datetime, after: datetime, count: int
) -> list[datetime]:
    """The next ``count`` times (fewer for a one-shot) strictly after ``after`` at which the trigger fires.

    For a cron these are croniter's times, which the spec reproduces exactly except inside
    the repeated hour of a fall-back clock change (docs/triggers.md, "Clock changes").
    """
    return list(itertools.islice(trigger_times(trigger, anchor=anchor, after=after), max(0, count)))


def trigger_times(trigger: TriggerConfig, *, anchor: datetime, after: datetime) -> Iterator[datetime]:
    """``trigger_next_times`` without a count, computed as they are read: the calendar reads as far as it
    needs (a week of a daily skill is 8 of croniter's steps, not a chunk of them). Bad input raises here,
    not at the first read."""
    require_aware(anchor, "anchor")
    require_aware(after, "after")
    match trigger.kind:
        case "cron":
            assert trigger.schedule is not None
            return cron_times(trigger.schedule, timezone_of(trigger), after)
        case "interval":
            assert trigger.interval_minutes is not None
            every, first = interval_period(trigger.interval_minutes, anchor)
            passed = (after - first) // every + 1 if after >= first else 0
            return (first + (passed + k) * every for k in itertools.count())
        case "at":
            assert trigger.at is not None
            at = one_shot_second(trigger.at)
            return iter([at] if at > after else [])
    raise ValueError("the trigger has none of schedule, interval_minutes or at")


def interval_period(minutes: int, anchor: datetime) -> tuple[timedelta, datetime]:
    """The period, and the first fire: one period after the anchor (Temporal counts whole seconds)."""
    if minutes < 1:
        raise ValueError(f"interval_minutes must be 1 or more (got {minutes})")
    every = timedelta(minutes=minutes)
    return every, anchor.astimezone(UTC).replace(microsecond=0) + every


def one_shot_second(at: datetime) -> datetime:
    """The second a one-shot fires in (Temporal counts whole seconds), in UTC."""
    require_aware(at, "at")
    second = at.astimezone(UTC).replace(microsecond=0)
    if not 2000 <= second.year <= LAST_CALENDAR_YEAR:
        raise ValueError(
            f"at {second.isoformat()} is outside the years Temporal schedules (2000-{LAST_CALENDAR_YEAR})"
        )
    return second


# --- small helpers -----------------------------------------------------------------------------


MAX_ZONE_NAME = 64
"""Characters of a time zone name: the longest IANA name has 32. A longer one is no zone, and reading it
as a file name (ZoneInfo does) fails with an OSError no caller expected: the name was too long."""


def zone_info(tz: str) -> ZoneInfo:
    """The IANA zone ``tz``; ValueError naming it when there is none of that name (malformed, too long,
    unknown to this machine)."""
    try:
        if len(tz) > MAX_ZONE_NAME:
            raise ValueError(tz)
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(f"unknown time zone '{tz[:MAX_ZONE_NAME]}{'...' if len(tz) > MAX_ZONE_NAME else ''}' "
                         "(use an IANA name such as 'Europe/Berlin')") from None


def timezone_of(trigger: TriggerConfig) -> str:
    if not trigger.timezone:
        raise ValueError("a cron trigger needs its time zone (the normalizer injects one)")
    return trigger.timezone


def require_aware(moment: datetime, name: str) -> None:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{name} must be a time-zone aware datetime (got {moment.isoformat()})")
