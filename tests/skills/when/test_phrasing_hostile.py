"""The phrase reader reads every chat message and every proposal's message, on the worker: no text may hold it.

A red-team pass found its weekday pattern backtracking exponentially: "remind me every " and ``tuesand`` 22
times and an ``x`` (171 characters) took 3.4 CPU seconds, each 7 characters more doubled it, and a message
at the reader's cap (400) would have held the worker's event loop for longer than a lifetime. The issue's
target: no message up to the chat's cap (2,000 characters) takes the reader over 50 ms. The bound asserted
is ten times that (``PER_MESSAGE``, CPU time: a loaded machine's waiting is not counted); the proof is the
engine, RE2, which has no backtracking (``skills.linear``).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from skills.chat.intent import MESSAGE_CHARS
from skills.spec.models import TriggerConfig
from skills.when.phrasing import MAX_MESSAGE, contradictions, plain_reminder, read_schedule
from tests.cpu import cpu_budget

NOW = datetime(2026, 11, 27, 10, 0, tzinfo=UTC)
PER_MESSAGE = 0.5
"""CPU seconds one message may take the reader (all three of its uses); it takes about a millisecond."""
DAILY = TriggerConfig(schedule="0 9 * * *", timezone="UTC")


def filled(head: str, piece: str, size: int, tail: str = "x") -> str:
    return (head + piece * size)[:size - len(tail)] + tail


ATTACK = "remind me every " + "tuesand" * 22 + "x"
"""The finding's message: 171 characters, 3.4 CPU seconds before."""

HOSTILE = {
    "the finding": ATTACK,
    "the finding at the reader's cap": filled("remind me every ", "tuesand", MAX_MESSAGE),
    "the finding at the chat's cap": filled("remind me every ", "tuesand", MESSAGE_CHARS),
    "weekdays joined, one letter short": filled("remind me every ", "monday and tuesday, thursda", MAX_MESSAGE),
    "weekday runs": filled("every ", "mondaystuesdays", MAX_MESSAGE),
    "separators between weekdays": filled("on ", "fri & sat - sun thru mon to ", MAX_MESSAGE, "xday"),
    "clock times": filled("remind me at ", "9:30 pm at 10 a.m. @ 7 o'clock ", MAX_MESSAGE),
    "clock digits with no end": filled("at ", "1:2.3:4 ", MAX_MESSAGE),
    "delays": filled("remind me in ", "an hour and a half in 2 minutes ", MAX_MESSAGE),
    "periods": filled("every ", "other 2 hours every ", MAX_MESSAGE),
    "days of the month": filled("on the ", "1st of every the 2nd day of the ", MAX_MESSAGE),
    "whitespace runs": filled("remind me every", " \t\u00a0\u2003", MAX_MESSAGE),
}


def read_all(message: str) -> tuple[object, ...]:
    """What each of the reader's three uses makes of ``message``."""
    return (read_schedule(message, NOW, "Europe/Berlin"), plain_reminder(message, NOW, "Europe/Berlin"),
            contradictions(message, DAILY, [NOW], now=NOW, zone="UTC"))


@pytest.mark.parametrize("name", list(HOSTILE))
def test_no_message_holds_the_phrase_reader(name: str) -> None:
    message = HOSTILE[name]
    with cpu_budget(PER_MESSAGE) as spent:
        read_all(message)
        took = spent()
    print(f"{name}: {len(message)} characters read in {took * 1000:.1f} CPU ms")
    assert took < PER_MESSAGE


def test_the_findings_message_is_read_for_what_it_is() -> None:
    # Not a weekday list: "tuesand" is no word the reader knows, so the message states no schedule.
    with cpu_budget(PER_MESSAGE):
        assert read_schedule(ATTACK, NOW, "UTC") is None
        assert plain_reminder(ATTACK, NOW, "UTC") is None
    # One letter from the attack is a real reading, and is read.
    reading = read_schedule("remind me every tues and thurs at 9am", NOW, "UTC")
    assert reading is not None and reading.said == "tuesdays and thursdays at 09:00"


def test_a_message_past_the_readers_cap_is_not_read() -> None:
    assert read_schedule("every monday at 9am " + " " * MAX_MESSAGE, NOW, "UTC") is None
    assert plain_reminder("remind me every monday at 9am " + " " * MAX_MESSAGE, NOW, "UTC") is None
