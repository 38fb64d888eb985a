"""Idempotency keys: readable, bounded, and the same for the same call of the same fire."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from skills.messages.agent import AgentLoopState
from skills.naming import chat_conversation_id
from skills.run.idempotency import (
    MAX_KEY_CHARS,
    call_key,
    chat_prefix,
    fire_id,
    loop_call_key,
    part,
    run_prefix,
    step_place,
)


def test_a_fire_is_named_by_its_scheduled_time_its_event_or_its_workflow() -> None:
    at = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)
    assert fire_id("schedule", scheduled_at=at, event_id=None, workflow_id="w") == "at-20261124T090000Z"
    paris = at.astimezone(timezone(timedelta(hours=1)))  # the same moment, written in another zone
    assert fire_id("schedule", scheduled_at=paris, event_id=None, workflow_id="w") == "at-20261124T090000Z"
    assert fire_id("schedule", scheduled_at=at + timedelta(microseconds=5), event_id=None,
                   workflow_id="w") == "at-20261124T090000000005Z"
    assert fire_id("event", scheduled_at=None, event_id="ev-42", workflow_id="w") == "event-ev-42"
    # The same id emitted again past the dedupe window is a new event: its run is a new fire.
    assert fire_id("event", scheduled_at=None, event_id="ev-42", workflow_id="w", event_time=at) == \
        "event-ev-42-at-20261124T090000Z"
    assert fire_id("manual", scheduled_at=at, event_id=None, workflow_id="q-manual-7") == "run-q-manual-7"
    assert fire_id("schedule", scheduled_at=None, event_id=None, workflow_id="q-7") == "run-q-7"


def test_keys_read_as_the_call_they_name() -> None:
    prefix = run_prefix(12, "at-20261124T090000Z")
    assert call_key(prefix, step_place("fetch"), 1) == "skill-12/at-20261124T090000Z/step-fetch/1"
    assert call_key(prefix, "preflight-2", 1) == "skill-12/at-20261124T090000Z/preflight-2/1"
    assert step_place("preflight-2") == "step-preflight-2"  # a step may have that name: it is not a check
    assert loop_call_key(prefix, "run-id", 3, 9, 2) == "skill-12/at-20261124T090000Z/turn-3/2"
    assert loop_call_key("", chat_conversation_id("telegram-42"), 1, 17, 1) == "chat-telegram-42/msg-17/1"
    assert chat_prefix("0193-run-id") == "conversation-0193-run-id"


def test_a_continued_loop_derives_the_same_keys_from_what_it_carries() -> None:
    state = AgentLoopState(conversation_id="r", model="m", tools=[], step=4,
                           key_prefix=run_prefix(3, "event-e1"))
    carried = AgentLoopState.model_validate_json(state.model_dump_json())
    assert loop_call_key(carried.key_prefix, carried.conversation_id, 5, 11, 1) == \
        loop_call_key(state.key_prefix, state.conversation_id, 5, 11, 1) == "skill-3/event-e1/turn-5/1"
    old = AgentLoopState.model_validate({"conversation_id": "r", "model": "m", "tools": []})  # from before keys
    assert old.key_prefix == ""


@given(st.text(max_size=2000), st.text(max_size=2000))
def test_segments_are_safe_bounded_and_never_merge_two_values(a: str, b: str) -> None:
    for text in (a, b):
        segment = part(text)
        assert len(segment) <= 80 and segment.isascii() and "/" not in segment and segment.isprintable()
    if a != b:
        assert part(a) != part(b)
    key = call_key(run_prefix(1, "event-" + part(a)), step_place(b), 1)
    assert len(key) <= MAX_KEY_CHARS and key.isprintable()
