"""llm_turn retried after an earlier attempt stored its answer (the attempt's result lost when it timed out): the
retry reads the answer back, and an answer the engine wrote in the model's place is still the engine's, so the
chat says ``said_by: "engine"`` and never corrects it as a model's claim. Whose it is never reaches the model.
The chat's own reply and note are marked the engine's too."""

from __future__ import annotations

import dataclasses
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from activities.agent import AgentActivities
from activities.chat import ChatActivities
from adapters.store import Store
from config.settings import Settings
from skills.llm.agent import ChatMessage
from skills.llm.structured import ASK_AGAIN
from skills.messages.agent import LlmTurn
from skills.messages.chat import ChatAnswer
from skills.naming import CHAT_CONVERSATION
from skills.run.catalog import ServerState, ToolInfo
from tests.fakes.llm_server import ScriptedLLM, structured
from tests.fakes.tools import FixedServers, FixedTools

OUTBOX = ToolInfo(name="outbox_send_message", server="outbox", tool="send_message",
                  description="Send a message to the user's outbox.")
MANAGEMENT = ["memory_store_skill", "memory_list_skills"]


def _agent(settings: Settings, llm: ScriptedLLM) -> tuple[AgentActivities, Store]:
    settings = settings.model_copy(update={"llm_base_url": llm.base_url, "llm_api_key": "sk-fake-test-key"})
    store = Store.from_settings(settings)
    return AgentActivities(store, settings, FixedTools([OUTBOX])), store


def _turn(conversation: str, step: int = 1) -> LlmTurn:
    return LlmTurn(conversation_id=conversation, model="chat", tools=MANAGEMENT, step=step, tool_mode="structured")


@pytest.mark.parametrize(("said", "answer", "by_engine"), [
    # No tool reads GitHub issues: the engine answers what the model said the task needs.
    ("every monday at 8am send me a summary of my open github issues",
     {"needs": ["read my open github issues"], "action": "reply", "reply": "I can do that."}, True),
    # The model asked for the list: the engine writes it, the skills as the store has them.
    ("what skills do I have?", {"action": "list", "reply": "You have 5 skills."}, True),
    # The model's own reply stays the model's.
    ("what skills do I have?", {"action": "reply", "reply": "Ask me to list them."}, False),
])
async def test_a_retried_turn_keeps_whose_answer_it_stored(settings: Settings, llm: ScriptedLLM, said: str,
                                                           answer: dict[str, Any] | None, by_engine: bool) -> None:
    agent, store = _agent(settings, llm)
    conversation = f"{CHAT_CONVERSATION}retried"
    store.conversations.append_messages(conversation, [ChatMessage(role="user", content=said)], datetime.now(UTC))
    if answer is not None:
        llm.script("chat", [structured(answer)])

    first = await ActivityEnvironment().run(agent.llm_turn, _turn(conversation))
    assert first.by_engine is by_engine and first.final
    asked = len(llm.requests_for("chat"))
    assert asked == (0 if answer is None else 1)

    # The first attempt stored its answer, then timed out: the server retries the turn.
    again = await ActivityEnvironment().run(agent.llm_turn, _turn(conversation))
    assert (again.by_engine, again.final, again.message_seq) == (by_engine, first.final, first.message_seq)
    assert len(llm.requests_for("chat")) == asked  # read back, not asked again
    assert [m.by_engine for m in store.conversations.load_messages(conversation)] == [False, by_engine]


@pytest.mark.parametrize(("status", "declined"), [("not started", False), ("connecting", False), ("failed", True)])
async def test_a_server_not_connected_yet_meets_the_needs_its_name_says(settings: Settings, llm: ScriptedLLM,
                                                                       status: str, declined: bool) -> None:
    """A configured server not started yet (the worker connects it when first needed) or on its first connect has
    no tools in the catalog yet: it counts as there by its name, so "my github issues" is not declined before the
    github server is up; one that failed is not there."""
    settings = settings.model_copy(update={"llm_base_url": llm.base_url, "llm_api_key": "sk-fake-test-key"})
    store = Store.from_settings(settings)
    agent = AgentActivities(store, settings, FixedTools([OUTBOX]),
                            FixedServers([ServerState(name="github", transport="stdio", status=status)]))
    conversation = f"{CHAT_CONVERSATION}pending-{status.replace(' ', '-')}"
    store.conversations.append_messages(conversation, [ChatMessage(role="user", content="summarize my github issues")],
                                        datetime.now(UTC))
    llm.script("chat", [structured({"needs": ["read my open github issues"], "action": "reply",
                                    "reply": "Every morning?"})])
    done = await ActivityEnvironment().run(agent.llm_turn, _turn(conversation))
    assert done.by_engine is declined
    assert done.final.startswith("No tool here can read my open github issues") if declined else \
        done.final == "Every morning?"


