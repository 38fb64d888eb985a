"""A tool its server marks destructive (``destructiveHint: true``) waits for the owner's approval in a run,
on a real worker, a real MCP server (tests/mcp_servers/ledger_server.py) and a real Temporal dev server,
unless the skill exempts it (``approval_exempt_tools``) or a standing grant approves the call."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from config.settings import Settings
from skills.errors import SkillValidationError
from tests.conftest import ROOT, Engine, eventually, write_mcp_config
from tests.fakes.llm_server import ScriptedLLM, call, say, scripted_llm_fixture
from tests.starter.test_cli import options, run_skills
from tests.workflows.test_approvals import finished, waiting

LEDGER = ROOT / "tests" / "mcp_servers" / "ledger_server.py"
KEY = "sk-test-key"
llm = scripted_llm_fixture(api_key=KEY)


def ledger_settings(settings: Settings, tmp_path: Path, **extra: Any) -> Settings:
    config = write_mcp_config(tmp_path / "mcp.json", {"ledger": {"command": sys.executable, "args": [str(LEDGER)]}})
    return settings.model_copy(update={"mcp_config": config, **extra})


@pytest.fixture
async def ledger(client: Client, settings: Settings, tmp_path: Path) -> AsyncIterator[Engine]:
    engine = await Engine(ledger_settings(settings, tmp_path), client).start()
    yield engine
    await engine.stop()


def remover(name: str = "tidy ledger", entry: str = "rent", **extra: Any) -> dict[str, Any]:
    """A manual Direct skill: list the entries (read-only), then remove one (destructive)."""
    return {"name": name, "instructions": "Tidy the ledger", "notify_on_completion": False,
            "execution_plan": [{"id": "list", "toolName": "ledger_entries"},
                               {"id": "drop", "toolName": "ledger_remove", "parameters": {"entry": entry}}],
            **extra}


async def test_a_destructive_call_waits_for_approval(ledger: Engine) -> None:
    await ledger.skills.register(remover())
    await ledger.skills.run("tidy ledger", wait=False)
    [approval] = await waiting(ledger)
    # Only the destructive call asks: the read-only step before it ran at once.
    assert (approval.tool, approval.arguments) == ("ledger_remove", {"entry": "rent"})
    [run] = await ledger.skills.runs("tidy ledger")
    assert run.status == "waiting"
    await ledger.skills.approve(approval.id)
    run = await finished(ledger, "tidy ledger")
    assert run.status == "success"
    assert [(c.tool, c.ok, c.result) for c in run.tool_calls] == [
        ("ledger_entries", True, "rent, coffee"), ("ledger_remove", True, "removed rent")]

    # Denied, it is not made.
    await ledger.skills.run("tidy ledger", wait=False)
    [second] = await waiting(ledger)
    await ledger.skills.deny(second.id, "keep it")
    denied = await eventually(lambda: _status(ledger, second.run_id, "denied"), timeout=30)
    assert [c.tool for c in denied.tool_calls] == ["ledger_entries"]


async def _status(engine: Engine, run_id: str | None, status: str) -> Any:
    return next((r for r in await engine.skills.runs("tidy ledger") if r.run_id == run_id and r.status == status),
                None)


async def test_an_exempt_destructive_tool_runs_unattended(ledger: Engine) -> None:
    done = await ledger.skills.register(remover(approval_exempt_tools=["ledger_remove"]))
    assert done.skill is not None and done.skill.approval_exempt_tools == ["ledger_remove"]
    run = await ledger.skills.run("tidy ledger")
    assert not isinstance(run, str) and run.status == "success"
    assert [c.result for c in run.tool_calls] == ["rent, coffee", "removed rent"]
    assert await ledger.skills.approvals(status=None) == []

    # Dropping the exemption (an update): the next run asks again.
    await ledger.skills.update("tidy ledger", {"approval_exempt_tools": []})
    await ledger.skills.run("tidy ledger", wait=False)
    [approval] = await waiting(ledger)
    assert approval.tool == "ledger_remove"
    await ledger.skills.deny(approval.id, "test")
    await finished(ledger, "tidy ledger")


async def test_an_exemption_names_a_destructive_tool_of_the_skill(ledger: Engine) -> None:
    for exempt, says in ((["ledger_entries"], "not marked destructive"), (["ledger_add"], "not one of the skill's"),
                         (["ledger_remove"], "approval_required_tools too")):
        extra: dict[str, Any] = {"approval_exempt_tools": exempt}
        if says.startswith("approval_required"):
            extra["approval_required_tools"] = ["ledger_remove"]
        with pytest.raises(SkillValidationError) as refused:
            await ledger.skills.register(remover(**extra))
        assert refused.value.errors[0].field == "approval_exempt_tools" and says in str(refused.value)
    # A tool that says nothing of itself is not destructive: its calls never asked, nothing to exempt.
    with pytest.raises(SkillValidationError, match="not marked destructive"):
        await ledger.skills.register({**remover(), "execution_plan": [
            {"id": "add", "toolName": "ledger_add", "parameters": {"entry": "tea"}}],
            "approval_exempt_tools": ["ledger_add"]})


async def test_a_grant_approves_a_destructive_call_and_is_recorded(ledger: Engine) -> None:
    await ledger.skills.register(remover())
    grant = await ledger.skills.grant("ledger_remove", skill="tidy ledger", where={"entry": "rent"})
    run = await ledger.skills.run("tidy ledger")
    assert not isinstance(run, str) and run.status == "success"
    [approval] = await ledger.skills.approvals(status=None)
    assert (approval.tool, approval.status, approval.decided_by) == ("ledger_remove", "approved", f"grant:{grant.id}")
    assert approval.run_id == run.run_id and approval.outcome


async def test_an_agent_runs_destructive_call_waits_and_an_exempt_one_does_not(
        client: Client, settings: Settings, tmp_path: Path, llm: ScriptedLLM) -> None:
    llm.script("default", [call("ledger_remove", {"entry": "coffee"}), say("Removed coffee."),
                           call("ledger_remove", {"entry": "rent"}), say("Removed rent.")])
    engine = await Engine(ledger_settings(settings, tmp_path, llm_base_url=llm.base_url, llm_api_key=KEY,
                                          llm_model="default"), client).start()
    try:
        await engine.skills.register({"name": "agent tidy", "instructions": "Remove coffee from the ledger.",
                                      "required_tools": ["ledger_remove"], "notify_on_completion": False})
        await engine.skills.run("agent tidy", wait=False)
        [approval] = await waiting(engine)
        assert (approval.tool, approval.arguments) == ("ledger_remove", {"entry": "coffee"})
        await engine.skills.approve(approval.id)
        run = await finished(engine, "agent tidy")
        assert run.status == "success" and [(c.tool, c.ok) for c in run.tool_calls] == [("ledger_remove", True)]

        await engine.skills.update("agent tidy", {"approval_exempt_tools": ["ledger_remove"]})
        again = await engine.skills.run("agent tidy")
        assert not isinstance(again, str) and again.status == "success" and again.summary == "Removed rent."
        assert [a.id for a in await engine.skills.approvals(status=None)] == [approval.id]
    finally:
        await engine.stop()


async def test_skills_get_shows_the_exemption(ledger: Engine) -> None:
    await ledger.skills.register(remover(approval_exempt_tools=["ledger_remove"]))
    got = await asyncio.to_thread(run_skills, "get", "tidy ledger", *options(ledger))
    assert got.returncode == 0, got.stderr
    assert "none listed (a tool marked destructive asks); runs unattended though marked destructive: " \
           "ledger_remove" in " ".join(got.stdout.split())
