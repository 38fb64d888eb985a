"""Tool calls written as text (skills.llm.textcalls), and structured answers (skills.llm.structured): what is read
as a call, and what stays text."""

from __future__ import annotations

import json

import pytest

from skills.llm.structured import answer_schema, instruction, structured_calls
from skills.llm.textcalls import MAX_CALLS, MAX_CHARS, read_text_calls

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
    assert len(json.dumps(answer_schema(OFFERED))) + len(said) < 3_000  # small beside a 4,096-token context
