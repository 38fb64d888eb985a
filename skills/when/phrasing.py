"""When, read from a person's words with no model: "in 10 minutes", "every weekday at 9", "tomorrow at 3pm".

Two uses (docs/triggers.md#phrasings):

- a check: a proposed skill whose trigger contradicts the message it answers is flagged in the
  proposal ("you said weekdays; this fires every day"), by :func:`contradictions`;
- a path with no tokens: a plain reminder ("remind me in 10 minutes to check the oven") is read
  whole by :func:`plain_reminder` into the skill to propose, without asking a model.

The reader is small and strict on purpose: a phrase it is not sure of (an hour like "at 3" with no
am/pm, two times, a day that has passed) is *ambiguous*, and then it neither flags nor proposes: the
model decides. Pure: the time and the zone are parameters.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from skills import linear

MAX_MESSAGE = 400
"""Longer messages are not read (a plain reminder is short; a long message is for the model)."""

DEFAULT_TIME = time(9, 0)
"""The time a day-level phrase with no time stands for ("every monday", "tomorrow")."""

PART_OF_DAY = {"morning": time(8, 0), "afternoon": time(14, 0), "evening": time(18, 0), "night": time(21, 0),
               "tonight": time(21, 0)}
"""The time a part of the day with no clock time stands for ("every morning")."""

_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20,
            "thirty": 30, "forty": 40, "forty-five": 45, "fifty": 50, "sixty": 60, "ninety": 90,
            "a couple of": 2, "a few": 3}
_NUM = r"(?:\d{1,4}|a couple of|a few|forty-five|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|" \
       r"twelve|fifteen|twenty|thirty|forty|fifty|sixty|ninety)"
_UNIT = r"(?P<unit>minutes?|mins?|m|hours?|hrs?|h|days?|weeks?)"
_UNIT_MINUTES = {"m": 1, "h": 60, "d": 1440, "w": 10080}

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY = r"(?:mon|tues?|wed|weds|thu|thur|thurs|fri|sat|sun)(?:day)?s?|wednesdays?|saturdays?"
_ORDINAL = r"(\d{1,2})(?:st|nd|rd|th)?|(first|second|third|fifteenth|twentieth)"
_DOM_WORDS = {"first": 1, "second": 2, "third": 3, "fifteenth": 15, "twentieth": 20}

# Every pattern is matched by RE2 (``skills.linear``): a message is anyone's (the owner's, a Telegram chat's, an
# email quoted in one), and with Python's re ``_DAYS`` backtracked exponentially ("every " and "tuesand" 22
# times took 3.4 s, each 7 characters more twice that).

# A clock time: "9", "9am", "9 a.m.", "9:30", "21:00", "9.30pm", "9 o'clock", "noon", "midnight". Not followed
# by a letter, digit or colon: the character after is read and left out of the match (``ends_at``).
_CLOCK = r"(?P<h>\d{1,2})(?:[:.](?P<mi>\d{2}))?\s*(?:(?P<ampm>[ap])\.?\s?m\.?|o'?clock)?|(?P<word>noon|midday|midnight)"
_TIME = linear.compile(rf"\b(?:at|@)\s*(?:{_CLOCK})(?P<ahead>)(?:[^\w:]|$)"
                       r"|\b(?P<h2>\d{1,2})(?:[:.](?P<mi2>\d{2}))?\s*(?P<ampm2>[ap])\.?\s?m\b\.?"
                       r"|\b(?P<word2>noon|midday|midnight)\b", ends_at="ahead")
_IN = linear.compile(rf"\b(?:in|after)\s+(?:(?P<half>half an hour)|(?P<quarter>a quarter of an hour|a quarter hour)|"
                     rf"(?P<n>{_NUM})(?P<andhalf>\s+and a half)?\s*{_UNIT}(?P<andhalf2>\s+and a half)?)\b")
_EVERY_N = linear.compile(rf"\bevery\s+(?:(?P<other>other)\s+|(?P<n>{_NUM})\s*)?{_UNIT}\b|\b(?P<hourly>hourly)\b")
_DAYS = linear.compile(
    rf"\b(?P<every>every|each|on|all)?\s*(?P<which>week\s?days?|work(?:ing)?\s?days?|business days?|"
    rf"weekends?|(?:{_WEEKDAY})(?:\s*(?:,|and|&|to|through|thru|-)\s*(?:{_WEEKDAY}))*)\b")
_DAILY = linear.compile(r"\b(?:every\s*day|everyday|each day|daily|every (?P<part>morning|afternoon|evening|night)|"
                        r"each (?P<part2>morning|afternoon|evening|night))\b")
_MONTHLY = linear.compile(rf"\b(?:on\s+)?(?:the\s+)?(?:{_ORDINAL})\s+(?:day\s+)?of\s+(?:every|each|the)\s+month\b"
                          rf"|\b(?:every|each)\s+month\s+on\s+the\s+(?:{_ORDINAL})\b"
                          rf"|\bmonthly\s+on\s+the\s+(?:{_ORDINAL})\b")
_ONCE_DAY = linear.compile(rf"\b(?P<day>today|tomorrow|tonight|this (?:morning|afternoon|evening)|"
                           rf"tomorrow (?:morning|afternoon|evening|night)|"
                           rf"(?:on\s+|next\s+|this\s+)?(?P<wd>{_WEEKDAY}))\b")
_PART = linear.compile(r"\b(?:in the |this |tomorrow |every |each )?(?P<part>morning|afternoon|evening|night|tonight)\b")

# Words that say more than when: a condition, a second schedule, an end, a count. A message with one
# of them is the model's to read (it may be a plain reminder still, but not one read with certainty).
_MORE = linear.compile(r"\b(?:if|unless|when|whenever|until|till|except|but|only|between|from|starting|"
                       r"before|after|times|twice|weekly|yearly|annually|year|first|last|next week|"
                       r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|june?|july?|aug(?:ust)?|sept?(?:ember)?|"
                       r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|and also|also|then|o'?clock)\b|\d|\?")

_REMIND = linear.compile(r"^(?:(?:please|pls|hey|hi|ok|okay)[,\s]+)?(?:can you\s+|could you\s+|would you\s+)?"
                         r"(?:remind me|send me a reminder|set a reminder|reminder)\b\s*(?:to|that|about|:)?\s*",
                         linear.IGNORECASE)


@dataclass(frozen=True)
class Reading:
    """What a message says about when: the trigger to store, and how the person put it."""

    trigger: dict[str, Any]
    """``trigger_config`` as ``memory_store_skill`` takes it: ``in_minutes``, ``at`` (aware, ISO), a cron
    ``schedule`` with its ``timezone``, or ``interval_minutes``."""
    said: str
    """The schedule in plain words ("weekdays at 09:00"), for a check's message and the reply."""
    repeats: bool
    spans: tuple[tuple[int, int], ...] = ()
    """Where in the (lower-cased) message the phrases read stand."""
    ambiguous: str | None = None
    """Why this reading is not certain (then neither a check nor the no-token path uses it)."""
    time_given: bool = True
    """A clock time was said (not a default: "every monday" alone is read at 09:00)."""
    weekdays: frozenset[int] | None = None
    """Monday 0 .. Sunday 6, for a repeating reading by day (None: not restricted by weekday)."""
    day_of_month: int | None = None
    at: datetime | None = None
    """A one-shot's moment (in the zone), for the check."""
    every_minutes: int | None = None
    """A repeating reading by period ("every 2 hours"): its period."""
    clock: time | None = None


