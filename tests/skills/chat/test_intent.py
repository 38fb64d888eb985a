"""What the user's own words allow a structured turn (``skills.chat.intent``): a verb of deletion for a delete,
of change for an update, a when for a new skill, none of them for a question. (What a task needs from the
tools is checked against the catalog: tests/skills/chat/test_needs.py.)"""

from __future__ import annotations

import pytest

from skills.chat.intent import (
    allowed_actions,
    enabled_said,
    moved_to,
)

ALL = ["create", "update", "delete", "list", "reply"]


@pytest.mark.parametrize(("message", "allowed"), [
    ("what skills do I have?", ["list", "reply"]),
    ("when does the stand up reminder fire next?", ["list", "reply"]),
    ("which reminders fire at 9?", ["list", "reply"]),
    ("show me my skills", ["list", "reply"]),
    ("move the stand up reminder to 9:30", ["create", "update", "list", "reply"]),
    ("pause the morning inbox summary", ["update", "list", "reply"]),
    ("turn the water reminder back on", ["update", "list", "reply"]),
    ("delete the drink water reminder", ["delete", "list", "reply"]),
    ("I don't need the oven reminder anymore", ["delete", "list", "reply"]),
    ("stop the drink water reminder", ["update", "delete", "list", "reply"]),
    ("every weekday at 9 remind me to stretch", ["create", "list", "reply"]),
    ("send me a digest every friday evening", ["create", "list", "reply"]),
    ("tomorrow at 3pm call the bank", ["create", "list", "reply"]),
    ("remind me in an hour to check the oven", ["create", "list", "reply"]),
    ("can you remind me every day at 9 to stretch?", ["create", "list", "reply"]),
    ("hello", ["list", "reply"]),
])
def test_the_words_allow_what_they_ask_for(message: str, allowed: list[str]) -> None:
    assert allowed_actions([message], ALL) == allowed


def test_an_answer_to_the_models_question_carries_the_request_before_it() -> None:
    # "remind me to call mom at 6pm" -> "Every day, or once?" -> "once": the when was in the message before.
    assert "create" in allowed_actions(["remind me to call mom at 6pm", "just once"], ALL)
    assert "delete" in allowed_actions(["delete the water reminder", "the first one"], ALL)
    # Only the last two: a request three messages back is not this turn's.
    assert allowed_actions(["delete the water reminder", "thanks", "what do I have?"], ALL) == ["list", "reply"]


def test_only_what_was_offered() -> None:
    assert allowed_actions(["delete the water reminder"], ["create", "reply"]) == ["reply"]


@pytest.mark.parametrize(("message", "enabled"), [
    ("pause the morning inbox summary", False), ("disable the drink water reminder", False),
    ("turn off the stand up reminder", False), ("resume the morning inbox summary", True),
    ("turn the water reminder back on", True), ("move the stand up reminder to 9:30", None),
    ("pause it and resume the other", None),
])
def test_the_words_that_pause_or_resume(message: str, enabled: bool | None) -> None:
    assert enabled_said(message) is enabled


@pytest.mark.parametrize(("said", "cron", "moved"), [
    ("move the stand up reminder to 9:30", "0 9 * * 1-5", "30 9 * * 1-5"),
    ("make it fire at 10 instead", "0 9 * * 1-5", "0 10 * * 1-5"),
    ("change the morning inbox summary to 8am", "0 7 * * *", "0 8 * * *"),
    ("change it to 8pm", "0 7 1 * *", "0 20 1 * *"),
    ("move the evening digest to 7", "0 18 * * 5", "0 19 * * 5"),  # a bare hour, in the half it fires now
    ("set it for 12", "0 9 * * *", "0 12 * * *"),
    ("move it to 3", "0 9 * * *", None),  # 3 at night or in the afternoon: the model's to ask
    ("move it to every day at 9", "0 9 * * 1-5", None),  # more than a time
    ("move it to tomorrow at 9", "0 9 * * 1-5", None),
    ("move it from 9 to 10", "0 9 * * *", "0 10 * * *"),
    ("move it to 9:30, or at 10", "0 9 * * *", None),  # two times
    ("move it to 9:30", "*/5 * * * *", None),  # no one time of day to move
    ("move it to 25:00", "0 9 * * *", None),
])
def test_a_time_alone_moves_a_cron_and_keeps_its_days(said: str, cron: str, moved: str | None) -> None:
    assert moved_to(said, cron) == moved
