"""A small model can make proposals: its tool call written as text is read as a call, a structured answer
(``response_format`` with a JSON schema) is made the call it means, and ``SKILLS_LLM_TOOLS=auto`` asks a
turn that answered without a call once more, structured. The scripted model plays the habits of
Qwen2.5-Coder 1.5B on llama.cpp; everything else is real."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from temporalio.client import Client

from config.settings import Settings
from skills.llm.structured import ASK_AGAIN, SCHEMA_NAME
from skills.llm.tokens import request_tokens
from tests.conftest import BUNDLED_DIR, Engine
from tests.fakes.llm_server import ScriptedLLM, call, claims, say, structured, text_call

STAND_UP = {"name": "stand up", "instructions": "Remind me to stand up",
            "trigger_config": {"schedule": "0 9 * * 1-5"},
            "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "Stand up!"}}]}
ASKED = "every weekday at 9 remind me to stand up"
SMALL_CONTEXT = 4_096


async def engine_with(client: Client, settings: Settings, llm: ScriptedLLM, tools: str) -> Engine:
    return await Engine(settings.model_copy(update={
        "llm_base_url": llm.base_url, "llm_api_key": "sk-fake-test-key", "llm_model": "chat",
        "bundled_skills_dir": BUNDLED_DIR, "llm_tools": tools}), client).start()


@pytest.fixture
async def native(client: Client, settings: Settings, llm: ScriptedLLM) -> AsyncIterator[Engine]:
    running = await engine_with(client, settings, llm, "native")
    yield running
    await running.stop()


@pytest.fixture
async def structured_engine(client: Client, settings: Settings, llm: ScriptedLLM) -> AsyncIterator[Engine]:
    running = await engine_with(client, settings, llm, "structured")
    yield running
    await running.stop()


def stored_trigger(reply: Any) -> dict[str, Any]:
    [proposal] = reply.proposals
    return proposal.arguments["data"]["trigger_config"]


@pytest.mark.parametrize("style", ["json", "qwen", "function"])
async def test_a_call_written_as_text_is_read_as_the_call(native: Engine, llm: ScriptedLLM, style: str) -> None:
    # Qwen2.5-Coder 1.5B's habit, offered tools: the call as its reply's text, 3 times out of 3.
    llm.script("chat", [text_call("memory_store_skill", STAND_UP, style=style),
                        say("I can remind you every weekday at 9. Shall I?")])
    reply = await native.skills.chat(ASKED, session_id=f"text-{style}")
    assert reply.ok and reply.reply == "I can remind you every weekday at 9. Shall I?"
    assert stored_trigger(reply)["schedule"] == "0 9 * * 1-5" and reply.correction is None
    [effect] = reply.effects
    assert (effect.action, effect.tool) == ("proposed", "memory_store_skill")
    # The model reads its call answered, as if it had made it natively.
    answered = llm.requests_for("chat")[1].messages
    assert answered[-2]["tool_calls"][0]["function"]["name"] == "memory_store_skill"
    assert answered[-1]["role"] == "tool" and "Proposed" in answered[-1]["content"]


async def test_a_call_of_a_tool_no_server_has_is_not_made_and_the_engine_says_so(native: Engine,
                                                                                   llm: ScriptedLLM) -> None:
    """The 1.5B model answered "pay the electricity bill from my Sparkasse account" with the text of a call to
    ``pay_electricity_bill``, a tool it made up, which the owner was shown as the reply (bench.chat_real --set
    needs). Nothing is made, and the reply is the engine's: no tool has that name."""
    written = json.dumps({"name": "github_list_issues", "arguments": {"state": "open"}})
    llm.script("chat", [say(written)])
    reply = await native.skills.chat("every monday at 8am send me a summary of my open github issues",
                                     session_id="nogithub")
    assert reply.reply.startswith("Nothing was done: the answer was a call to `github_list_issues`, and no tool "
                                  "here has that name."), reply.reply
    assert "outbox_send_message" in reply.reply and reply.said_by == "engine"
    assert reply.effects == [] and reply.proposals == []
    assert len(llm.requests_for("chat")) == 1  # native: nobody asks again


async def test_a_call_of_a_tool_there_is_but_not_offered_stays_text(structured_engine: Engine,
                                                                     llm: ScriptedLLM) -> None:
    written = json.dumps({"name": "outbox_send_message", "arguments": {"message": "hi"}})
    llm.script("chat", [say(written)] * 3)
    reply = await structured_engine.skills.chat("what can you do?", session_id="outboxtext")
    assert reply.effects == [] and reply.proposals == [] and "no tool here has that name" not in reply.reply


