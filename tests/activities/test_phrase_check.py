"""The check of a proposal against the user's last message, on a real SQLite store."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from activities.phrase_check import checked_summary, read_instead
from adapters.store import Store
from skills.llm.agent import ChatMessage
from skills.llm.structured import ASK_AGAIN

NOW = datetime(2026, 11, 27, 10, 0, tzinfo=UTC)
PLAN = [{"id": "s", "toolName": "outbox_send_message", "parameters": {"message": "up"}}]


def spec(schedule: str, **more: object) -> dict[str, object]:
    return {"agent_id": "me", "name": "stand up", "trigger_type": "cron", "instructions": "x",
            "trigger_config": {"schedule": schedule, "timezone": "UTC"}, "execution_plan": PLAN, **more}


def conversation(tmp_path: Path, *messages: str) -> Store:
    store = Store.open(f"sqlite:///{tmp_path / 'skills.db'}")
    store.conversations.append_messages("chat:c", [ChatMessage(role="system", content="every day at 9am, says the prompt"),
                                                   *(ChatMessage(role="user", content=m) for m in messages),
                                                   ChatMessage(role="assistant", content="every hour, says the model")], NOW)
    return store


def test_a_new_skill_is_checked_against_the_users_last_message(tmp_path: Path) -> None:
    store = conversation(tmp_path, "hello", "every weekday at 9 remind me to stand up")
    summary = checked_summary(store, "chat:c", "memory_store_skill", {"data": spec("0 9 * * *")}, "Create skill",
                              now=NOW, zone="UTC")
    assert summary == "Create skill\ncheck: you said weekdays; this fires every day"
    agrees = checked_summary(store, "chat:c", "memory_store_skill", {"data": spec("0 9 * * 1-5")}, "Create skill",
                             now=NOW, zone="UTC")
    assert agrees == "Create skill"


def test_an_update_is_checked_only_against_a_stated_rhythm(tmp_path: Path) -> None:
    moved = conversation(tmp_path, "move it to 10am")  # a time, not "it fires once now"
    assert checked_summary(moved, "chat:c", "memory_update_skill", {"patch": spec("0 10 * * 1-5")}, "Change",
                           now=NOW, zone="UTC") == "Change"
    (tmp_path / "r").mkdir()
    rhythm = conversation(tmp_path / "r", "make it every monday at 8am")
    assert checked_summary(rhythm, "chat:c", "memory_update_skill", {"patch": spec("0 8 * * 2")}, "Change",
                           now=NOW, zone="UTC") == "Change\ncheck: you said mondays; this fires on tuesdays"


def test_other_changes_and_other_conversations_are_left_alone(tmp_path: Path) -> None:
    store = conversation(tmp_path, "every weekday at 9 remind me to stand up")
    assert checked_summary(store, "chat:c", "memory_delete_skill", {"skill_id": 1}, "Delete", now=NOW,
                           zone="UTC") == "Delete"
    assert checked_summary(store, "chat:other", "memory_store_skill", {"data": spec("0 9 * * *")}, "Create",
                           now=NOW, zone="UTC") == "Create"
    event = {"agent_id": "me", "name": "e", "trigger_type": "event", "instructions": "x",
             "trigger_config": {"event": "ping"}, "execution_plan": PLAN}
    assert checked_summary(store, "chat:c", "memory_store_skill", {"data": event}, "Create", now=NOW,
                           zone="UTC") == "Create"


def test_the_engines_note_is_not_the_users_message(tmp_path: Path) -> None:
    """Asked again structured (SKILLS_LLM_TOOLS=auto), the conversation's last user message is the engine's
    note: checked against it, a small model's "every hour" for "every weekday at 9" went unflagged."""
    store = conversation(tmp_path, "every weekday at 9 remind me to stand up", ASK_AGAIN)
    summary = checked_summary(store, "chat:c", "memory_store_skill", {"data": spec("0 9 * * *")}, "Create skill",
                              now=NOW, zone="UTC")
    assert summary == "Create skill\ncheck: you said weekdays; this fires every day"


def test_a_new_skill_takes_the_words_schedule_where_it_is_read_for_sure(tmp_path: Path) -> None:
    store = conversation(tmp_path, "every evening at 10pm send me the message: time to wind down")
    wrong = {**spec("22 * * * *"), "business_days_only": True}  # a 1.5B model's cron: minute 22 of every hour
    fields, lines = read_instead(store, "chat:c", wrong, now=NOW, zone="UTC") or ({}, [])
    assert fields["trigger_config"] == {"schedule": "0 22 * * *", "timezone": "UTC"}
    assert fields["business_days_only"] is False and fields["execution_plan"] == PLAN
    assert lines == ["check: the model proposed cron '22 * * * *' (UTC), but you said every day at 22:00; this fires "
                     "every hour: proposed as your words say instead"]
    assert read_instead(store, "chat:c", spec("0 22 * * *"), now=NOW, zone="UTC") is None  # agrees
    (tmp_path / "d").mkdir()
    default = conversation(tmp_path / "d", "every monday remind me to water the plants")  # read at 09:00 by default
    assert read_instead(default, "chat:c", spec("0 8 * * 1"), now=NOW, zone="UTC") is None
    (tmp_path / "a").mkdir()
    answer = conversation(tmp_path / "a", "remind me to drink water every day", "at 9am")  # "what time?" answered
    assert read_instead(answer, "chat:c", spec("0 9 * * *"), now=NOW, zone="UTC") is None  # not made a one-shot
    (tmp_path / "u").mkdir()
    unsure = conversation(tmp_path / "u", "sometime next week remind me to call mom")
    assert read_instead(unsure, "chat:c", spec("0 9 * * *"), now=NOW, zone="UTC") is None


def test_a_reading_the_engine_is_not_sure_of_never_replaces_the_models(tmp_path: Path) -> None:
    """Issue 52: "every day at 9 and 5" was read as 09:00 alone, for sure, and put in the place of the model's
    correct ``0 9,17 * * *`` "as your words say"."""
    store = conversation(tmp_path, "every day at 9 and 5 remind me to take my pills")
    assert read_instead(store, "chat:c", spec("0 9,17 * * *"), now=NOW, zone="UTC") is None
    assert checked_summary(store, "chat:c", "memory_store_skill", {"data": spec("0 9,17 * * *")}, "Create",
                           now=NOW, zone="UTC") == "Create"


def test_a_quoted_schedule_is_not_the_owners(tmp_path: Path) -> None:
    store = conversation(tmp_path, "> turn the heating off every evening at 10pm\n\nremind me about this daily")
    assert read_instead(store, "chat:c", spec("0 9 * * *"), now=NOW, zone="UTC") is None
