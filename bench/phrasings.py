"""Which reader of schedule phrasings to use: ``skills.when.phrasing`` against the maintained parsers.

Each phrasing below comes with the fires it means (its first three, from a pinned now, in
Europe/Berlin), written by hand. A reader is right on a phrasing when its first three fires are those;
a reader that declines (``skills.when.phrasing`` says it is in doubt, or reads nothing) is counted apart from
one that is wrong, since declining hands the message to the model and a wrong reading does not.
``recurrent`` (rrules, via dateutil) and ``dateparser`` (one date, ``search_dates`` over the message)
are measured when importable: they are not the engine's dependencies, so install them into a scratch
environment and add it to PYTHONPATH:

    python3.11 -m venv /tmp/pe && /tmp/pe/bin/pip install recurrent==0.4.1 dateparser==1.5.0
    PYTHONPATH=/tmp/pe/lib/python3.11/site-packages .venv/bin/python -m bench.phrasings

``--blind`` reads instead ``bench/data/phrasings.json``: 40 phrasings with their first fires (and whether the
reader should be in doubt), written for issue 52 by someone who never saw the reader, never edited. There a
reading is right when it is sure and its first fires are those (none in doubt), declined when it is in doubt,
and wrong when it is sure of other fires, or sure where its writer expects doubt and the fires differ.

``--part tuned`` reads only the even-numbered cases of a blind file (the ones a change may be set on), ``--part
held-out`` only the odd-numbered ones (read once, after a change, to see whether it holds on what it was not set
on); with no ``--part``, all of them. ``bench/chat_words.py`` splits its file the same way (``part``).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from croniter import croniter

from skills.when.phrasing import read_schedule

ZONE = ZoneInfo("Europe/Berlin")
NOW = datetime(2027, 3, 26, 16, 20, tzinfo=ZONE)
"""A Friday afternoon, two days before Berlin springs forward (the month and a clock change ahead)."""


def cron(expr: str, count: int = 3) -> list[datetime]:
    it = croniter(expr, NOW)
    return [it.get_next(datetime) for _ in range(count)]


def once(day: int, hour: int, minute: int = 0, month: int = 3) -> list[datetime]:
    return [datetime(2027, month, day, hour, minute, tzinfo=ZONE)]


def after(minutes: int) -> list[datetime]:
    return [(NOW.astimezone(UTC) + timedelta(minutes=minutes)).astimezone(ZONE)]


def every(minutes: int) -> list[datetime]:
    return [NOW + timedelta(minutes=minutes * k) for k in (1, 2, 3)]


# (message, its first three fires; for an interval, counted from now)
PHRASINGS: list[tuple[str, list[datetime]]] = [
    ("remind me in 10 minutes to check the oven", after(10)),
    ("in 45 minutes remind me to leave", after(45)),
    ("remind me in an hour to call back", after(60)),
    ("in half an hour, tea", after(30)),
    ("in 3 hours check the laundry", after(180)),
    ("in two hours take the cake out", after(120)),
    ("every weekday at 9 remind me to stand up", cron("0 9 * * 1-5")),
    ("weekdays at 8:30am standup notes", cron("30 8 * * 1-5")),
    ("every monday at 8am send me a summary", cron("0 8 * * 1")),
    ("every tuesday and thursday at 6pm gym", cron("0 18 * * 2,4")),
    ("every sunday at 10am call grandma", cron("0 10 * * 0")),
    ("every saturday at noon groceries", cron("0 12 * * 6")),
    ("tomorrow at 3pm dentist", once(27, 15)),
    ("tomorrow at 9:15 meeting", once(27, 9, 15)),
    ("tonight at 10pm take the pills", once(26, 22)),
    ("today at 6pm call the plumber", once(26, 18)),
    ("at noon tomorrow lunch with Sam", once(27, 12)),
    ("on monday at 9am pay rent", once(29, 9)),
    ("next friday at 5pm drinks", once(2, 17, month=4)),
    ("every 2 hours drink water", every(120)),
    ("every 30 minutes stretch", cron("*/30 * * * *")),
    ("every hour check the oven", cron("0 * * * *")),
    ("hourly ping", cron("0 * * * *")),
    ("every 90 minutes look away from the screen", every(90)),
    ("on the first of every month at 9 pay the bills", cron("0 9 1 * *")),
    ("on the 15th of each month at 10am invoice", cron("0 10 15 * *")),
    ("every morning at 6 run", cron("0 6 * * *")),
    ("every evening at 8 journal", cron("0 20 * * *")),
    ("daily at 7:30pm water the plants", cron("30 19 * * *")),
    ("every day at 21:00 read", cron("0 21 * * *")),
    ("every day at noon eat", cron("0 12 * * *")),
    ("at 11pm go to bed", once(26, 23)),
    ("every weekend at 10am pancakes", cron("0 10 * * 0,6")),
    ("every day at 2:30am backup check", cron("30 2 * * *")),  # Sunday's 02:30 is swallowed: 03:00
    ("every friday at 4pm timesheet", cron("0 16 * * 5")),
]


def ours(message: str) -> list[datetime] | None:
    reading = read_schedule(message, NOW, "Europe/Berlin")
    if reading is None or reading.ambiguous:
        return None
    trigger = reading.trigger
    if "schedule" in trigger:
        return cron(trigger["schedule"])
    if "interval_minutes" in trigger:
        return every(trigger["interval_minutes"])
    if "at" in trigger:
        return [datetime.fromisoformat(trigger["at"]).astimezone(ZONE)]
    minutes = trigger.get("in_minutes", 0) + 60 * trigger.get("in_hours", 0)
    return after(minutes)


def recurrent_reader() -> Callable[[str], list[datetime] | None] | None:
    try:
        from dateutil.rrule import rrulestr
        from recurrent.event_parser import RecurringEvent
    except ImportError:
        return None

    def read(message: str) -> list[datetime] | None:
        naive = NOW.replace(tzinfo=None)
        out = RecurringEvent(now_date=naive).parse(message)
        if out is None:
            return None
        if isinstance(out, datetime):
            return [out.replace(tzinfo=ZONE)]
        rule = rrulestr(out, dtstart=naive)
        fires = []
        moment = naive
        for _ in range(3):
            moment = rule.after(moment)
            if moment is None:
                break
            fires.append(moment.replace(tzinfo=ZONE))
        return fires or None

    return read


def dateparser_reader() -> Callable[[str], list[datetime] | None] | None:
    try:
        from dateparser.search import search_dates
    except ImportError:
        return None

    def read(message: str) -> list[datetime] | None:
        found = search_dates(message, languages=["en"], settings={
            "RELATIVE_BASE": NOW.replace(tzinfo=None), "PREFER_DATES_FROM": "future", "RETURN_AS_TIMEZONE_AWARE": False})
        if not found or len(found) != 1:
            return None
        return [found[0][1].replace(tzinfo=ZONE, second=0, microsecond=0)]

    return read


def same(got: list[datetime], want: list[datetime]) -> bool:
    # Wall clock to the minute, compared in UTC ("now" readings keep seconds of their own).
    def minutes(fires: list[datetime]) -> list[datetime]:
        return [f.astimezone(UTC).replace(second=0, microsecond=0) for f in fires]
    return minutes(got) == minutes(want)


BLIND = Path(__file__).parent / "data" / "phrasings.json"


PARTS = ("tuned", "held-out")


def part(cases: list[dict], argv: list[str]) -> tuple[list[dict], str]:
    """The cases of a blind file that ``--part tuned`` (the even-numbered) or ``--part held-out`` (the
    odd-numbered) names, and the name; all of them with no ``--part``."""
    if "--part" not in argv:
        return cases, "all"
    at = argv.index("--part") + 1
    name = argv[at] if at < len(argv) else ""
    if name not in PARTS:
        raise SystemExit(f"--part: one of {', '.join(PARTS)}, not {name!r}")
    return cases[PARTS.index(name)::2], name


def blind() -> None:
    """The engine's reader on the phrasings written blind (``--blind``)."""
    cases, name = part(json.loads(BLIND.read_text()), sys.argv)
    right = declined = wrong = doubted_right = 0
    for case in cases:
        want = [datetime.fromisoformat(f) for f in case["fires"]]
        got = ours(case["text"])
        if got is None:
            declined += 1
            continue
        if case["doubt"] and want and same(got[:len(want)], want):
            doubted_right += 1  # sure of the fires its writer would ask about, and those are the fires
        elif want and same(got[:len(want)], want):
            right += 1
        else:
            wrong += 1
            print(f"  wrong: {case['text']!r}: {[f'{g:%a %d %H:%M}' for g in got[:3]]} "
                  f"(want {[f'{w:%a %d %H:%M}' for w in want]}{', doubt' if case['doubt'] else ''})")
    doubts = sum(case["doubt"] for case in cases)
    print(f"{len(cases)} phrasings written blind (part: {name}; {doubts} its writer would ask about), now {NOW:%a %Y-%m-%d %H:%M %Z}")
    print(f"skills.when.phrasing right {right}  wrong {wrong}  declined {declined}  "
          f"sure where its writer has doubt, and right {doubted_right}")


