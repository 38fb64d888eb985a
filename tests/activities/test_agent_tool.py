"""agent_tool retried after an earlier attempt answered its call: the answer is not made again, and what the
call proposed still reaches the turn's reply (the attempt's own result was lost when it timed out)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from temporalio.client import Client
from temporalio.testing import ActivityEnvironment

from activities.agent import AgentActivities
from activities.chat import ToolRouter
from activities.proposals import Proposals
from activities.registration import RegistrationActivities
from adapters.store import Store
from client import SkillsClient
from client.management import ManagementTools
from config.settings import Settings
from skills.llm.agent import ChatMessage, ToolCallMessage
from skills.messages.agent import AgentToolCall
from skills.naming import CHAT_CONVERSATION
from skills.run.catalog import ToolResult
from tests.fakes.tools import FixedTools

STRETCH = {"name": "stretch", "instructions": "Remind me to stretch", "schedule": "0 9 * * *"}


async def test_a_proposal_answered_by_a_lost_attempt_is_still_the_retrys_change(client: Client,
                                                                                settings: Settings) -> None:
    store = Store.from_settings(settings)
    registration = RegistrationActivities(store, settings, FixedTools())
    router = ToolRouter(FixedTools(), ManagementTools(SkillsClient(client, settings.task_queue)),
                        Proposals(store, settings, registration))
    agent = AgentActivities(store, settings, router)
    conversation = f"{CHAT_CONVERSATION}victim"
    seq = store.conversations.append_messages(conversation, [
        ChatMessage(role="user", content="every day at 9 remind me to stretch"),
        ChatMessage(role="assistant", tool_calls=[
            ToolCallMessage(id="call_1", name="memory_store_skill", arguments=json.dumps(STRETCH))])],
        datetime.now(UTC))
    request = AgentToolCall(conversation_id=conversation, message_seq=seq, call_id="call_1",
                            allowed=["memory_store_skill"])

    first = await ActivityEnvironment().run(agent.agent_tool, request)
    assert first.ok and first.change is not None and first.change["action"] == "proposed"
    [proposal] = store.approvals.list_approvals(session_id="victim")
    assert first.change["approval_id"] == proposal.id

    # The first attempt stored its answer, then timed out: the server retries the call.
    again = await ActivityEnvironment().run(agent.agent_tool, request)
    assert again.excerpt == "(already answered)" and again.change == first.change
    assert store.approvals.list_approvals(session_id="victim") == [proposal]  # recorded once
    answers = [m for m in store.conversations.load_messages(conversation) if m.role == "tool"]
    assert len(answers) == 1



async def test_a_change_made_by_a_lost_attempt_is_still_the_retrys_change(settings: Settings) -> None:
    """Issue 52: a change made (a pause, a move: made at once, not proposed) by an attempt whose result was lost
    was missing from the retry's result, so the account said nothing was stored when something was."""
    store = Store.from_settings(settings)
    made: list[dict[str, object]] = []
    change = {"action": "updated", "id": 4, "name": "stand up", "tier": "direct", "enabled": False,
              "trigger": {"schedule": "0 10 * * 1-5"}, "changed": [{"field": "enabled", "before": True, "after": False}]}

    async def send(name: str, arguments: dict[str, object], *, idempotency_key: str = "") -> ToolResult:
        made.append(arguments)
        return ToolResult(ok=True, text="Updated skill 4 'stand up'.", change=change)

    agent = AgentActivities(store, settings, FixedTools(call=send))
    conversation = f"{CHAT_CONVERSATION}owner"
    seq = store.conversations.append_messages(conversation, [
        ChatMessage(role="user", content="pause the stand up reminder"),
        ChatMessage(role="assistant", tool_calls=[
            ToolCallMessage(id="call_1", name="memory_update_skill",
                            arguments=json.dumps({"skill_id": "stand up", "enabled": False}))])],
        datetime.now(UTC))
    request = AgentToolCall(conversation_id=conversation, message_seq=seq, call_id="call_1",
                            allowed=["memory_update_skill"])

    first = await ActivityEnvironment().run(agent.agent_tool, request)
    assert first.ok and first.change == change
    # The first attempt stored its answer, then timed out: the server retries the call.
    again = await ActivityEnvironment().run(agent.agent_tool, request)
    assert again.excerpt == "(already answered)" and again.change == change
    assert len(made) == 1  # made once
