"""A registration, or a chat's proposal, that repeats a skill its agent has says so and names it."""

from __future__ import annotations

from tests.conftest import Engine
from tests.fakes.llm_server import ScriptedLLM, call, say


def water(name: str, **fields: object) -> dict[str, object]:
    return {"name": name, "instructions": "Remind me to drink water", "schedule": "0 * * * *",
            "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "Drink water!"}}],
            **fields}


async def test_a_second_skill_doing_the_same_at_the_same_times_is_named_not_refused(engine: Engine) -> None:
    first = (await engine.skills.register(water("drink water"))).skill
    assert first is not None
    again = await engine.skills.register(water("hydrate"))
    assert again.skill is not None  # stored all the same: two may rightly do one thing
    [note] = [n for n in again.notes if n.startswith("closely repeats")]
    assert f"skill {first.id} 'drink water' (the same plan, fire times that meet" in note
    other = await engine.skills.register(water("evening water", schedule="30 20 * * *",
                                               instructions="Evening: a glass before bed"))
    assert not any(n.startswith("closely repeats") for n in other.notes)
    # An update of the skill itself repeats nothing.
    updated = await engine.skills.update("drink water", {"description": "hourly"})
    assert not any(n.startswith("closely repeats") for n in updated.notes)


async def test_a_chat_proposal_names_the_skill_it_would_repeat(assistant: Engine, llm: ScriptedLLM) -> None:
    first = (await assistant.skills.register(water("drink water"))).skill
    assert first is not None
    llm.script("chat", [call("memory_store_skill", water("water again")), say("Shall I?")])
    reply = await assistant.skills.chat("remind me every hour to drink water", session_id="twice")
    [proposal] = reply.proposals
    assert f"note: closely repeats skill {first.id} 'drink water'" in proposal.summary
    answer = llm.requests_for("chat")[1].messages[-1]["content"]  # what the model read of its call
    assert f"memory_update_skill with skill_id {first.id}" in answer
