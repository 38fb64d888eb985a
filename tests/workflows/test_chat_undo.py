""""Undo that" in a chat: the session's last change, taken back, as a proposal for the owner's yes."""

from __future__ import annotations

from tests.conftest import Engine
from tests.fakes.llm_server import ScriptedLLM, call, say


def water(name: str = "drink water", schedule: str = "0 * * * *") -> dict[str, object]:
    return {"name": name, "instructions": "Remind me to drink water", "schedule": schedule,
            "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "Drink water!"}}]}


async def test_undo_proposes_deleting_what_the_chat_created(assistant: Engine, llm: ScriptedLLM) -> None:
    llm.script("chat", [call("memory_store_skill", water()), say("Shall I?"),
                        call("memory_undo", {}), say("Shall I undo it?")])
    await assistant.skills.chat("every hour remind me to drink water", session_id="u1")
    assert (await assistant.skills.chat("yes", session_id="u1")).changes[0]["action"] == "created"

    reply = await assistant.skills.chat("undo that", session_id="u1")
    [proposal] = reply.proposals
    assert proposal.tool == "memory_delete_skill" and "Undo of this chat's last change" in proposal.summary
    assert [s.name for s in await assistant.skills.list()] == ["drink water"]  # proposed, not made
    done = await assistant.skills.chat("yes", session_id="u1")
    assert [c["action"] for c in done.changes] == ["deleted"]
    assert await assistant.skills.list() == []


async def test_undo_takes_a_change_back_to_the_revision_before(assistant: Engine, llm: ScriptedLLM) -> None:
    skill = (await assistant.skills.register(water())).skill
    assert skill is not None
    llm.script("chat", [call("memory_update_skill", {"skill_id": "drink water", "enabled": False}), say("Paused."),
                        call("memory_undo", {}), say("Shall I?")])
    await assistant.skills.chat("pause drink water", session_id="u2")  # a pause is made at once
    assert not (await assistant.skills.get("drink water")).enabled

    [proposal] = (await assistant.skills.chat("undo that", session_id="u2")).proposals
    assert proposal.tool == "memory_update_skill" and "back to revision 1" in proposal.summary
    assert "enabled: false -> true" in proposal.summary
    await assistant.skills.chat("yes", session_id="u2")
    assert (await assistant.skills.get("drink water")).enabled


async def test_nothing_to_undo_is_said_to_the_model(assistant: Engine, llm: ScriptedLLM) -> None:
    llm.script("chat", [call("memory_undo", {}), say("There is nothing to undo.")])
    reply = await assistant.skills.chat("undo that", session_id="u3")
    assert reply.ok and reply.proposals == []
    answer = llm.requests_for("chat")[1].messages[-1]["content"]
    assert "this chat has changed no skill: nothing to undo" in answer
