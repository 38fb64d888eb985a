"""The words a chat turn reads, and the request it counts, are read in a thread, never on the worker's event loop.

An async activity runs on the loop every other activity's heartbeats and Temporal's polls run on. Reading is CPU
work on anyone's text: the phrase reader took 3.4 s on one message before its patterns were RE2's, and cutting a
90,000-character request to fit an 8k context took 0.5 CPU s. Each reader is wrapped here to say where it ran:
with no event loop in its thread, it held none.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

import activities.agent
import skills.chat.intent
import skills.when.phrasing
from activities.agent import AgentActivities
from activities.phrasing import PhrasingActivities
from adapters.store import Store
from config.settings import Settings
from skills.llm.agent import ChatMessage
from skills.messages.agent import LlmTurn
from skills.messages.chat import ReminderRequest
from skills.naming import CHAT_CONVERSATION
from skills.run.catalog import ToolInfo
from tests.fakes.llm_server import ScriptedLLM, structured
from tests.fakes.tools import FixedTools

OUTBOX = ToolInfo(name="outbox_send_message", server="outbox", tool="send_message",
                  description="Send a message to the user's outbox.")


def on_the_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def watched(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> dict[str, bool]:
    """``module.name`` wrapped to record, by its name, whether it ran on an event loop's thread."""
    ran: dict[str, bool] = {}
    reader: Callable[..., Any] = getattr(module, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ran[name] = on_the_loop()
        return reader(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)
    return ran



async def test_a_turn_reads_and_counts_off_the_loop(settings: Settings, llm: ScriptedLLM,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # allowed_actions is imported by the activity when first used (an idle worker loads no chat reader): watched
    # where it is defined, which that import reads.
    seen = [watched(monkeypatch, skills.chat.intent, "allowed_actions"),
            *(watched(monkeypatch, activities.agent, name) for name in ("needs_checked", "fit_request", "_calls_read"))]
    settings = settings.model_copy(update={"llm_base_url": llm.base_url, "llm_api_key": "sk-fake-test-key"})
    store = Store.from_settings(settings)
    agent = AgentActivities(store, settings, FixedTools([OUTBOX]))
    conversation = f"{CHAT_CONVERSATION}loop"
    store.conversations.append_messages(conversation, [ChatMessage(role="user", content="remind me every day at 9")],
                                        datetime.now(UTC))
    llm.script("chat", [structured({"action": "reply", "reply": "At 9, then."})])

    done = await ActivityEnvironment().run(agent.llm_turn, LlmTurn(
        conversation_id=conversation, model="chat", tools=["memory_store_skill"], step=1, tool_mode="structured"))
    assert done.final == "At 9, then."
    read = {name: value for one in seen for name, value in one.items()}
    assert read == {"allowed_actions": False, "needs_checked": False, "fit_request": False, "_calls_read": False}


async def test_a_plain_reminder_is_read_off_the_loop(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    ran = watched(monkeypatch, skills.when.phrasing, "plain_reminder")  # imported by the activity when first used
    settings = settings.model_copy(update={"chat_plain_reminders": True})
    # The proposals are never reached: "hello" is no reminder, so the activity answers that it is the model's.
    phrasing = PhrasingActivities(Store.from_settings(settings), settings, proposals=object())  # type: ignore[arg-type]
    read = await ActivityEnvironment().run(phrasing.propose_reminder, ReminderRequest(
        conversation_id=f"{CHAT_CONVERSATION}loop", message="hello", now=datetime(2026, 11, 27, 10, tzinfo=UTC)))
    assert read.proposal is None
    assert ran == {"plain_reminder": False}
