"""A reply that claims a proposal (issue 52): the engine lets it stand only when the turn did propose.

The scripted model plays the 1.5B model's habit seen in ``bench.chat_real --set needs``: it answers "Proposed,
NOT made" (the words of the engine's account) with nothing proposed. Everything else is real."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from temporalio.client import Client

from config.settings import Settings
from tests.conftest import Engine
from tests.fakes.llm_server import ScriptedLLM, call, say, structured
from tests.workflows.test_chat_small_model import engine_with


@pytest.fixture
async def structured_engine(client: Client, settings: Settings, llm: ScriptedLLM) -> AsyncIterator[Engine]:
    running = await engine_with(client, settings, llm, "structured")
    yield running
    await running.stop()


@pytest.fixture
async def native(client: Client, settings: Settings, llm: ScriptedLLM) -> AsyncIterator[Engine]:
    running = await engine_with(client, settings, llm, "native")
    yield running
    await running.stop()


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
