"""max_tokens_per_month: a fire that would pass an Agent-tier skill's monthly tokens is skipped, and the
owner is told once, not at every fire; a manual run is what the owner asked for, and runs."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from temporalio.client import Client

from config.settings import Settings
from skills.errors import SkillValidationError
from tests.conftest import Engine, eventually, trigger_schedule
from tests.fakes.llm_server import ScriptedLLM, say


@pytest.fixture
async def agent(client: Client, settings: Settings, llm: ScriptedLLM) -> AsyncIterator[Engine]:
    engine = await Engine(settings.model_copy(update={
        "llm_base_url": llm.base_url, "llm_api_key": "sk-test", "llm_model": "capped"}), client).start()
    yield engine
    await engine.stop()


async def test_a_fire_past_the_monthly_tokens_is_skipped_and_told_once(agent: Engine, llm: ScriptedLLM,
                                                                      client: Client) -> None:
    llm.script("capped", [say("Summarized.", prompt_tokens=700, completion_tokens=100)])
    skill = (await agent.skills.register({
        "name": "digest", "instructions": "Summarize the outbox.", "required_tools": ["outbox_list_messages"],
        "schedule": "0 0 1 1 *", "max_tokens_per_month": 1_000, "notify_on_completion": False})).skill
    assert skill is not None and skill.schedule_id and skill.max_tokens_per_month == 1_000
    assert (await agent.skills.run("digest")).status == "success"  # 800 of 1,000: a manual run always runs

    for fire in (1, 2):
        await trigger_schedule(client, skill.schedule_id)
        await eventually(lambda fire=fire: _skips(agent, fire), timeout=60)
    [first, _] = [r for r in await agent.skills.runs("digest") if r.status == "skipped"]
    assert first.summary == ("budget (max_tokens_per_month): the skill used 800 tokens in 30 days and a run takes "
                             "about 800; its max_tokens_per_month is 1,000")
    told = [m["message"] for m in agent.outbox()]
    assert len(told) == 1 and told[0].startswith("⛔ digest: its fires are skipped, the skill used 800 tokens")
    assert len(llm.requests_for("capped")) == 1  # the skipped fires asked the model nothing


async def test_the_cap_is_bounded_and_named(agent: Engine) -> None:
    with pytest.raises(SkillValidationError) as refused:
        await agent.skills.register({"name": "x", "instructions": "x", "max_tokens_per_month": 0})
    assert [e.field for e in refused.value.errors] == ["max_tokens_per_month"]


async def _skips(engine: Engine, count: int) -> bool:
    return len([r for r in await engine.skills.runs("digest") if r.status == "skipped"]) >= count