async def test_a_structured_answer_is_proposed_through_the_normalizer(structured_engine: Engine,
                                                                      llm: ScriptedLLM) -> None:
    bad = {**STAND_UP, "trigger_config": {"schedule": "0 25 * * 1-5"}}
    llm.script("chat", [
        structured({"action": "create", "skill": bad, "reply": "I can remind you every weekday at 25."}),
        structured({"action": "create", "skill": STAND_UP, "reply": "I can remind you every weekday at 9. Shall I?"}),
    ])
    reply = await structured_engine.skills.chat(ASKED, session_id="structured")
    # The normalizer refused the first (hour 25), the model fixed it; the reply came with the fixed one.
    assert reply.ok and reply.reply == "I can remind you every weekday at 9. Shall I?", reply.reply
    assert stored_trigger(reply)["schedule"] == "0 9 * * 1-5"
    first, second = llm.requests_for("chat")
    assert first.response_format is not None and first.response_format["json_schema"]["name"] == SCHEMA_NAME
    assert first.tools == []  # no tool schemas: the instruction says the answer's shape
    system = first.messages[0]["content"]
    assert "Answer with ONE JSON object" in system and "outbox_send_message" in system
    assert "hour 25 is out of range" in second.messages[-1]["content"]
    # What a 4,096-token context must hold: the first structured request is no bigger than a native one.
    tokens = request_tokens(first.messages, first.tools)
    print(f"first structured request: {tokens} tokens")
    assert tokens <= 3_000, tokens


async def test_a_structured_change_starts_from_the_users_skills_as_the_prompt_lists_them(
        structured_engine: Engine, llm: ScriptedLLM) -> None:
    """A structured turn calls no tool to read the skills, so the prompt lists them: "move it to 9:30" keeps the
    weekdays only if the model sees them."""
    await structured_engine.skills.register(STAND_UP)
    # The 1.5B model dropped the weekdays ("make it fire at 10 instead" became every day at 10): a time alone
    # keeps the skill's days, whatever the model wrote.
    llm.script("chat", [structured({"action": "update", "skill_id": "stand up", "skill": None,
                                    "change": {"trigger_config": {"schedule": "30 9 * * *"}},
                                    "reply": "I can move it to 9:30."})])
    reply = await structured_engine.skills.chat("move the stand up reminder to 9:30", session_id="move")
    [asked] = llm.requests_for("chat")
    assert "- stand up: cron '0 9 * * 1-5' (UTC), direct tier, enabled" in asked.messages[0]["content"]
    assert asked.messages[0]["content"].rstrip().endswith("the user's time zone.")  # the time stays last
    [change] = reply.effects
    assert change.action in ("updated", "proposed") and change.name == "stand up"
    assert change.trigger is not None and change.trigger["schedule"] == "30 9 * * 1-5"


async def test_auto_asks_a_turn_that_claimed_without_a_call_again_structured(assistant: Engine,
                                                                              llm: ScriptedLLM) -> None:
    assert assistant.settings.llm_tools == "auto"  # the default
    llm.script("chat", [
        claims("Stored: Every weekday at 9 reminds me to stand up."),
        structured({"action": "create", "skill": STAND_UP, "reply": "I can remind you every weekday at 9. Shall I?"}),
    ])
    reply = await assistant.skills.chat(ASKED, session_id="auto")
    assert reply.ok and reply.reply == "I can remind you every weekday at 9. Shall I?"
    assert stored_trigger(reply)["schedule"] == "0 9 * * 1-5" and reply.correction is None
    assert reply.asked_again is not None and "SKILLS_LLM_TOOLS=auto" in reply.asked_again
    assert any(line.startswith("asked again: ") for line in reply.account_lines())
    native_ask, again = llm.requests_for("chat")
    assert native_ask.response_format is None and native_ask.tools
    assert again.response_format is not None
    # The model's history says its claim did not happen.
    assert again.messages[-1] == {"role": "user", "content": ASK_AGAIN}
    # No tool schemas in the structured request: smaller than the native one, history and all.
    asked_tokens = request_tokens(native_ask.messages, native_ask.tools)
    again_tokens = request_tokens(again.messages, again.tools)
    print(f"first request: native {asked_tokens} tokens, asked again structured {again_tokens}")
    assert again_tokens < asked_tokens <= 3_000