def main() -> None:
    if "--blind" in sys.argv:
        blind()
        return
    readers: dict[str, Callable[[str], list[datetime] | None] | None] = {
        "skills.when.phrasing": ours, "recurrent 0.4.1": recurrent_reader(), "dateparser 1.5.0": dateparser_reader()}
    wide = "--show" in sys.argv
    print(f"{len(PHRASINGS)} phrasings, now {NOW:%a %Y-%m-%d %H:%M %Z}")
    for name, reader in readers.items():
        if reader is None:
            print(f"{name:18} not installed")
            continue
        right = declined = 0
        started = time.perf_counter()
        for message, want in PHRASINGS:
            try:
                got = reader(message)
            except Exception as e:  # a parser's crash is its wrong answer
                got = [] if e else None
            if got is None:
                declined += 1
            elif same(got, want):
                right += 1
            elif wide:
                print(f"  {name}: {message!r}: {[f'{g:%a %d %H:%M}' for g in got]} "
                      f"(want {[f'{w:%a %d %H:%M}' for w in want]})")
        took = (time.perf_counter() - started) / len(PHRASINGS) * 1000
        wrong = len(PHRASINGS) - right - declined
        print(f"{name:18} right {right:3} ({right / len(PHRASINGS):.0%})  wrong {wrong:3}  declined {declined:3}"
              f"  {took:.2f} ms a message")


if __name__ == "__main__":
    main()
