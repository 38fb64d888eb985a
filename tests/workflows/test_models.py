"""A skill's own model and its ordered fallback_models, on a real worker against the scripted LLM: checked
against the endpoint's model list at registration, tried in order when a turn fails in a way another model
can fix (unknown model, overloaded or rate-limited after its retries), and the answering model recorded."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from temporalio.client import Client

from config.settings import Settings
from skills.errors import SkillValidationError
from tests.conftest import Engine
from tests.fakes.llm_server import ScriptedLLM, call, error, say, scripted_llm_fixture

KEY = "sk-test-key"
llm = scripted_llm_fixture(api_key=KEY, models=["gpt-4o-mini", "backup", "spare"])


@pytest.fixture
async def agent(client: Client, settings: Settings, llm: ScriptedLLM) -> AsyncIterator[Engine]:
    engine = await Engine(settings.model_copy(update={
        "llm_base_url": llm.base_url, "llm_api_key": KEY, "llm_model": "default"}), client).start()
    yield engine
    await engine.stop()


def skill(name: str = "brief", **extra: object) -> dict[str, object]:
    return {"name": name, "instructions": "Send me a short note.", "required_tools": ["outbox_send_message"],
            "notify_on_completion": False, **extra}


async def test_models_are_checked_against_the_endpoints_list(agent: Engine, llm: ScriptedLLM) -> None:
    with pytest.raises(SkillValidationError) as refused:
        await agent.skills.register(skill(model="gpt-4o-mni", fallback_models=["backup", "nope"]))
    problems = {e.field: e.message for e in refused.value.errors}
    assert problems["model"] == ("the LLM endpoint does not list the model 'gpt-4o-mni'; did you mean "
                                 "'gpt-4o-mini'?")
    assert "does not list the model 'nope'" in problems["fallback_models[1]"]
    assert "fallback_models[0]" not in problems
    assert await agent.skills.list() == []  # nothing stored

    # A model added to the endpoint since its list was kept is found: a miss asks again.
    llm.script("brand-new", [say("hi")])
    done = await agent.skills.register(skill(model="brand-new", fallback_models="backup, spare, backup"))
    assert done.skill is not None and (done.skill.model, done.skill.fallback_models) == ("brand-new",
                                                                                         ["backup", "spare"])
    assert "fallback_models: 'backup' listed twice; tried once" in done.notes
    got = await agent.skills.get("brief")
    assert got.fallback_models == ["backup", "spare"]

    with pytest.raises(SkillValidationError) as shapes:
        await agent.skills.register(skill(name="b2", fallback_models=["a"] * 6))
    assert shapes.value.errors[0].field == "fallback_models" and "at most 5" in shapes.value.errors[0].message
    with pytest.raises(SkillValidationError) as spaced:
        await agent.skills.register(skill(name="b3", model="two words"))
    assert spaced.value.errors[0].field == "model"


async def test_an_endpoint_without_a_list_accepts_the_names_with_a_note(agent: Engine, llm: ScriptedLLM) -> None:
    llm.list_models = False
    done = await agent.skills.register(skill(model="whatever-7b", fallback_models=["other-7b"]))
    assert done.skill is not None and done.skill.model == "whatever-7b"
    assert any(note.startswith("not checked against the LLM endpoint's models (the endpoint has no model list: "
                               "GET /models answered 404)") for note in done.notes), done.notes
    # A Direct-tier skill makes no LLM call: its model is not asked about, and it says so.
    plan = [{"id": "s", "toolName": "outbox_send_message", "parameters": {"message": "hi"}}]
    direct = await agent.skills.register(skill(name="direct", execution_plan=plan, model="nothing-listed"))
    assert any("used by the Agent tier only" in note for note in direct.notes)


async def test_an_unknown_model_falls_back_and_the_run_records_who_answered(agent: Engine, llm: ScriptedLLM) -> None:
    llm.script("primary", [error(404)])
    llm.script("backup", [call("outbox_send_message", {"message": "from backup"}), say("Sent by the backup.")])
    await agent.skills.register(skill(model="primary", fallback_models=["backup", "spare"]))
    run = await agent.skills.run("brief")
    assert (run.status, run.summary, run.model) == ("success", "Sent by the backup.", "backup")
    assert [m["message"] for m in agent.outbox()] == ["from backup"]
    assert [r.status for r in llm.requests_for("primary")] == [404]  # not retried: unknown is unknown
    assert len(llm.requests_for("backup")) == 2 and llm.requests_for("spare") == []
    # The same conversation goes on: the backup's first request carries the task the primary was given.
    assert llm.requests_for("backup")[0].messages == llm.requests_for("primary")[0].messages
    assert (await agent.skills.runs("brief"))[0].model == "backup"


async def test_an_overloaded_model_falls_back_after_its_retries_and_stays_there(agent: Engine,
                                                                                llm: ScriptedLLM) -> None:
    llm.script("primary", [call("outbox_send_message", {"message": "one"}),
                           *[error(503, retry_after=0.01)] * 5, error(429, retry_after=0.01)])
    llm.script("backup", [call("outbox_send_message", {"message": "two"}), say("Done on the backup.")])
    await agent.skills.register(skill(model="primary", fallback_models=["backup"]))
    run = await agent.skills.run("brief")
    assert (run.status, run.model) == ("success", "backup")
    assert [m["message"] for m in agent.outbox()] == ["one", "two"]
    # Turn 1 answered on the primary; turn 2 spent its six attempts there, then moved on for good.
    assert [r.status for r in llm.requests_for("primary")] == [200, 503, 503, 503, 503, 503, 429]
    assert [r.status for r in llm.requests_for("backup")] == [200, 200]


async def test_a_refusal_no_model_can_fix_does_not_fall_back(agent: Engine, llm: ScriptedLLM) -> None:
    llm.script("primary", [error(401)])
    llm.script("backup", [say("never asked")])
    await agent.skills.register(skill(model="primary", fallback_models=["backup"]))
    run = await agent.skills.run("brief")
    assert run.status == "error" and "refused the API key" in run.summary and run.model is None
    assert llm.requests_for("backup") == []

    # Every model failing: the run fails with the last one's words.
    llm.script("a", [error(404)])
    llm.script("b", [error(404)])
    await agent.skills.register(skill(name="all-gone", model="a", fallback_models=["b"]))
    gone = await agent.skills.run("all-gone")
    assert gone.status == "error" and "does not know the model 'b'" in gone.summary


async def test_without_fallbacks_the_run_records_its_model(agent: Engine, llm: ScriptedLLM) -> None:
    llm.script("default", [say("ok")])
    await agent.skills.register(skill())
    run = await agent.skills.run("brief")
    assert (run.status, run.model) == ("success", "default")