async def test_auto_asks_a_session_structured_from_the_start_once_its_model_needed_it(assistant: Engine,
                                                                                        llm: ScriptedLLM) -> None:
    """A small model that answered without a call once will again: its next turn in the session is not sent a
    native request of 3,000 tokens first (a minute of reading on 2 cores), but asked structured at once."""
    later = "every day at 6pm remind me to water the plants"
    llm.script("chat", [
        say("Sure, I will remind you."),
        structured({"action": "reply", "reply": "At 9 in your time zone, every weekday?"}),
        structured({"action": "reply", "reply": "At 6pm every day?"}),
    ])
    first = await assistant.skills.chat(ASKED, session_id="learned")
    second = await assistant.skills.chat(later, session_id="learned")
    other = llm.script("chat", [say("Hello!")])
    fresh = await assistant.skills.chat("hello", session_id="another")
    assert first.asked_again is not None and second.asked_again is None and second.reply == "At 6pm every day?"
    native_ask, again, learned, fresh_ask = llm.requests_for("chat")
    assert native_ask.response_format is None and again.response_format is not None
    assert learned.response_format is not None and not learned.tools
    assert learned.messages[-1] == {"role": "user", "content": later}
    # Another session starts as the setting says: natively.
    assert fresh.ok and other.remaining("chat") == 0 and fresh_ask.response_format is None and fresh_ask.tools


async def test_auto_asks_a_request_answered_with_no_call_again(assistant: Engine, llm: ScriptedLLM) -> None:
    llm.script("chat", [say("Sure, standing up is good for you."),
                        structured({"action": "reply", "reply": "At 9 in your time zone, every weekday?"})])
    reply = await assistant.skills.chat(ASKED, session_id="auto-q")
    assert reply.reply == "At 9 in your time zone, every weekday?" and reply.effects == []
    assert reply.asked_again is not None and reply.correction is None


async def test_auto_leaves_a_plain_conversation_alone(assistant: Engine, llm: ScriptedLLM) -> None:
    llm.script("chat", [say("Hello! What should I schedule?"), call("memory_list_skills", {}),
                        say("You have no skills yet.")])
    assert (await assistant.skills.chat("hi", session_id="plain")).asked_again is None
    assert (await assistant.skills.chat("what do I have?", session_id="plain")).asked_again is None
    assert len(llm.requests_for("chat")) == 3 and all(r.response_format is None for r in llm.requests_for("chat"))


def actions_offered(request: Any) -> list[str]:
    return request.response_format["json_schema"]["schema"]["properties"]["action"]["enum"]


async def test_a_structured_turn_may_only_do_what_the_users_words_ask(structured_engine: Engine,
                                                                       llm: ScriptedLLM) -> None:
    """Qwen2.5-Coder 1.5B, held to a grammar, answered "what skills do I have?" with a delete, and "move the stand
    up reminder to 9:30" with a delete: the grammar now offers a delete only to words that ask for one."""
    await structured_engine.skills.register(STAND_UP)
    llm.script("chat", [structured({"action": "reply", "reply": "You have one skill: stand up."}),
                        structured({"action": "reply", "reply": "To 9:30 on weekdays?"}),
                        structured({"action": "reply", "reply": "Delete stand up?"})])
    listed = await structured_engine.skills.chat("what skills do I have?", session_id="words-1")
    moved = await structured_engine.skills.chat("move the stand up reminder to 9:30", session_id="words-2")
    await structured_engine.skills.chat("delete the stand up reminder", session_id="words-3")
    question, move, delete = llm.requests_for("chat")
    assert actions_offered(question) == ["list", "reply"]
    # The when beside the skill the words change is the change's: no create beside it (a model offered one made
    # a second stand up reminder).
    assert actions_offered(move) == ["update", "list", "reply"]
    assert actions_offered(delete) == ["delete", "list", "reply"]
    # The prompt is the same whatever the words allow (the endpoint's prompt cache holds): only the grammar narrows.
    assert '- "delete": skill_id.' in question.messages[0]["content"]
    assert listed.effects == [] and moved.effects == []


async def test_an_action_the_words_do_not_ask_for_is_not_made_though_the_endpoint_ignored_the_grammar(
        structured_engine: Engine, llm: ScriptedLLM) -> None:
    await structured_engine.skills.register(STAND_UP)
    # An endpoint that takes response_format but holds no grammar: the answer is read against the words anyway.
    llm.script("chat", [say(json.dumps({"action": "delete", "skill_id": "stand up", "reply": "Deleted it."}))])
    reply = await structured_engine.skills.chat("what skills do I have?", session_id="ignored")
    assert reply.effects == [] and reply.proposals == []
    assert [s.name for s in await structured_engine.skills.list()] == ["stand up"]


