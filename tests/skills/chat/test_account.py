"""The engine's account of a chat turn: the claim test on true and false claims, the effects, the correction."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from skills.chat.account import CLAIM_CHARS, NOTHING, acted, asks_for_change, claimed_act, correction, effects
from skills.messages.chat import ChatReply
from skills.owner.approvals import Approval

CLAIMS = [
    # The small model's own words, and the usual ways of saying a thing was done.
    ("Stored: Every weekday at 9 reminds me to stand up.", "Stored"),
    ("Done! I'll remind you in 10 minutes.", "Done"),
    ("I have created a skill that reminds you.", "I have created"),
    ("I've scheduled your reminder for 9am.", "I've scheduled"),
    ("Your reminder is set for 9:00.", "reminder is set"),
    ("Reminder set: check the oven in 10 minutes.", "Reminder set"),
    ("Sure! The reminder has been set up.", "reminder has been set up"),
    ("I'll remind you to stand up every weekday at 9.", "I'll remind you"),
    ("You will be reminded every Monday.", "You will be reminded"),
    ("Okay, I set up a reminder for you.", "I set up"),
    ("**Scheduled**: every monday at 8am", "Scheduled"),
    ("It was stored as skill 3.", "It was stored"),
    ("Skill created successfully.", "Skill created"),
    ("I have deleted the skill.", "I have deleted"),
    ("Great, I just added a reminder.", "I just added"),
    # Qwen2.5-Coder 1.5B's reply to "every morning at 7 read my outbox messages and send me a summary of
    # what is urgent", in a turn that proposed nothing.
    ("I will receive a summary of your outbox messages at 7 AM daily.", "I will receive a summary"),
    ("You'll receive a daily digest of your messages at 7.", "You'll receive a daily digest"),
    ("I'll send you a summary every Friday at 5pm.", "I'll send you"),
    ("You will get a notification every hour.", "You will get a notification"),
]

NOT_CLAIMS = [
    "Nothing was stored.",
    "Shall I set up a reminder for 9am?",
    "Would you like me to create it?",
    "I have not stored anything yet.",
    "I can't create that: no GitHub tool exists.",
    "Once you confirm, I'll remind you at 9.",
    "If you say yes, I'll remind you every day.",
    "You have 2 skills: water (every day at 9), stretch.",
    "Is the reminder set?",
    "Hello! What should I schedule?",
    "I could set up a reminder if you want.",
    "Tell me when you want to be reminded.",
    "I didn't create anything.",
    "To set up a reminder, tell me the time.",
    "Your skills: 'water' fires daily at 9; it is enabled.",
    "I'm unable to create that skill.",
    "Once you say yes, you will receive a summary every morning.",
    "If you want, I'll send you a summary every Friday.",
    "Would you like to receive a daily digest?",
    "You will get an answer when the run ends?",
]


@pytest.mark.parametrize(("reply", "claim"), CLAIMS)
def test_a_reply_that_says_an_act_was_done_claims_it(reply: str, claim: str) -> None:
    assert claimed_act(reply) == claim


@pytest.mark.parametrize("reply", NOT_CLAIMS)
def test_a_question_an_offer_or_a_denial_claims_nothing(reply: str) -> None:
    assert claimed_act(reply) is None


def test_the_claim_test_reads_a_bounded_part_of_a_long_reply() -> None:
    assert claimed_act("x" * CLAIM_CHARS + "\nStored.") is None
    assert claimed_act("a " * 100_000) is None  # linear: a long text without a claim is read quickly


def proposal(**fields: object) -> Approval:
    now = datetime(2026, 11, 22, 8, tzinfo=UTC)
    data = {"id": 3, "kind": "change", "request_key": "k", "tool": "memory_store_skill", "requested_at": now,
            "expires_at": now, "summary": "Create skill 'oven':\nwhen: once at ...",
            "arguments": {"data": {"name": "oven", "trigger_config": {"at": "2026-11-22T08:10:00"}}}}
    return Approval.model_validate({**data, **fields})


def test_effects_come_from_what_the_engine_recorded() -> None:
    made = [{"action": "created", "id": 7, "name": "water", "tier": "direct", "trigger": {"at": "x"},
             "next_fire": "2026-11-22T08:10:00+00:00"}, {"action": "proposed", "approval_id": 9}]
    found = effects(made, [proposal()])
    assert [(e.action, e.skill_id, e.name, e.approval_id) for e in found] == [
        ("created", 7, "water", None), ("proposed", None, None, 3)]
    assert found[1].trigger == {"at": "2026-11-22T08:10:00"} and found[1].tool == "memory_store_skill"
    assert found[1].summary == "proposed #3, NOT made: Create skill 'oven'"


def test_a_false_claim_is_corrected_and_a_true_one_is_not() -> None:
    said = "Stored: Every weekday at 9 reminds me to stand up."
    corrected = correction(said, [])
    assert corrected is not None and corrected.startswith("Nothing was stored: the model did not make a proposal.")
    assert correction(said, effects([], [proposal()])) is None
    assert correction("Hello! What should I schedule?", []) is None


def test_a_reply_ends_with_the_engines_account() -> None:
    lied = ChatReply(session_id="s", ok=True, reply="Stored: stand up at 9.")
    assert lied.effects == [] and lied.account_lines() == [lied.correction]
    plain = ChatReply(session_id="s", ok=True, reply="Hello!")
    assert plain.correction is None and plain.account_lines() == [NOTHING]
    # The engine's own words (an answer to a yes, a stopped turn's reason) are never corrected.
    engine = ChatReply(session_id="s", ok=True, reply="Stored skill 7", said_by="engine")
    assert engine.correction is None
    # --json carries the account as data; a reply read back (the client's side of the workflow) keeps it.
    dumped = lied.model_dump(mode="json")
    assert dumped["effects"] == [] and dumped["correction"] == lied.correction
    assert ChatReply.model_validate(dumped).correction == lied.correction


@pytest.mark.parametrize(("message", "asks"), [
    ("every weekday at 9 remind me to stand up", True),
    ("remind me in 10 minutes to check the oven", True),
    ("every monday at 8am send me a summary of my open github issues", True),
    ("delete the oven reminder", True),
    ("pause my morning summary", True),
    ("toolsmith: add a tool called by-chat", False),  # a matched skill's own tool, not a skill
    ("hi", False),
    ("what do I have?", False),
    ("thanks!", False),
])
def test_a_message_that_asks_for_a_skill_is_told_apart(message: str, asks: bool) -> None:
    assert asks_for_change(message) is asks


def test_a_tool_outside_the_skills_that_answered_is_accounted_for_and_may_be_what_the_reply_claims() -> None:
    reply = ChatReply(session_id="s", ok=True, reply="Done: by-chat is added.",
                      called=acted([("skill", True), ("changing_add_tool", True), ("run_script", False)]))
    assert [(e.action, e.tool) for e in reply.effects] == [("called", "changing_add_tool")]
    assert reply.correction is None and reply.account_lines() == ["called: changing_add_tool"]
    # Reads of the chat's own tools are no act: a "Stored" after them is still corrected.
    assert acted([("get_tool_catalog", True), ("memory_list_skills", True), ("memory_store_skill", False)]) == []


# "don't pause the stand up reminder, just move it to 10": the engine reads "pause" in the words and the update
# it made at once paused the skill and moved it. The change as the chat's tool router records it: the skill after,
# and the fields the update changed (its revision's diff).
MOVED_AT_TEN = {"schedule": "0 10 * * 1-5", "timezone": "Europe/Paris"}
PAUSED_AND_MOVED = {
    "action": "updated", "id": 4, "name": "stand up", "tier": "direct", "trigger": MOVED_AT_TEN, "next_fire": None,
    "enabled": False, "disabled_reason": "paused by its owner", "coming": [],
    "changed": [{"field": "enabled", "before": True, "after": False},
                {"field": "trigger_config", "before": {"schedule": "0 9 * * 1-5", "timezone": "Europe/Paris"},
                 "after": MOVED_AT_TEN}]}


def test_the_account_of_a_change_says_it_paused_the_skill_and_when_it_now_fires() -> None:
    reply = ChatReply(session_id="s", ok=True, reply="Moved it to 10.", changes=[PAUSED_AND_MOVED])
    [effect] = reply.effects
    assert (effect.action, effect.enabled, effect.changed) == ("updated", False, ["enabled", "trigger_config"])
    assert effect.summary == "updated skill 4 'stand up': paused; now fires cron '0 10 * * 1-5' (Europe/Paris)"
    assert reply.account_lines() == [
        "updated: skill 4 'stand up' (direct tier): paused; now fires cron '0 10 * * 1-5' (Europe/Paris)"]


def test_the_account_names_a_resume_and_every_other_field_a_change_touched() -> None:
    resumed = {**PAUSED_AND_MOVED, "enabled": True, "next_fire": "2026-11-23T09:00:00+00:00", "changed": [
        {"field": "enabled", "before": False, "after": True},
        {"field": "description", "before": "", "after": "Stand up and stretch"},
        {"field": "instructions", "before": "Remind me", "after": "Remind me to stand up"}]}
    reply = ChatReply(session_id="s", ok=True, reply="Resumed.", changes=[resumed])
    assert reply.account_lines() == [
        "updated: skill 4 'stand up' (direct tier, next fire 2026-11-23 10:00 Europe/Paris): resumed; "
        "changed description, instructions"]
    # An update that changed nothing says so; a stored skill's own fields (its revision counter) are not the owner's.
    same = {**resumed, "changed": [{"field": "revision", "before": 1, "after": 2}]}
    assert ChatReply(session_id="s", ok=True, reply="ok", changes=[same]).account_lines() == [
        "updated: skill 4 'stand up' (direct tier, next fire 2026-11-23 10:00 Europe/Paris): nothing changed"]


def test_a_change_whose_fields_are_not_known_still_says_the_skill_is_paused() -> None:
    # A change applied on the owner's yes carries the skill as it stands, not what it changed.
    unknown = {key: value for key, value in PAUSED_AND_MOVED.items() if key != "changed"}
    reply = ChatReply(session_id="s", ok=True, reply="ok", changes=[unknown])
    assert reply.account_lines() == ["updated: skill 4 'stand up' (direct tier): paused, it will not fire"]
    assert reply.effects[0].enabled is False and reply.effects[0].changed is None
