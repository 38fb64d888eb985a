"""What makes two failures one incident, and how long one lasted, as the notices say it."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from skills.incidents import CAUSE_LENGTH, cause_of, duration


def test_failures_that_differ_only_in_numbers_and_ids_have_one_cause() -> None:
    assert cause_of("webhook_post failed: timed out after 30 s (attempt 2)") == \
        cause_of("webhook_post failed: timed out after 31.5 s (attempt 3)")
    assert cause_of("call 4f3a9c2e-1b2c-4d5e failed: HTTP 503") == cause_of("call 9e8d7c6b-0a1b-2c3d failed: HTTP 502")
    assert cause_of("outbox_send_message failed: message is empty") != cause_of("outbox_list_messages failed: limit")
    assert cause_of("first line\nsecond line 1") == cause_of("first line\nanother second line")
    assert cause_of("") == "failed"


def test_a_hostile_summary_is_folded_in_bounded_time_and_length() -> None:
    hostile = ("1." * 50_000) + "x" + ("a" * 7 + "-") * 20_000
    started = time.perf_counter()
    cause = cause_of(hostile)
    assert time.perf_counter() - started < 0.5
    assert len(cause) <= CAUSE_LENGTH


def test_durations_read_as_a_person_would_say_them() -> None:
    start = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)
    assert duration(start, start + timedelta(seconds=40)) == "40 s"
    assert duration(start, start + timedelta(minutes=12, seconds=5)) == "12 min"
    assert duration(start, start + timedelta(hours=2, minutes=5)) == "2 h 05 min"
    assert duration(start, start + timedelta(days=3, hours=4)) == "3 days 4 h"
    assert duration(start, start - timedelta(minutes=1)) == "0 s"