BOSS = {"kind": "fixed message", "name": "sales figures", "trigger_config": {"schedule": "0 7 * * *"},
        "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "Sales figures"}}],
        "instructions": "Send the sales figures."}


async def test_a_need_no_tool_meets_is_said_by_the_engine(structured_engine: Engine, llm: ScriptedLLM) -> None:
    """The 1.5B model answered "every morning at 7 email my boss the sales figures" with "I can send the boss your
    sales figures every morning at 7. Shall I?" and a proposal that messages the owner (issue 52). It names what
    the task needs; no tool here emails anyone but the owner, so the engine says so and proposes nothing."""
    llm.script("chat", [structured({"needs": ["send an email to my boss", "read the sales figures"],
                                    "action": "create", "skill": BOSS,
                                    "reply": "I can send the boss your sales figures every morning at 7. Shall I?"})])
    reply = await structured_engine.skills.chat("every morning at 7 email my boss the sales figures", session_id="boss")
    assert reply.ok and reply.reply.startswith(
        "No tool here can send an email to my boss (the tools here that send reach only you), or read the sales "
        "figures, so nothing was proposed."), reply.reply
    assert "outbox_send_message" in reply.reply
    assert reply.effects == [] and reply.proposals == [] and reply.said_by == "engine"
    assert reply.prompt_tokens > 0  # the model was asked: its tokens are counted
    [asked] = llm.requests_for("chat")
    assert asked.response_format is not None
    assert list(asked.response_format["json_schema"]["schema"]["properties"])[0] == "needs"


async def test_only_the_part_that_can_be_done_is_proposed_and_the_reply_says_which(structured_engine: Engine,
                                                                                 llm: ScriptedLLM) -> None:
    pills = {**BOSS, "name": "pills", "execution_plan": [{"toolName": "outbox_send_message",
                                                          "parameters": {"message": "Take your pills"}}],
             "instructions": "Send the user: Take your pills"}
    llm.script("chat", [structured({"needs": ["remind me to take my pills", "order refills from the pharmacy"],
                                    "action": "create", "skill": pills, "reply": "I'll remind you and order refills."})])
    reply = await structured_engine.skills.chat("every morning at 7 order refills from the pharmacy and remind me to "
                                                "take my pills", session_id="pills")
    assert reply.ok and reply.reply.startswith(
        "Only part of this can be done, so only that part is proposed: the skill 'pills', which sends you \"Take your "
        "pills\". Left out: no tool here can order refills from the pharmacy."), reply.reply
    [proposal] = reply.proposals
    assert proposal.arguments["data"]["name"] == "pills"
    # A task whose needs the tools meet is proposed as the model said.
    llm.script("chat", [structured({"needs": ["remind me to stretch"], "action": "create", "skill": {
        **pills, "name": "stretch"}, "reply": "I can remind you at 7. Shall I?"})])
    met = await structured_engine.skills.chat("every morning at 7 remind me to stretch", session_id="stretch")
    assert met.reply == "I can remind you at 7. Shall I?" and len(met.proposals) == 1 and met.said_by == "model"
    # A reminder of a task no tool does is a reminder: what the owner asked (the model listed its words as needs).
    llm.script("chat", [structured({"needs": ["send an email to my boss"], "action": "create", "skill": {
        **pills, "name": "email boss"}, "reply": "I can remind you at 7. Shall I?"})])
    asked = await structured_engine.skills.chat("every morning at 7 remind me to send an email to my boss",
                                                session_id="remind-boss")
    assert asked.reply == "I can remind you at 7. Shall I?" and len(asked.proposals) == 1


async def test_a_native_proposal_is_checked_on_its_instructions(native: Engine, llm: ScriptedLLM) -> None:
    llm.script("chat", [call("memory_store_skill", {"name": "boss", "instructions": "Email the sales figures to my "
                                                    "boss.", "trigger_config": {"schedule": "0 7 * * *"},
                                                    "required_tools": ["outbox_send_message"]})])
    reply = await native.skills.chat("every morning at 7 email my boss the sales figures", session_id="native-boss")
    assert reply.reply.startswith("No tool here can Email the sales figures to my boss (the tools here that send "
                                  "reach only you), so nothing was proposed."), reply.reply
    assert reply.proposals == [] and reply.said_by == "engine"