# --- reading ------------------------------------------------------------------------------------


# Words left over once the phrases read are cut out that still speak of when: the reading then leaves them
# out ("every day at 9 and 5" read as 09:00 alone, "every 2 hours between 9 and 5" firing all night, "every
# other friday" read as one friday, "but not on holidays" dropped), so it is not sure.
_LEFT = linear.compile(r"\d|\b(?:other|alternate|between|except|but|not|never|no|holidays?|vacations?|until|till|"
                       r"through|thru|twice|thrice|times|half|quarter|past|every|each|daily|weekly|biweekly|"
                       r"fortnight(?:ly)?|monthly|yearly|annually|months?|weeks?|years?|noon|midnight|midday|"
                       rf"week\s?days?|weekends?|{_WEEKDAY}|"
                       r"jan(?:uary)?|feb(?:ruary)?|march|apr(?:il)?|june?|july?|aug(?:ust)?|sept?(?:ember)?|"
                       r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b|n't\b")


def read_schedule(message: str, now: datetime, zone: str) -> Reading | None:
    """The schedule ``message`` states, read at ``now`` (aware) in ``zone``; None when it states none
    this reader knows. A reading that is not certain carries ``ambiguous``: so does one that leaves words
    out that speak of when (a number, "other", "between", "and 5", "not on holidays"...): the reader is sure
    only when every word of when is accounted for."""
    reading = _read(message, now, zone)
    if reading is None or reading.ambiguous:
        return reading
    text = _lower(message)
    rest = text
    for start, end in sorted([*reading.spans, *(m.span() for m in _PART.finditer(text))], reverse=True):
        rest = rest[:start] + " " * (end - start) + rest[end:]
    left = [m.group(0) for m in _LEFT.finditer(rest)]
    if not left:
        return reading
    return replace(reading, ambiguous=f"words of when not read: {', '.join(dict.fromkeys(left))}")


def _read(message: str, now: datetime, zone: str) -> Reading | None:
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError(f"now must be a time-zone aware datetime (got {now.isoformat()})")
    if len(message) > MAX_MESSAGE:
        return None
    text = _lower(message)
    tz = ZoneInfo(zone)
    local = now.astimezone(tz)
    spans: list[tuple[int, int]] = []
    problems: list[str] = []

    relative = list(_IN.finditer(text))
    # "every day" and "every week" are rhythms of days, read below; "every 2 days" is a period.
    every = [m for m in _EVERY_N.finditer(text)
             if m.group("hourly") or m.group("n") or m.group("other") or m.group("unit")[0] not in "dw"]
    daily = list(_DAILY.finditer(text))
    monthly = list(_MONTHLY.finditer(text))
    times = [m for m in _TIME.finditer(text) if not _inside(m, relative + every + monthly)]
    days = [m for m in _DAYS.finditer(text) if m.group("which").strip() and not _inside(m, times)]
    parts = [m for m in _PART.finditer(text)]

    if len(times) > 1:
        problems.append("more than one time of day")
    clock, clock_problem = (_clock(times[0], parts) if times else (None, None))
    if clock_problem:
        problems.append(clock_problem)

    # "in 10 minutes": once, counted from now.
    if relative:
        if len(relative) > 1 or every or daily or monthly or times:
            problems.append("a delay together with another time")
        match = relative[0]
        minutes = _relative_minutes(match)
        if minutes is None or minutes <= 0:
            return None
        spans.append(match.span())
        trigger: dict[str, Any] = ({"in_hours": minutes // 60} if minutes % 60 == 0 and minutes >= 60
                                   else {"in_minutes": minutes})
        # Absolute time: Python adds to an aware datetime by its wall clock, which a clock change would skew.
        return Reading(trigger=trigger, said=f"in {_duration(minutes, one='1 ')}", repeats=False,
                       spans=tuple(spans), ambiguous="; ".join(problems) or None, at=(now.astimezone(UTC) + timedelta(minutes=minutes)).astimezone(tz))

    # "every 2 hours", "every 15 minutes", "hourly".
    if every:
        if len(every) > 1 or monthly:
            problems.append("more than one period")
        match = every[0]
        period = _period_minutes(match)
        if period is None or period <= 0:
            return None
        spans.append(match.span())
        spans += [m.span() for m in days[:1]]
        weekdays = _weekdays(days[0]) if days else None
        if daily or times or (days and weekdays is None):
            problems.append("a period together with a time of day")
        if period >= 1440:
            problems.append("a period of days (the model picks the time)")
        trigger = _periodic(period, weekdays, zone)
        said = f"every {_duration(period)}" + (f" on {_days_words(weekdays)}" if weekdays else "")
        return Reading(trigger=trigger, said=said, repeats=True, spans=tuple(spans),
                       ambiguous="; ".join(problems) or None, weekdays=weekdays, every_minutes=period)

    part = next((m.group("part") for m in daily if m.group("part") or m.group("part2")), None) or \
        next((m.group("part2") for m in daily if m.group("part2")), None)
    recurring_days = [m for m in days if _recurring(m)]
    once_days = [m for m in days if not _recurring(m)]

    # "every weekday at 9", "daily at 7:30pm", "every monday at 8am", "on the first of every month".
    if daily or recurring_days or monthly:
        if len(recurring_days) > 1 or (daily and recurring_days) or (monthly and (daily or recurring_days)):
            problems.append("more than one rhythm")
        if once_days or any(m.group("day") for m in _ONCE_DAY.finditer(text) if m.group("day") in
                                                                          ("today", "tomorrow")):
            problems.append("a rhythm together with one day")
        weekdays = _weekdays(recurring_days[0]) if recurring_days else None
        if recurring_days and weekdays is None:
            return None
        dom = _day_of_month(monthly[0]) if monthly else None
        if monthly and (dom is None or not 1 <= dom <= 28):
            problems.append("a day of the month that some months lack" if dom else "an unknown day of the month")
        for m in (*daily, *recurring_days, *monthly, *times):
            spans.append(m.span())
        given = clock is not None
        if clock is None:
            clock = PART_OF_DAY.get(part or "", DEFAULT_TIME)
        elif part in ("afternoon", "evening", "night") and clock.hour < 12 and not _has_ampm(times[0]):
            clock = time(clock.hour + 12, clock.minute)
        dow = "*" if weekdays is None else _cron_days(weekdays)
        schedule = f"{clock.minute} {clock.hour} {dom if dom else '*'} * {dow}"
        said = (f"the {_ordinal(dom)} of every month" if dom else
                "every day" if weekdays is None else _days_words(weekdays)) + f" at {clock:%H:%M}"
        return Reading(trigger={"schedule": schedule, "timezone": zone}, said=said, repeats=True,
                       spans=tuple(spans), ambiguous="; ".join(problems) or None, time_given=given,
                       weekdays=weekdays if weekdays is not None else (None if dom else frozenset(range(7))),
                       day_of_month=dom, clock=clock)

    # "tomorrow at 3pm", "at noon", "on friday at 9", "tonight at 9".
    once = list(_ONCE_DAY.finditer(text))
    if not once and clock is None:
        return None
    if len(once) > 1:
        problems.append("more than one day")
    day = once[0] if once else None
    word = day.group("day") if day else ""
    given = clock is not None
    part = next((m.group("part") for m in parts), None)
    if clock is None:
        clock = PART_OF_DAY.get(part or "", DEFAULT_TIME)
    elif part in ("afternoon", "evening", "night", "tonight") and clock.hour < 12 and not _has_ampm(times[0]):
        clock = time(clock.hour + 12, clock.minute)
    today = local.date()
    if word.startswith("tomorrow"):
        when = today + timedelta(days=1)
    elif word in ("today", "tonight") or word.startswith("this "):
        when = today
    elif day is not None and day.group("wd"):
        weekday = _weekday_index(day.group("wd"))
        if weekday is None:
            return None
        when = today + timedelta(days=(weekday - today.weekday()) % 7 or 7)
        if "this" in word and weekday == today.weekday():
            when = today
    else:
        when = today
    moment = _wall(when, clock, tz)
    if moment <= local:
        if day is None:
            moment = _wall(when + timedelta(days=1), clock, tz)  # "at 3pm" after 3pm: tomorrow's
        else:
            problems.append("that time has passed")
    for m in (*once, *times):
        spans.append(m.span())
    said = (f"{word} " if word else "") + f"at {clock:%H:%M}"
    return Reading(trigger={"at": moment.isoformat()}, said=said, repeats=False, spans=tuple(spans),
                   ambiguous="; ".join(problems) or None, time_given=given, at=moment, clock=clock)


def _lower(message: str) -> str:
    return linear.sub(r"\s+", " ", message.lower().replace("\u2019", "'")).strip()


def _inside(match: linear.Match, others: list[linear.Match]) -> bool:
    return any(o.start() <= match.start() and match.end() <= o.end() for o in others)


def _clock(match: linear.Match, parts: list[linear.Match]) -> tuple[time | None, str | None]:
    """The clock time a match names; a second value says why it is not certain."""
    word = match.group("word") or match.group("word2")
    if word:
        return (time(0, 0) if word == "midnight" else time(12, 0)), None
    hour = int(match.group("h") or match.group("h2"))
    minute = int(match.group("mi") or match.group("mi2") or 0)
    ampm = match.group("ampm") or match.group("ampm2")
    if minute > 59:
        return None, f"no minute {minute}"
    if ampm:
        if not 1 <= hour <= 12:
            return None, f"no hour {hour}{ampm}m"
        hour = hour % 12 + (12 if ampm == "p" else 0)
        return time(hour, minute), None
    if hour > 23:
        return None, f"no hour {hour}"
    named_part = any(m.group("part") in ("morning", "afternoon", "evening", "night", "tonight") for m in parts)
    if 1 <= hour <= 7 and not named_part and len(match.group("h") or match.group("h2") or "") == 1:
        # "at 3" is 03:00 or 15:00; "at 03" or "at 15" is not in doubt.
        return time(hour, minute), f"{hour} could be {hour:02d}:{minute:02d} or {hour + 12}:{minute:02d}"
    return time(hour, minute), None


def _has_ampm(match: linear.Match) -> bool:
    return bool(match.group("ampm") or match.group("ampm2") or match.group("word") or match.group("word2"))


def _number(word: str) -> int | None:
    word = word.strip()
    if word.isdigit():
        return int(word)
    return _NUMBERS.get(word)


def _relative_minutes(match: linear.Match) -> int | None:
    if match.group("half"):
        return 30
    if match.group("quarter"):
        return 15
    amount = _number(match.group("n"))
    if amount is None:
        return None
    unit = _UNIT_MINUTES[match.group("unit")[0]]
    half = unit // 2 if (match.group("andhalf") or match.group("andhalf2")) and unit >= 60 else 0
    return amount * unit + half


def _period_minutes(match: linear.Match) -> int | None:
    if match.group("hourly"):
        return 60
    unit = _UNIT_MINUTES[match.group("unit")[0]]
    if match.group("other"):
        return 2 * unit
    amount = _number(match.group("n")) if match.group("n") else 1
    return None if amount is None else amount * unit


def _periodic(minutes: int, weekdays: frozenset[int] | None, zone: str) -> dict[str, Any]:
    """A period as the cron-scheduling playbook writes it: a cron when it divides the hour or is the
    hour (fires on the clock), else an interval counted from now."""
    dow = "*" if weekdays is None else _cron_days(weekdays)
    if minutes < 60 and 60 % minutes == 0:
        minute = f"*/{minutes}" if minutes > 1 else "*"
        return {"schedule": f"{minute} * * * {dow}", "timezone": zone}
    if minutes == 60:
        return {"schedule": f"0 * * * {dow}", "timezone": zone}
    if weekdays is not None and minutes % 60 == 0 and 24 % (minutes // 60) == 0:
        return {"schedule": f"0 */{minutes // 60} * * {dow}", "timezone": zone}
    return {"interval_minutes": minutes}


def _recurring(match: linear.Match) -> bool:
    """"every monday", "mondays", "weekdays", "on weekdays": a rhythm; "monday", "on monday": one day."""
    which = match.group("which")
    if match.group("every") in ("every", "each", "all"):
        return True
    if linear.search(r"week\s?day|work|business|weekend", which):
        return True
    return which.endswith("s") and not which.endswith(("tues", "thurs", "weds"))


def _weekday_index(word: str) -> int | None:
    word = word.rstrip("s") if not word.endswith(("tues", "thurs")) else word
    for index, name in enumerate(_WEEKDAYS):
        if name.startswith(word[:3]):
            return index
    return None


def _weekdays(match: linear.Match) -> frozenset[int] | None:
    which = match.group("which")
    if linear.search(r"week\s?days?|work|business", which):
        return frozenset(range(5))
    if which.startswith("weekend"):
        return frozenset({5, 6})
    names = linear.findall(_WEEKDAY, which)
    indices = [_weekday_index(n) for n in names]
    if None in indices or not indices:
        return None
    if len(indices) == 2 and linear.search(r"\b(?:to|through|thru)\b|-", which):
        start, end = indices[0], indices[1]
        assert start is not None and end is not None
        return frozenset((start + k) % 7 for k in range((end - start) % 7 + 1))
    return frozenset(i for i in indices if i is not None)


def _day_of_month(match: linear.Match) -> int | None:
    digits = [g for g in match.groups() if g and g.isdigit()]
    if digits:
        return int(digits[0])
    words = [g for g in match.groups() if g in _DOM_WORDS]
    return _DOM_WORDS[words[0]] if words else None


def _cron_days(weekdays: frozenset[int]) -> str:
    cron = sorted((d + 1) % 7 for d in weekdays)  # cron: Sunday 0
    if cron == [1, 2, 3, 4, 5]:
        return "1-5"
    return ",".join(str(d) for d in cron)


def _wall(day: date, clock: time, tz: ZoneInfo) -> datetime:
    """The moment ``clock`` on ``day`` in ``tz``; a wall time a spring-forward gap swallows moves past the gap
    (02:30 becomes 03:30), as croniter's catch-up does."""
    naive = datetime.combine(day, clock)
    return naive.replace(tzinfo=tz).astimezone(UTC).astimezone(tz)


def _duration(minutes: int, one: str = "") -> str:
    """``minutes`` in words: "2 hours", "90 minutes"; a single unit as ``one`` says ("hour", "1 hour")."""
    for size, unit in ((1440, "day"), (60, "hour"), (1, "minute")):
        if minutes % size == 0:
            count = minutes // size
            return f"{one}{unit}" if count == 1 else f"{count} {unit}s"
    return f"{minutes} minutes"


def _days_words(weekdays: frozenset[int]) -> str:
    if weekdays == frozenset(range(5)):
        return "weekdays"
    if weekdays == frozenset({5, 6}):
        return "weekends"
    if weekdays == frozenset(range(7)):
        return "every day"
    names = [f"{_WEEKDAYS[d]}s" for d in sorted(weekdays)]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _ordinal(day: int | None) -> str:
    if day is None:
        return "?"
    suffix = "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


# --- the no-token path: a plain reminder --------------------------------------------------------


@dataclass(frozen=True)
class PlainReminder:
    """A message read whole as a reminder: when, and the text to send."""

    reading: Reading
    text: str
    """What to remind of ("check the oven"), as the person wrote it."""

    def skill(self, notifier_tool: str) -> dict[str, Any]:
        """The Direct-tier skill to propose: one call of the notifier with the reminder, no LLM at its fires."""
        text = self.text[:1].upper() + self.text[1:]
        name = f"reminder: {self.text}"[:60].rstrip()
        return {"name": name, "description": f"Reminds you {self.reading.said}: {self.text}.",
                "instructions": f"Remind the user: {text}.", "trigger_config": dict(self.reading.trigger),
                "execution_plan": [{"id": "remind", "toolName": notifier_tool,
                                    "parameters": {"message": f"Reminder: {text}"}}]}


MAX_REMINDER = 200
"""The longest reminder text read without a model."""


def looks_like_reminder(message: str) -> bool:
    """Cheap and clock-free: the message may be a plain reminder (then :func:`plain_reminder` decides)."""
    return len(message) <= MAX_MESSAGE and bool(linear.search(r"\bremind(?:er)?\b", message, linear.IGNORECASE))


def plain_reminder(message: str, now: datetime, zone: str) -> PlainReminder | None:
    """The reminder ``message`` asks for, when it is unambiguously a plain one: "remind me in 10 minutes to
    check the oven", "every weekday at 9 remind me to stand up". None for anything else (a condition, a
    second time, an hour in doubt, a task to do at fire time): that message is the model's."""
    if not looks_like_reminder(message):
        return None
    reading = read_schedule(message, now, zone)
    if reading is None or reading.ambiguous or not reading.time_given and not reading.every_minutes:
        return None
    text = _lower(message)
    # Cut the schedule's phrases out; what is left must be "remind me to <text>".
    rest = text
    for start, end in sorted(reading.spans, reverse=True):
        rest = rest[:start] + " " + rest[end:]
    # A time word left with nothing after it goes, the mark after it kept (re looked ahead at it).
    rest = linear.sub(r"\b(?:every|each|on|at)\s*([,.!]|$)", r" \1", rest)
    rest = linear.sub(r"\s+", " ", rest).strip(" ,.!;:")
    rest = linear.sub(r"^(?:and|then|please)\s+", "", rest)
    match = _REMIND.match(rest)
    if match is None:
        return None
    what = rest[match.end():].strip(" ,.!;:")
    what = linear.sub(r"\s+(?:please|pls|thanks|thank you)$", "", what).strip(" ,.!;:")
    if not what or len(what) > MAX_REMINDER or _MORE.search(what) or linear.search(r"\bremind", what):
        return None
    if linear.search(r"\b(?:every|each|daily|hourly|today|tomorrow|tonight|noon|midnight|morning|afternoon|evening|"
                     r"night|in|at|on)\s*$", what) or linear.match(r"(?:every|each|at|in|on)\b", what):
        return None  # a time word left dangling: part of the schedule was not read
    if linear.search(rf"\b(?:{_WEEKDAY}|week\s?days?|weekends?)\b", what):
        return None
    original = _original_case(message, what)
    return PlainReminder(reading=reading, text=original)


def _original_case(message: str, lowered: str) -> str:
    """``lowered`` as the person wrote it (their capitals), when it stands in the message as is."""
    flat = linear.sub(r"\s+", " ", message.replace("\u2019", "'")).strip()
    index = flat.lower().find(lowered)
    return flat[index:index + len(lowered)] if index >= 0 else lowered


# --- the check: a proposal against the message ------------------------------------------------


SPAN = 40
"""How many next fires of a proposed skill the check looks at."""


def contradictions(message: str, trigger: Any, fires: list[datetime], *, now: datetime, zone: str) -> list[str]:
    """How the proposed schedule (``trigger``, a TriggerConfig; ``fires``, its next fires the schedule keeps,
    aware, oldest first) contradicts what ``message`` says, in words for the owner: "you said weekdays; this
    fires every day". Empty when it agrees, or when the message says nothing this reader is sure of."""
    reading = read_schedule(message, now, zone)
    if reading is None or reading.ambiguous:
        return []
    kind = getattr(trigger, "kind", None)
    if kind is None:
        return []
    said = f"you said {reading.said}"
    if not reading.repeats:
        if kind != "at":
            return [f"{said}, once; this repeats ({trigger.describe()})"]
        if reading.at is None or not fires:
            return []
        actual = fires[0].astimezone(reading.at.tzinfo)
        relative = "in_minutes" in reading.trigger or "in_hours" in reading.trigger
        if relative:
            off = abs((actual - reading.at).total_seconds()) > 120  # the proposal's now is a moment later
        elif reading.time_given:
            off = actual.replace(second=0, microsecond=0) != reading.at.replace(second=0, microsecond=0)
        else:
            off = actual.date() != reading.at.date()
        return [f"{said} ({reading.at:%a %Y-%m-%d %H:%M}); this fires at {actual:%a %Y-%m-%d %H:%M}"] if off else []
    if kind == "at":
        return [f"{said}; this fires only once"]
    if len(fires) < 2:
        return []
    tz = ZoneInfo(zone)
    local = [f.astimezone(tz) for f in fires]
    # In UTC: Python subtracts two times of one zone by their wall clocks, which a clock change skews.
    utc = [f.astimezone(UTC) for f in fires]
    gaps = [(b - a).total_seconds() / 60 for a, b in zip(utc, utc[1:], strict=False)]
    period = min(gaps)
    problems = []
    if reading.every_minutes is not None:
        if round(period) != reading.every_minutes and reading.every_minutes < 1440:
            problems.append(f"{said}; this fires every {_duration(round(period))}")
        return problems
    if period < 22 * 60:  # more often than daily, where a time of day was said (a clock change makes 23 h)
        return [f"{said}; this fires every {_duration(round(period))}"]
    if reading.weekdays is not None:
        days = frozenset(f.weekday() for f in local)
        if days != reading.weekdays and len(local) >= 8:
            problems.append(f"you said {_days_words(reading.weekdays)}; this fires "
                            f"{'every day' if len(days) == 7 else 'on ' + _days_words(days)}")
    if reading.day_of_month is not None:
        doms = sorted({f.day for f in local})
        if doms != [reading.day_of_month]:
            problems.append(f"you said the {_ordinal(reading.day_of_month)} of the month; this fires on "
                            + ", ".join(_ordinal(d) for d in doms[:5]))
    if reading.time_given and reading.clock is not None:
        # By the most common: a spring-forward gap moves one fire a year (02:30 fires at 03:00).
        counted = Counter(f.time().replace(second=0, microsecond=0) for f in local)
        clocks = sorted(counted)
        if counted.most_common(1)[0][0] != reading.clock:
            problems.append(f"you said {reading.clock:%H:%M}; this fires at "
                            + ", ".join(f"{c:%H:%M}" for c in clocks[:4]))
    return problems