async def test_whose_answer_it_is_is_never_sent_to_the_model(settings: Settings, llm: ScriptedLLM) -> None:
    agent, store = _agent(settings, llm)
    conversation = f"{CHAT_CONVERSATION}next"
    store.conversations.append_messages(conversation, [ChatMessage(role="user", content="what skills do I have?")],
                                        datetime.now(UTC))
    llm.script("chat", [structured({"action": "list", "reply": "You have 5 skills."}),
                        structured({"action": "reply", "reply": "You're welcome."})])
    listed = await ActivityEnvironment().run(agent.llm_turn, _turn(conversation))
    assert listed.by_engine and listed.final == "0 skills."
    store.conversations.append_messages(conversation, [ChatMessage(role="user", content="thanks")], datetime.now(UTC))

    thanked = await ActivityEnvironment().run(agent.llm_turn, _turn(conversation, step=2))
    assert not thanked.by_engine and thanked.final == "You're welcome."
    sent = llm.requests_for("chat")[-1].messages
    assert {"role": "assistant", "content": "0 skills."} in sent  # the engine's list, as the model reads it
    assert not any("by_engine" in message for message in sent)


def test_the_chats_own_reply_and_note_are_the_engines(settings: Settings) -> None:
    store = Store.from_settings(settings)
    chat = ChatActivities(store, settings)
    conversation, now = f"{CHAT_CONVERSATION}own", datetime.now(UTC)
    ActivityEnvironment().run(chat.chat_answer, ChatAnswer(conversation_id=conversation, text=ASK_AGAIN, now=now,
                                                           role="user"))
    ActivityEnvironment().run(chat.chat_answer, ChatAnswer(conversation_id=conversation, text="Made it.", now=now))
    assert [(m.role, m.by_engine) for m in store.conversations.load_messages(conversation)] == [
        ("user", True), ("assistant", True)]



async def test_a_turn_heartbeats_from_its_start_not_only_once_the_model_is_asked(settings: Settings,
                                                                                llm: ScriptedLLM) -> None:
    """A loaded worker's first turn (the stored conversation, the catalog, importing the OpenAI SDK, the model
    list) once took past the 10 s heartbeat timeout before its first heartbeat: the attempt was cancelled after
    it had asked the model, and the retry found the scripted answer spent (test_metrics, 1 round in 2 under
    `make flakes`). The turn now heartbeats from its start: past a third of its heartbeat timeout with the model
    not yet asked, it says it is preparing the request. (Heartbeats when the model is asked at once: the first
    one, which the server sees at once, says what the turn waits for.)"""
    agent, store = _agent(settings, llm)
    conversation = f"{CHAT_CONVERSATION}beats"
    store.conversations.append_messages(conversation, [ChatMessage(role="user", content="what skills do I have?")],
                                        datetime.now(UTC))
    llm.script("chat", [structured({"action": "reply", "reply": "Ask me to list them."})])
    env = ActivityEnvironment()
    # A heartbeat timeout of 0.3 s: a beat every 0.1 s. The stored conversation is read slowly (a loaded worker).
    env.info = dataclasses.replace(env.info, heartbeat_timeout=timedelta(seconds=0.3))
    load_messages = store.conversations.load_messages

    def slowly(conversation_id: str) -> list[ChatMessage]:
        time.sleep(0.5)  # a slow step of the turn's own, standing in for a loaded machine (not a wait)
        return load_messages(conversation_id)

    store.conversations.load_messages = slowly  # type: ignore[method-assign]
    heartbeats: list[tuple[Any, ...]] = []
    env.on_heartbeat = lambda *details: heartbeats.append((*details, len(llm.requests_for("chat"))))
    answered = await env.run(agent.llm_turn, _turn(conversation))
    assert answered.final == "Ask me to list them."
    assert heartbeats[0] == ("turn 1", "preparing the request", 0)  # before the model was asked
    assert ("turn 1", "waiting for the first token", 0) in heartbeats  # what the model is asked: said at once


UPDATING = ["memory_store_skill", "memory_update_skill", "memory_list_skills"]


async def test_a_text_call_obeys_the_actions_the_words_allow(settings: Settings, llm: ScriptedLLM) -> None:
    """Issue 52: in a structured turn, a call written as text got past the offered actions: "what skills do I
    have?" answered with a text call to memory_update_skill paused a skill."""
    agent, store = _agent(settings, llm)
    conversation = f"{CHAT_CONVERSATION}asks"
    store.conversations.append_messages(conversation, [ChatMessage(role="user", content="what skills do I have?")],
                                        datetime.now(UTC))
    paused = json.dumps({"name": "memory_update_skill", "arguments": {"skill_id": "stand up", "enabled": False}})
    llm.script("chat", [structured(paused)])
    turn = await ActivityEnvironment().run(agent.llm_turn, LlmTurn(
        conversation_id=conversation, model="chat", tools=UPDATING, step=1, tool_mode="structured"))
    assert turn.tool_calls == []
    # The same call where the words ask for a change is read as the call it is.
    store.conversations.append_messages(conversation, [ChatMessage(role="user", content="pause the stand up one")],
                                        datetime.now(UTC))
    llm.script("chat", [structured(paused)])
    turn = await ActivityEnvironment().run(agent.llm_turn, LlmTurn(
        conversation_id=conversation, model="chat", tools=UPDATING, step=2, tool_mode="structured"))
    assert [call.name for call in turn.tool_calls] == ["memory_update_skill"]


