"""Tool calls written as text (skills.llm.textcalls), and structured answers (skills.llm.structured): what is read
as a call, and what stays text."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import jsonschema
import pytest

from skills.llm.structured import (
    MAX_SKILLS,
    answer_schema,
    instruction,
    known_skills,
    structured_calls,
    structured_read,
    words_name,
)
from skills.llm.textcalls import MAX_CALLS, MAX_CHARS, TextCall, imagined_calls, read_text_calls
from skills.spec.models import Skill, TriggerConfig

OFFERED = ["get_tool_catalog", "memory_store_skill", "memory_update_skill", "memory_list_skills",
           "memory_delete_skill"]
SKILL = {"name": "oven", "instructions": "Check the oven", "trigger_config": {"in_minutes": 10}}


def names(read: tuple[list, str] | None) -> list[str]:
    assert read is not None
    return [call.name for call in read[0]]


@pytest.mark.parametrize("text", [
    json.dumps({"name": "memory_store_skill", "arguments": SKILL}),
    json.dumps({"name": "memory_store_skill", "parameters": SKILL}),
    json.dumps({"function": "memory_store_skill", "parameters": SKILL}),
    json.dumps({"type": "function", "function": {"name": "memory_store_skill", "arguments": json.dumps(SKILL)}}),
    "```json\n" + json.dumps({"name": "memory_store_skill", "arguments": SKILL}) + "\n```",
    "<tool_call>\n" + json.dumps({"name": "memory_store_skill", "arguments": SKILL}) + "\n</tool_call>",
])
def test_a_call_written_as_text_is_read(text: str) -> None:
    read = read_text_calls(text, OFFERED)
    assert names(read) == ["memory_store_skill"]
    assert read is not None and json.loads(read[0][0].arguments) == SKILL


def test_text_around_qwen_blocks_stays_the_reply() -> None:
    text = ("Let me set that up.\n<tool_call>{\"name\": \"get_tool_catalog\", \"arguments\": {}}</tool_call>\n"
            "<tool_call>{\"name\": \"memory_list_skills\", \"arguments\": {}}</tool_call>")
    read = read_text_calls(text, OFFERED)
    assert names(read) == ["get_tool_catalog", "memory_list_skills"]
    assert read is not None and read[1] == "Let me set that up."


@pytest.mark.parametrize("text", [
    "Stored: every weekday at 9.",  # words
    json.dumps({"name": "github_list_issues", "arguments": {}}),  # a tool not offered
    json.dumps({"name": "memory_store_skill", "arguments": SKILL, "note": "x"}),  # data, not a call
    json.dumps({"name": "memory_store_skill", "arguments": ["not", "an", "object"]}),
    json.dumps({"action": "create", "skill": SKILL}),  # a structured answer outside structured mode
    "Here it is: " + json.dumps({"name": "memory_store_skill", "arguments": SKILL}),  # not the whole reply
    json.dumps([{"name": "memory_list_skills", "arguments": {}}] * (MAX_CALLS + 1)),  # too many
    "<tool_call>" + json.dumps({"name": "rm_rf", "arguments": {}}) + "</tool_call>",
    "{\"name\": \"memory_store_skill\", \"arguments\": {" + "\"a\": 1, " * (MAX_CHARS // 8) + "\"b\": 2}}",
    "{not json",
])
def test_anything_else_stays_text(text: str) -> None:
    assert read_text_calls(text, OFFERED) is None


def test_a_structured_answer_is_the_call_it_means() -> None:
    [created], reply = structured_calls(json.dumps({"action": "create", "skill": SKILL, "reply": "Shall I?"}),
                                        OFFERED) or ([], "")
    assert (created.name, json.loads(created.arguments), reply) == ("memory_store_skill", SKILL, "Shall I?")
    [updated], _ = structured_calls(json.dumps({"action": "update", "skill_id": "oven",
                                                "skill": {"enabled": False}, "reply": ""}), OFFERED) or ([], "")
    assert json.loads(updated.arguments) == {"enabled": False, "skill_id": "oven"}
    assert structured_calls(json.dumps({"action": "reply", "reply": "What time?"}), OFFERED) == ([], "What time?")
    # llama.cpp's grammar for a schema lets the answer come fenced.
    fenced = "```json\n" + json.dumps({"action": "reply", "reply": "What time?"}) + "\n```"
    assert structured_calls(fenced, OFFERED) == ([], "What time?")
    # An action this turn does not offer, or no JSON at all, is text.
    assert structured_calls(json.dumps({"action": "delete", "skill_id": 1, "reply": ""}), ["memory_store_skill"]) is None
    assert structured_calls("Stored!", OFFERED) is None


def test_the_schema_offers_only_the_actions_of_the_tools_offered() -> None:
    schema = answer_schema(["memory_list_skills"])["json_schema"]["schema"]
    assert schema["properties"]["action"]["enum"] == ["list", "reply"]
    assert "skill" not in schema["properties"] and list(schema["properties"])[-1] == "reply"
    said = instruction(OFFERED, ["outbox_send_message"])
    assert '"create"' in said and "outbox_send_message" in said
    # Small beside a 4,096-token context: the instruction with its examples is about 550 tokens (the schema
    # becomes the server's grammar; it is not read as prompt by llama.cpp, and is a few hundred tokens elsewhere).
    assert len(said) < 3_000 and len(json.dumps(answer_schema(OFFERED, PLAN_TOOLS))) < 4_000


PLAN_TOOLS = ["outbox_send_message", "outbox_list_messages"]
DIRECT = {"kind": "fixed message", "name": "wind down", "trigger_config": {"schedule": "0 22 * * *"},
          "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "Time to wind down"}}],
          "instructions": "Send the user: Time to wind down"}
AGENT = {"kind": "read and report", "name": "digest", "trigger_config": {"schedule": "0 17 * * 5"},
         "required_tools": ["outbox_list_messages", "outbox_send_message"], "instructions": "Summarize the week."}


def answer(action: str, **fields: object) -> dict[str, object]:
    return {"needs": [], "action": action, "skill_id": None, "skill": None, "change": None, "reply": "Shall I?",
            **fields}


def test_the_schema_holds_a_new_skill_whole_and_to_the_catalogs_tools() -> None:
    """A grammar-held model writes what the schema allows: asked to create, Qwen2.5 1.5B wrote the action and
    the reply and no skill while the skill was optional; every field is now required (null where unused)."""
    schema = answer_schema(OFFERED, PLAN_TOOLS)["json_schema"]["schema"]
    for good in (answer("create", skill=DIRECT), answer("create", skill=AGENT), answer("reply"),
                 answer("update", skill_id="oven", change={"enabled": False}), answer("delete", skill_id="oven")):
        jsonschema.validate(good, schema)
    bad = [
        {"action": "create", "reply": "Shall I?"},  # the skill left out
        {k: v for k, v in answer("reply").items() if k != "needs"},  # what the task needs left out
        answer("create", skill={k: v for k, v in DIRECT.items() if k != "trigger_config"}),  # no trigger
        answer("create", skill={**AGENT, "kind": "fixed message"}),  # the tier said in words is not the one made
        answer("create", skill={**DIRECT, "trigger_config": {"in_minutes": 5, "schedule": "0 9 * * *"}}),  # two
        answer("create", skill={**AGENT, "required_tools": ["github_list_issues"]}),  # a tool nobody has
        answer("create", skill={**DIRECT, "execution_plan": [{"toolName": "shell_exec", "parameters": {}}]}),
        answer("create", skill={**DIRECT, "execution_plan": []}),  # neither tier
    ]
    for wrong in bad:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(wrong, schema)
    # No tool a skill may call: nothing to create with, so no create.
    assert "create" not in answer_schema(OFFERED, [])["json_schema"]["schema"]["properties"]["action"]["enum"]


def test_a_new_skill_is_stored_without_its_kind() -> None:
    [created], _ = structured_calls(json.dumps(answer("create", skill=AGENT)), OFFERED) or ([], "")
    assert json.loads(created.arguments) == {k: v for k, v in AGENT.items() if k != "kind"}


def test_an_update_answer_takes_its_change_field() -> None:
    [updated], _ = structured_calls(json.dumps(answer("update", skill_id="oven", change={"enabled": False})),
                                    OFFERED) or ([], "")
    assert json.loads(updated.arguments) == {"enabled": False, "skill_id": "oven"}


def test_the_instruction_shows_each_tier_with_the_catalogs_own_tools() -> None:
    said = instruction(OFFERED, PLAN_TOOLS)
    examples = [json.loads(line.split(" -> ", 1)[1]) for line in said.splitlines() if " -> " in line]
    schema = answer_schema(OFFERED, PLAN_TOOLS)["json_schema"]["schema"]
    for example in examples:  # an example the schema refused would teach the model a shape it cannot write
        jsonschema.validate(example, schema)
    assert {"execution_plan" in e["skill"] for e in examples if e["skill"]} == {True, False}
    # And ones that decline, with what they need (small models otherwise make a skill that cannot see it): never
    # one a listed tool's name says it does (a Slack example called Slack unreachable beside a Slack tool).
    declines = [(e["needs"], e["reply"]) for e in examples if e["action"] == "reply"]
    assert declines == [(["read train delays"], "No tool listed can read train delays."),
                        (["send an email to my boss"], "No tool listed can send an email to my boss.")]
    assert "email to my boss" not in instruction(OFFERED, [*PLAN_TOOLS, "mail_send"])
    assert [e["needs"] for e in examples if e["skill"]] == [["read today's messages"], []]
    # The user's skills, for a change to start from what is there; only when the turn may change them.
    plants = ["water the plants: cron '0 9 * * 1-5'"]
    assert known_skills(OFFERED, plants) == f"The user's skills now:\n- {plants[0]}"
    assert known_skills(["memory_store_skill"], plants) == ""
    assert known_skills(OFFERED, plants * (MAX_SKILLS + 2)).endswith("\n(and 2 more)")
    # A catalog with no tool that sends gets no example, rather than one naming a tool it lacks.
    assert " -> " not in instruction(OFFERED, ["weather_forecast"])


def test_the_schema_narrows_to_the_actions_the_words_allow_and_keeps_its_fields() -> None:
    full = answer_schema(OFFERED, PLAN_TOOLS)["json_schema"]["schema"]
    narrow = answer_schema(OFFERED, PLAN_TOOLS, only=["list"])["json_schema"]["schema"]
    assert narrow["properties"]["action"]["enum"] == ["list", "reply"]  # a reply is always allowed
    assert list(narrow["properties"]) == list(full["properties"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(answer("delete", skill_id="oven"), narrow)
    # An answer outside them, from an endpoint that held no grammar, makes no call, and the reply says so in the
    # engine's words (the model's "Shall I?" would be about a delete that is not there).
    read = structured_read(json.dumps(answer("delete", skill_id="oven")), OFFERED, only=["list", "reply"])
    assert read is not None and read.calls == [] and read.by_engine
    assert read.reply.startswith("Nothing was changed: the model answered with a delete")


@pytest.mark.parametrize(("ref", "said", "meant"), [
    ("drink-water", "delete the drink water reminder", "drink water"),
    ("drink water", "delete the drink-water skill", "drink-water"),
    ("drink-water", "delete the water one", "drink-water"),  # the words name neither: the model's
    ("stand up", "delete the drink water reminder", "stand up"),  # not a twin: the model's
    (7, "delete the drink water reminder", 7),
])
def test_a_change_names_the_skill_the_words_hold_over_its_near_twin(ref: object, said: str, meant: object) -> None:
    names = ["drink water", "drink-water", "stand up"]
    assert words_name(ref, names, said) == meant
    [deleted], _ = structured_calls(json.dumps(answer("delete", skill_id=ref)), OFFERED,
                                    skills=[stored(name, "0 9 * * *") for name in names], said=said) or ([], "")
    assert json.loads(deleted.arguments) == {"skill_id": meant}


def stored(name: str, schedule: str, skill_id: int = 1) -> Skill:
    return Skill(id=skill_id, agent_id="main", name=name, instructions="x", trigger_type="cron",
                 trigger_config=TriggerConfig(schedule=schedule, timezone="Europe/Berlin"),
                 created_at=datetime(2026, 11, 28, tzinfo=UTC), updated_at=datetime(2026, 11, 28, tzinfo=UTC))


@pytest.mark.parametrize(("said", "model_trigger", "stored_as"), [
    # The 1.5B model wrote an hour it could not (refused), and dropped the weekdays.
    ("move the stand up reminder to 9:30", {"schedule": "30 9:30 * * 1-5"}, "30 9 * * 1-5"),
    ("make the stand up reminder fire at 10 instead", {"schedule": "0 10 * * *"}, "0 10 * * 1-5"),
    ("move the stand up reminder to 9:30", None, "30 9 * * 1-5"),  # the time left out of the change
    # More than a time: the model's, as it wrote it.
    ("move the stand up reminder to every day at 10", {"schedule": "0 10 * * *"}, "0 10 * * *"),
])
def test_a_time_alone_moves_a_skill_and_keeps_its_days(said: str, model_trigger: dict[str, str] | None,
                                                       stored_as: str) -> None:
    change = {"trigger_config": model_trigger} if model_trigger else {"instructions": "Stand up!"}
    [updated], _ = structured_calls(json.dumps(answer("update", skill_id="stand up", change=change)), OFFERED,
                                    skills=[stored("stand up", "0 9 * * 1-5", 4)], said=said) or ([], "")
    trigger = json.loads(updated.arguments)["trigger_config"]
    assert trigger["schedule"] == stored_as
    if model_trigger is None or stored_as != model_trigger["schedule"]:
        assert trigger["timezone"] == "Europe/Berlin"  # the skill's zone, as stored


def test_an_update_pauses_or_resumes_as_the_words_say() -> None:
    # The 1.5B model answered "pause the morning inbox summary" with a change that left it enabled.
    [updated], _ = structured_calls(json.dumps(answer("update", skill_id="summary", change={"instructions": "x"})),
                                    OFFERED, said="pause the morning inbox summary") or ([], "")
    assert json.loads(updated.arguments) == {"instructions": "x", "skill_id": "summary", "enabled": False}
    [updated], _ = structured_calls(json.dumps(answer("update", skill_id="summary", change={"enabled": False})),
                                    OFFERED, said="resume the morning inbox summary") or ([], "")
    assert json.loads(updated.arguments)["enabled"] is True


# --- only the owner's words decide (issue 52) ------------------------------------------------------------------

STAND_UP, WATER, SUMMARY = (stored("stand up", "0 9 * * 1-5", 1), stored("drink water", "0 * * * *", 2),
                            stored("morning inbox summary", "0 7 * * *", 3))
MINE = [STAND_UP, WATER, SUMMARY]


def changed(said: str, change: dict[str, object], skill_id: str = "stand up", reply: str = "Done!") -> tuple:
    from skills.chat.intent import allowed_actions
    only = allowed_actions([said], ["create", "update", "delete", "list", "reply"])
    read = structured_read(json.dumps(answer("update", skill_id=skill_id, change=change) | {"reply": reply}),
                           OFFERED, only, MINE, said)
    assert read is not None
    return read


@pytest.mark.parametrize("said", [
    "don't pause the stand up reminder, just move it to 10",
    "I never want to turn the stand up reminder off, just move it to 10",
])
def test_a_pause_the_words_refuse_is_not_made(said: str) -> None:
    # The 1.5B model answered "don't pause ..., just move it to 10" with enabled: false and the move at once.
    read = changed(said, {"enabled": False, "trigger_config": {"schedule": "0 10 * * 1-5"}}, reply="Moved to 10.")
    [call] = read.calls
    arguments = json.loads(call.arguments)
    assert "enabled" not in arguments
    assert arguments["trigger_config"]["schedule"] == "0 10 * * 1-5"
    # The model's "Moved to 10." is not what the owner reads: the engine's sentence says what it took from the words.
    assert read.by_engine and "not paused or resumed" in read.reply and "Moved to 10." not in read.reply


def test_a_pause_the_words_do_not_say_is_not_made() -> None:
    read = changed("move stand up to half past 8", {"enabled": False})
    assert "enabled" not in json.loads(read.calls[0].arguments) and read.by_engine


def test_a_skill_the_words_name_only_to_exclude_is_not_changed() -> None:
    read = changed("no, not the water one — pause the summary", {"enabled": False}, skill_id="drink water",
                   reply="Paused the water reminder.")
    assert read.calls == [] and read.by_engine and "drink water" in read.reply
    [call] = changed("no, not the water one — pause the summary", {"enabled": False},
                     skill_id="morning inbox summary").calls
    assert json.loads(call.arguments) == {"enabled": False, "skill_id": "morning inbox summary"}


def test_where_the_model_and_the_words_agree_the_reply_is_the_models() -> None:
    read = changed("pause the stand up reminder", {"enabled": False}, reply="I paused it.")
    assert not read.by_engine and read.reply == "I paused it."


def test_a_quoted_request_sets_no_field() -> None:
    # A reply quoting an email: its "turn ... off" and its time are the sender's, not the owner's.
    said = ("> please turn the stand up reminder off and move it to 11\n> Mark\n\n"
            "no thanks. change the stand up reminder's text to 'stretch'")
    [call] = changed(said, {"instructions": "stretch"}).calls
    assert json.loads(call.arguments) == {"instructions": "stretch", "skill_id": "stand up"}


def test_a_model_that_moved_as_the_words_say_keeps_its_reply() -> None:
    read = changed("move the stand up reminder to 10", {"trigger_config": {"schedule": "0 10 * * 1-5"}},
                   reply="I can move it to 10.")
    assert not read.by_engine and read.reply == "I can move it to 10."
    read = changed("move the stand up reminder to 10", {"trigger_config": {"schedule": "0 10 * * *"}},
                   reply="Moved to 10.")
    assert read.by_engine and "fires at cron '0 10 * * 1-5'" in read.reply


# --- native mode: the same guards on the model's own tool calls (issue 52) -------------------------------------


def native(said: str, arguments: dict[str, object], name: str = "memory_update_skill") -> tuple:
    from skills.llm.structured import native_read
    return native_read([TextCall(name, json.dumps(arguments))], MINE, said)


@pytest.mark.parametrize("said", [
    "don't pause the stand up reminder, just move it to 10",
    "I never want to turn the stand up reminder off, just move it to 10",
])
def test_a_native_pause_the_words_refuse_is_not_made(said: str) -> None:
    # The same slip as the structured one, made with a native call: the move stands, the pause goes.
    calls, reply = native(said, {"id": 1, "enabled": "false", "trigger_config": {"schedule": "0 10 * * 1-5"}})
    [call] = calls
    assert call is not None and call.name == "memory_update_skill"
    assert json.loads(call.arguments) == {"trigger_config": {"schedule": "0 10 * * 1-5", "timezone": "Europe/Berlin"},
                                          "skill_id": "1"}  # the time alone: at the skill's zone
    assert reply is not None and "not paused or resumed" in reply


def test_a_native_change_of_a_skill_the_words_exclude_is_dropped() -> None:
    calls, reply = native("no, not the water one — pause the summary", {"skill_id": "drink water", "enabled": False})
    assert calls == [None] and reply is not None and "drink water" in reply


@pytest.mark.parametrize("said", ["can you pause things?", "what skills do I have?", "is the water reminder paused?"])
def test_a_question_answered_with_a_native_change_changes_nothing(said: str) -> None:
    calls, reply = native(said, {"skill_id": "drink water", "enabled": False})
    assert calls == [None] and reply is not None and reply.startswith("Nothing was changed")
    calls, _ = native(said, {"skill_id": "drink water"}, name="memory_delete_skill")
    assert calls == [None]


def test_a_native_call_the_words_agree_with_is_left_as_it_is() -> None:
    update = TextCall("memory_update_skill", json.dumps({"skill_id": "stand up", "enabled": False}))
    listing = TextCall("memory_list_skills", "{}")
    from skills.llm.structured import native_read
    assert native_read([listing, update], MINE, "pause the stand up reminder") == ([listing, update], None)
    # A new skill is a proposal, whatever the words: left to the normalizer and the owner's yes.
    store = TextCall("memory_store_skill", json.dumps(SKILL))
    assert native_read([store], MINE, "remind me about the oven") == ([store], None)


@pytest.mark.parametrize(("text", "made_up"), [
    ('{"name": "pay_electricity_bill", "arguments": {"account": "Sparkasse", "due_date": "Friday"}}',
     ["pay_electricity_bill"]),
    ('```json\n[{"name": "weather_today", "parameters": {"city": "Hamburg"}}]\n```', ["weather_today"]),
    ('<tool_call>{"function": {"name": "bank_pay", "arguments": "{}"}}</tool_call>', ["bank_pay"]),
    # a call of a tool there is, or text that is no call, is not made up
    ('{"name": "outbox_send_message", "arguments": {"message": "hi"}}', []),
    ('[{"name": "bank_pay", "arguments": {}}, {"name": "outbox_send_message", "arguments": {}}]', []),
    ('{"name": "Hamburg", "temperature": 12}', []),
    ("I cannot pay bills.", []),
    ('{"name": "x", "arguments": [1, 2]}', []),
])
def test_a_call_of_a_tool_no_server_has_is_found(text: str, made_up: list[str]) -> None:
    assert imagined_calls(text, {"outbox_send_message", "memory_store_skill"}) == made_up
