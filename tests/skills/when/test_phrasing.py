"""The schedule read from a person's words, with no model: the reading, the plain reminder, the check."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from skills.spec.normalize import NormalizeContext, normalize
from skills.when.calendar import upcoming
from skills.when.phrasing import contradictions, plain_reminder, read_schedule

BERLIN = "Europe/Berlin"
FRIDAY = datetime(2026, 11, 27, 10, 0, tzinfo=UTC)
"""11:00 in Berlin, a Friday."""

CASES = [
    # message, trigger, said
    ("remind me in 10 minutes to check the oven", {"in_minutes": 10}, "in 10 minutes"),
    ("in 2 hours", {"in_hours": 2}, "in 2 hours"),
    ("in half an hour", {"in_minutes": 30}, "in 30 minutes"),
    ("in an hour and a half", {"in_minutes": 90}, "in 90 minutes"),
    ("in 1 and a half hours", {"in_minutes": 90}, "in 90 minutes"),
    ("in five mins", {"in_minutes": 5}, "in 5 minutes"),
    ("in an hour", {"in_hours": 1}, "in 1 hour"),
    ("in 3 days", {"in_hours": 72}, "in 3 days"),
    ("every weekday at 9", {"schedule": "0 9 * * 1-5", "timezone": BERLIN}, "weekdays at 09:00"),
    ("every working day at 9am", {"schedule": "0 9 * * 1-5", "timezone": BERLIN}, "weekdays at 09:00"),
    ("on weekdays at 17:30", {"schedule": "30 17 * * 1-5", "timezone": BERLIN}, "weekdays at 17:30"),
    ("every monday at 8am", {"schedule": "0 8 * * 1", "timezone": BERLIN}, "mondays at 08:00"),
    ("mondays at 10am", {"schedule": "0 10 * * 1", "timezone": BERLIN}, "mondays at 10:00"),
    ("every monday and thursday at 8:15", {"schedule": "15 8 * * 1,4", "timezone": BERLIN},
     "mondays and thursdays at 08:15"),
    ("every mon, wed and fri at 7pm", {"schedule": "0 19 * * 1,3,5", "timezone": BERLIN},
     "mondays, wednesdays and fridays at 19:00"),
    ("every monday through friday at 7am", {"schedule": "0 7 * * 1-5", "timezone": BERLIN}, "weekdays at 07:00"),
    ("every weekend at 10", {"schedule": "0 10 * * 0,6", "timezone": BERLIN}, "weekends at 10:00"),
    ("every sunday at 8pm", {"schedule": "0 20 * * 0", "timezone": BERLIN}, "sundays at 20:00"),
    ("tomorrow at 3pm", {"at": "2026-11-28T15:00:00+01:00"}, "tomorrow at 15:00"),
    ("tomorrow at 15:00", {"at": "2026-11-28T15:00:00+01:00"}, "tomorrow at 15:00"),
    ("today at 5pm", {"at": "2026-11-27T17:00:00+01:00"}, "today at 17:00"),
    ("tonight at 9", {"at": "2026-11-27T21:00:00+01:00"}, "tonight at 21:00"),
    ("at noon", {"at": "2026-11-27T12:00:00+01:00"}, "at 12:00"),
    ("at 9am", {"at": "2026-11-28T09:00:00+01:00"}, "at 09:00"),  # 9am has passed: tomorrow's
    ("at midnight", {"at": "2026-11-28T00:00:00+01:00"}, "at 00:00"),
    ("on friday at 9", {"at": "2026-12-04T09:00:00+01:00"}, "on friday at 09:00"),
    ("next monday at 8:30", {"at": "2026-11-30T08:30:00+01:00"}, "next monday at 08:30"),
    ("every 2 hours", {"interval_minutes": 120}, "every 2 hours"),
    ("every other hour", {"interval_minutes": 120}, "every 2 hours"),
    ("every 90 minutes", {"interval_minutes": 90}, "every 90 minutes"),
    ("every 15 minutes", {"schedule": "*/15 * * * *", "timezone": BERLIN}, "every 15 minutes"),
    ("every minute", {"schedule": "* * * * *", "timezone": BERLIN}, "every minute"),
    ("every hour", {"schedule": "0 * * * *", "timezone": BERLIN}, "every hour"),
    ("hourly", {"schedule": "0 * * * *", "timezone": BERLIN}, "every hour"),
    ("every hour on weekdays", {"schedule": "0 * * * 1-5", "timezone": BERLIN}, "every hour on weekdays"),
    ("every morning at 6", {"schedule": "0 6 * * *", "timezone": BERLIN}, "every day at 06:00"),
    ("every evening at 7", {"schedule": "0 19 * * *", "timezone": BERLIN}, "every day at 19:00"),
    ("daily at 7:30pm", {"schedule": "30 19 * * *", "timezone": BERLIN}, "every day at 19:30"),
    ("every day at noon", {"schedule": "0 12 * * *", "timezone": BERLIN}, "every day at 12:00"),
    ("each day at 08:00", {"schedule": "0 8 * * *", "timezone": BERLIN}, "every day at 08:00"),
    ("on the first of every month", {"schedule": "0 9 1 * *", "timezone": BERLIN},
     "the 1st of every month at 09:00"),
    ("on the 15th of each month at 10am", {"schedule": "0 10 15 * *", "timezone": BERLIN},
     "the 15th of every month at 10:00"),
    ("monthly on the 2nd at 9", {"schedule": "0 9 2 * *", "timezone": BERLIN}, "the 2nd of every month at 09:00"),
    ("every month on the 1st at 8am", {"schedule": "0 8 1 * *", "timezone": BERLIN},
     "the 1st of every month at 08:00"),
]


@pytest.mark.parametrize(("message", "trigger", "said"), CASES, ids=[c[0] for c in CASES])
def test_common_phrasings_are_read(message: str, trigger: dict[str, object], said: str) -> None:
    reading = read_schedule(message, FRIDAY, BERLIN)
    assert reading is not None and reading.ambiguous is None
    assert reading.trigger == trigger
    assert reading.said == said


CTX = NormalizeContext(now=FRIDAY, default_timezone=BERLIN, default_agent_id="me")


@pytest.mark.parametrize("now", [FRIDAY, datetime(2027, 3, 27, 23, 30, tzinfo=UTC),  # Berlin springs forward
                                 datetime(2027, 10, 30, 22, 0, tzinfo=UTC),  # Berlin falls back
                                 datetime(2028, 2, 28, 21, 0, tzinfo=UTC),  # leap-year month end
                                 datetime(2026, 12, 31, 22, 59, tzinfo=UTC)])  # the last minute of a year
@pytest.mark.parametrize(("message", "trigger", "said"), CASES, ids=[c[0] for c in CASES])
def test_every_reading_is_a_trigger_the_engine_takes_and_fires_as_said(
        now: datetime, message: str, trigger: dict[str, object], said: str) -> None:
    """Property: whatever ``now``, a reading normalizes, fires after now, and its fires are what it says."""
    reading = read_schedule(message, now, BERLIN)
    assert reading is not None
    if reading.ambiguous:  # "today at 5pm" after 5pm: the model asks; nothing else may be in doubt
        assert reading.ambiguous == "that time has passed" and message.startswith(("today", "tonight"))
        return
    spec = normalize({"name": "x", "instructions": "x", "trigger_config": reading.trigger},
                     NormalizeContext(now=now, default_timezone=BERLIN, default_agent_id="me")).spec
    fires = [f.at for f in upcoming(spec, anchor=now, now=now, count=20)]
    assert fires and all(f > now for f in fires)
    zone = ZoneInfo(BERLIN)
    local = [f.astimezone(zone) for f in fires]
    if not reading.repeats:
        assert len(fires) == 1
        if reading.every_minutes is None and "in_minutes" not in reading.trigger and "in_hours" not in reading.trigger:
            assert local[0].time() == reading.clock
        else:
            assert abs(fires[0] - reading.at) < timedelta(seconds=1)  # type: ignore[operator]
        return
    assert contradictions(message, spec.trigger_config, fires, now=now, zone=BERLIN) == []
    if reading.weekdays is not None and reading.every_minutes is None:
        assert {f.weekday() for f in local} <= reading.weekdays
    if reading.day_of_month is not None:
        assert {f.day for f in local} == {reading.day_of_month}
    if reading.clock is not None and reading.every_minutes is None:
        assert {f.time() for f in local} == {reading.clock}


def test_a_one_shot_across_a_clock_change_is_the_wall_time_said() -> None:
    # Saturday 27 March 2027, 23:30 UTC: Berlin springs forward at 02:00 on Sunday.
    night = datetime(2027, 3, 27, 23, 30, tzinfo=UTC)
    reading = read_schedule("tomorrow at 9am", night, BERLIN)
    assert reading is not None and reading.trigger == {"at": "2027-03-29T09:00:00+02:00"}  # 00:30 local: Sunday
    sunday = read_schedule("today at 9am", night, BERLIN)
    assert sunday is not None and sunday.trigger == {"at": "2027-03-28T09:00:00+02:00"}
    # A wall time the gap swallows is read past the gap, as croniter's catch-up fire.
    gap = read_schedule("today at 02:30", night, BERLIN)
    assert gap is not None and gap.trigger == {"at": "2027-03-28T03:30:00+02:00"}
    # "in 2 hours" is absolute time: across the change it is 2 real hours.
    later = read_schedule("in 2 hours", night, BERLIN)
    assert later is not None and later.at == night + timedelta(hours=2)


def test_month_and_year_ends() -> None:
    new_year = datetime(2026, 12, 31, 22, 59, tzinfo=UTC)  # 23:59 in Berlin
    assert read_schedule("tomorrow at 9", new_year, BERLIN).trigger == {"at": "2027-01-01T09:00:00+01:00"}
    leap = datetime(2028, 2, 28, 21, 0, tzinfo=UTC)  # Monday 28 Feb, 22:00 in Berlin
    assert read_schedule("tomorrow at 8am", leap, BERLIN).trigger == {"at": "2028-02-29T08:00:00+01:00"}
    assert read_schedule("on wednesday at 8am", leap, BERLIN).trigger == {"at": "2028-03-01T08:00:00+01:00"}
    # Not every month has a 31st (nor a 29th): the model decides what is meant.
    assert read_schedule("on the 31st of every month at 9", leap, BERLIN).ambiguous


@pytest.mark.parametrize(("message", "why"), [
    ("remind me at 3 to call mum", "3 could be 03:00 or 15:00"),
    ("every day at 5:30", "5 could be 05:30 or 17:30"),
    ("at 9am and at 5pm", "more than one time of day"),
    ("in 10 minutes and every hour", "a delay together with another time"),
    ("every day at 25 o'clock", "no hour 25"),
    ("today at 9am", "that time has passed"),
    ("every monday and every friday at 9", "more than one rhythm"),
    ("every 2 days", "a period of days (the model picks the time)"),
])
def test_what_is_in_doubt_is_said_to_be(message: str, why: str) -> None:
    reading = read_schedule(message, FRIDAY, BERLIN)
    assert reading is not None and reading.ambiguous is not None and why in reading.ambiguous


@pytest.mark.parametrize("message", ["hello there", "what can you do?", "delete the stretch skill",
                                     "list my skills", "x" * 500, "summarize my inbox"])
def test_no_schedule_no_reading(message: str) -> None:
    assert read_schedule(message, FRIDAY, BERLIN) is None


def test_now_must_be_aware() -> None:
    with pytest.raises(ValueError, match="now must be a time-zone aware"):
        read_schedule("in 5 minutes", datetime(2026, 1, 1), BERLIN)  # noqa: DTZ001


# --- the plain reminder ----------------------------------------------------------------------------


@pytest.mark.parametrize(("message", "text", "trigger"), [
    ("remind me in 10 minutes to check the oven", "check the oven", {"in_minutes": 10}),
    ("every weekday at 9 remind me to stand up", "stand up", {"schedule": "0 9 * * 1-5", "timezone": BERLIN}),
    ("Remind me to call Mum tomorrow at 3pm", "call Mum", {"at": "2026-11-28T15:00:00+01:00"}),
    ("remind me every hour to drink water", "drink water", {"schedule": "0 * * * *", "timezone": BERLIN}),
    ("please remind me to stretch every 2 hours", "stretch", {"interval_minutes": 120}),
    ("In half an hour, remind me to take the pizza out.", "take the pizza out", {"in_minutes": 30}),
    ("every monday at 8am remind me about the team meeting", "the team meeting",
     {"schedule": "0 8 * * 1", "timezone": BERLIN}),
    ("daily at 7:30pm remind me to water the plants", "water the plants",
     {"schedule": "30 19 * * *", "timezone": BERLIN}),
    ("remind me that the bins go out tonight at 8pm", "the bins go out", {"at": "2026-11-27T20:00:00+01:00"}),
])
def test_plain_reminders_are_read_whole(message: str, text: str, trigger: dict[str, object]) -> None:
    reminder = plain_reminder(message, FRIDAY, BERLIN)
    assert reminder is not None and reminder.text == text and reminder.reading.trigger == trigger
    skill = reminder.skill("outbox_send_message")
    assert skill["execution_plan"] == [{"id": "remind", "toolName": "outbox_send_message",
                                        "parameters": {"message": f"Reminder: {text[0].upper()}{text[1:]}"}}]
    spec = normalize(skill, CTX).spec
    assert spec.tier == "direct" and spec.trigger_config is not None


@pytest.mark.parametrize("message", [
    "remind me to call mum",  # no time: ask when
    "remind me at 3 to call mum",  # 03:00 or 15:00
    "remind me in 10 minutes if it rains",  # a condition
    "every morning remind me to stretch",  # a rhythm with no time said
    "remind me every day at 9 until friday to stretch",  # an end
    "remind me every weekday at 9 to stand up, except on holidays",
    "every monday at 8am send me a summary of my open github issues",  # a task, not a reminder
    "remind me in 10 minutes and every hour after to check the oven",
    "remind me on march 3 at 9am to renew the passport",  # a date this reader does not know
    "remind me tomorrow at 9 to call mum and remind me friday at 5pm to call dad",
    "what reminders do I have?",
    "remind me in 10 minutes to check the oven? or in 20",
    "remind me tomorrow morning to call the bank",
    "remind me to take 2 pills at 9am every day",  # numbers in the text: the model reads them
    "delete my reminder to stand up",
    "set the stand up reminder to every weekday at 10",
    "remind " + "me " * 200 + "in 5 minutes to x",
])
def test_anything_less_plain_is_the_models(message: str) -> None:
    assert plain_reminder(message, FRIDAY, BERLIN) is None


# --- the check -------------------------------------------------------------------------------------


def _fires(trigger: dict[str, object], now: datetime = FRIDAY) -> tuple[object, list[datetime]]:
    spec = normalize({"name": "x", "instructions": "x", "trigger_config": trigger},
                     NormalizeContext(now=now, default_timezone=BERLIN, default_agent_id="me")).spec
    return spec.trigger_config, [f.at for f in upcoming(spec, anchor=now, now=now, count=40) if not f.skipped]


@pytest.mark.parametrize(("message", "trigger", "flag"), [
    ("every weekday at 9 remind me to stand up", {"schedule": "0 9 * * *"},
     "you said weekdays; this fires every day"),
    ("every weekday at 9 remind me to stand up", {"schedule": "0 21 * * 1-5"},
     "you said 09:00; this fires at 21:00"),
    ("every monday at 8am", {"schedule": "0 8 * * 2"}, "you said mondays; this fires on tuesdays"),
    ("remind me in 10 minutes to check the oven", {"schedule": "*/10 * * * *"},
     "you said in 10 minutes, once; this repeats (cron '*/10 * * * *' (Europe/Berlin))"),
    ("remind me in 10 minutes to check the oven", {"in_minutes": 60},
     "you said in 10 minutes (Fri 2026-11-27 11:10); this fires at Fri 2026-11-27 12:00"),
    ("every day at 7am", {"in_minutes": 5}, "you said every day at 07:00; this fires only once"),
    ("every 2 hours", {"interval_minutes": 60}, "you said every 2 hours; this fires every hour"),
    ("every day at 9", {"schedule": "0 * * * *"}, "you said every day at 09:00; this fires every hour"),
    ("tomorrow at 3pm", {"at": "2026-11-28T03:00:00"}, "you said tomorrow at 15:00 (Sat 2026-11-28 15:00); "
                                                      "this fires at Sat 2026-11-28 03:00"),
    ("on the first of every month at 9", {"schedule": "0 9 2 * *"},
     "you said the 1st of the month; this fires on 2nd"),
])
def test_a_proposal_that_contradicts_the_message_is_flagged(message: str, trigger: dict[str, object],
                                                            flag: str) -> None:
    config, fires = _fires(trigger)
    assert flag in contradictions(message, config, fires, now=FRIDAY, zone=BERLIN)


@pytest.mark.parametrize(("message", "trigger"), [
    ("every weekday at 9 remind me to stand up", {"schedule": "0 9 * * 1-5"}),
    ("every weekday at 9", {"schedule": "0 9 * * *", "business_days_only": True}),
    ("every 2 hours", {"schedule": "0 */2 * * *"}),  # on the clock, or from now: both every 2 hours
    ("every 2 hours", {"interval_minutes": 120}),
    ("remind me in 10 minutes", {"in_minutes": 10}),
    ("tomorrow at 3pm", {"at": "2026-11-28T15:00:00"}),
    ("every hour", {"interval_minutes": 60}),
    ("remind me at 3 to call", {"schedule": "0 3 * * *"}),  # in doubt: no flag either way
    ("make me a skill that checks the news", {"schedule": "0 7 * * *"}),  # nothing said of when
])
def test_a_proposal_that_agrees_or_a_message_in_doubt_is_not_flagged(message: str, trigger: dict[str, object]) -> None:
    data = dict(trigger)
    skip = data.pop("business_days_only", False)
    spec = normalize({"name": "x", "instructions": "x", "trigger_config": data, "business_days_only": skip},
                     CTX).spec
    fires = [f.at for f in upcoming(spec, anchor=FRIDAY, now=FRIDAY, count=40) if not f.skipped]
    assert contradictions(message, spec.trigger_config, fires, now=FRIDAY, zone=BERLIN) == []


# --- sure only when every word of when is accounted for (issue 52) -------------------------------------------

@pytest.mark.parametrize(("message", "left"), [
    ("every 2 hours between 9 and 5 remind me to stretch", "between"),  # was 0 */2 * * *: firing all night
    ("every other friday at 4pm remind me to submit my timesheet", "other"),  # was a one-shot
    ("every day at 9 and 5 remind me to take my pills", "5"),  # was 09:00 alone
    ("every weekday at 8 but not on holidays remind me to leave", "but"),  # the holidays were dropped
    ("tomorrow at quarter to 9 remind me to leave", "quarter"),  # was 09:00
    ("at half past 7 every morning remind me to feed the cat", "half"),  # was 08:00
    ("every weekday at 9:00 and 13:00 remind me to check the queue", "1"),  # was 09:00 alone
    ("on the last day of the month at 6pm remind me to send my invoices", "month"),  # was today at 18:00
])
def test_words_of_when_left_over_are_doubt(message: str, left: str) -> None:
    reading = read_schedule(message, FRIDAY, BERLIN)
    assert reading is not None and reading.ambiguous is not None and left in reading.ambiguous
    assert plain_reminder(message, FRIDAY, BERLIN) is None
    # And a proposal is not flagged against a reading the reader is not sure of.
    assert contradictions(message, None, [], now=FRIDAY, zone=BERLIN) == []


def test_the_reminders_own_words_are_no_doubt() -> None:
    reading = read_schedule("every weekday at 9 remind me to stand up and stretch", FRIDAY, BERLIN)
    assert reading is not None and reading.ambiguous is None


BLIND = json.loads((Path(__file__).parents[3] / "bench" / "data" / "phrasings.json").read_text())
"""40 phrasings with their first fires, written for issue 52 by someone who never saw the reader (never edited)."""


@pytest.mark.parametrize("case", BLIND, ids=[case["text"][:40] for case in BLIND])
def test_a_phrasing_written_blind_is_read_right_or_left_to_the_model(case: dict[str, Any]) -> None:
    from bench.phrasings import NOW, ours, same  # the bench's reading: the reader's trigger, its first fires
    assert NOW == datetime(2027, 3, 26, 16, 20, tzinfo=ZoneInfo(BERLIN))  # the writer's now
    got = ours(case["text"])
    want = [datetime.fromisoformat(fire) for fire in case["fires"]]
    if got is not None:  # sure: then right (10 were sure and wrong before issue 52's fix)
        assert want and same(got[:len(want)], want), (case["text"], got)