async def test_a_change_goes_to_the_skill_the_users_words_name_not_its_near_twin(structured_engine: Engine,
                                                                                 llm: ScriptedLLM) -> None:
    """The user's "drink water" beside a bundled "drink-water": the 1.5B model proposed deleting the bundled one
    for "delete the drink water reminder"."""
    mine = await structured_engine.skills.register({**STAND_UP, "name": "drink water"})
    await structured_engine.skills.register({**STAND_UP, "name": "drink-water"})
    llm.script("chat", [structured({"action": "delete", "skill_id": "drink-water", "skill": None, "change": None,
                                    "reply": "Delete the drink water reminder?"})])
    reply = await structured_engine.skills.chat("delete the drink water reminder", session_id="twin")
    [proposal] = reply.proposals
    assert proposal.tool == "memory_delete_skill" and mine.skill is not None and proposal.skill_id == mine.skill.id


async def test_a_structured_list_is_the_engines_own_and_needs_no_second_request(structured_engine: Engine,
                                                                                  llm: ScriptedLLM) -> None:
    await structured_engine.skills.register({**STAND_UP, "name": "reminder set"})
    llm.script("chat", [structured({"action": "list", "skill_id": None, "skill": None, "change": None,
                                    "reply": "You have 5 skills."})])  # its count is wrong; it is not shown
    reply = await structured_engine.skills.chat("what skills do I have?", session_id="list")
    assert len(llm.requests_for("chat")) == 1 and reply.effects == []
    assert reply.reply.startswith("1 skill:\n- ") and "'reminder set'" in reply.reply and "5 skills" not in reply.reply
    # The engine's own words: a skill's name that reads as a claim ("reminder set") is not corrected as the model's.
    assert reply.said_by == "engine" and reply.correction is None


async def test_a_native_change_does_only_what_the_owners_words_say(native: Engine, llm: ScriptedLLM) -> None:
    """Native mode, the same slip the 1.5B model made structured: "don't pause ..., just move it to 10" answered
    with a pause and the move. The move is made, the pause is not, and the owner reads the engine's sentence."""
    await native.skills.register(STAND_UP)
    llm.script("chat", [call("memory_update_skill", {"skill_id": "stand up", "enabled": False,
                                                     "trigger_config": {"schedule": "0 10 * * 1-5"}})])
    reply = await native.skills.chat("don't pause the stand up reminder, just move it to 10", session_id="n-pause")
    skill = await native.skills.get("stand up")
    assert skill.enabled and skill.trigger_config is not None and skill.trigger_config.schedule == "0 10 * * 1-5"
    assert reply.said_by == "engine" and "not paused or resumed" in reply.reply
    assert len(llm.requests_for("chat")) == 1  # the change made, the engine's sentence ends the turn: no "Paused"
    # A question answered with a native pause pauses nothing.
    llm.script("chat", [call("memory_update_skill", {"skill_id": "stand up", "enabled": False})])
    asked = await native.skills.chat("can you pause things?", session_id="n-question")
    assert (await native.skills.get("stand up")).enabled and asked.effects == []
    assert asked.said_by == "engine" and asked.reply.startswith("Nothing was changed"), (asked.said_by, asked.reply)


# A reply that claims a proposal (issue 52): the 1.5B model answered "Proposed, NOT made" (the words of the
# engine's account) with nothing proposed; the engine lets such a claim stand only when the turn did propose.

async def test_a_claim_of_a_proposal_that_does_not_exist_does_not_stand(structured_engine: Engine,
                                                                        llm: ScriptedLLM) -> None:
    llm.script("chat", [structured({"needs": [], "action": "reply", "reply": "Proposed, NOT made"})])
    reply = await structured_engine.skills.chat("hello, what can you do for me?", session_id="parrot")
    assert "NOT made" not in reply.reply and reply.said_by == "engine", reply.reply
    assert reply.reply.startswith("Nothing was proposed") and reply.effects == [] and reply.proposals == []


async def test_a_claim_of_a_proposal_the_turn_made_stands(native: Engine, llm: ScriptedLLM) -> None:
    reminder = {"name": "bins", "trigger_config": {"schedule": "0 19 * * 4"},
                "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "Put the bins out"}}],
                "instructions": "Send the user: Put the bins out"}
    llm.script("chat", [call("memory_store_skill", reminder), say("Proposed, NOT made: reply yes to make it.")])
    reply = await native.skills.chat("every thursday at 7pm remind me to put the bins out", session_id="bins")
    assert reply.reply == "Proposed, NOT made: reply yes to make it." and reply.said_by == "model"
    assert len(reply.proposals) == 1 and reply.correction is None
