"""SKILL.md toolsets on a real worker: a skill's own MCP server (a real stdio process) serves its
run only, in a Direct plan, an Agent-tier run and a chat turn that matched it (the scripted LLM);
a skill without it cannot name its tools; a server that fails to start fails only that run."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from client.files import sync_files
from config.settings import Settings
from starter import tools_cli
from tests.conftest import ROOT, Engine, eventually, trust_files
from tests.fakes.llm_server import ScriptedLLM, call, say, scripted_llm_fixture
from tests.history import replayer
from tests.skills.skillmd.skill_files import skill_text
from workflows.chat import ChatTurn
from workflows.run import SkillRun

SERVER = ROOT / "tests" / "mcp_servers" / "changing_server.py"
NEVER = {"schedule": "0 3 1 1 *"}  # registered and scheduled, but only run by hand here
# The server is in the skill's folder (a toolset's sandbox sees that folder, not the tests'), run by the
# worker's own Python (first on the sandbox's PATH).
CHANGING = {"changing": {"command": "python", "args": ["changing_server.py"]}}
BROKEN = {"broken": {"command": "python", "args": ["-c", "import sys; sys.exit('cannot start: no licence')"]}}

llm = scripted_llm_fixture(api_key="sk-toolsets-key")


def write(root: Path, name: str, tool: str | None, toolsets: dict[str, Any] | None = None, *,
          keywords: list[str] | None = None) -> Path:
    """A SKILL.md skill: a Direct plan calling ``tool``, or (no tool) an Agent-tier skill; scheduled unless
    it has ``keywords`` (then a chat playbook)."""
    metadata: dict[str, Any] = {"notify_on_completion": False}
    if keywords is None:
        metadata["trigger_config"] = NEVER
    if tool is not None:
        metadata["execution_plan"] = [{"id": "use", "toolName": tool, "parameters": {"name": f"from-{name}"}}]
    frontmatter: dict[str, Any] = {"name": name, "description": f"The {name} skill.", "metadata": metadata}
    if toolsets is not None:
        frontmatter["toolsets"] = toolsets
    if keywords is not None:
        frontmatter["triggers"] = {"keywords": keywords}
    path = root / name / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(skill_text(frontmatter, "Use the tool."))
    if toolsets:
        shutil.copyfile(SERVER, path.parent / SERVER.name)
    return path


async def test_a_skill_uses_its_own_toolset_and_a_broken_one_fails_only_its_run(
        engine: Engine, capsys: pytest.CaptureFixture[str]) -> None:
    user = engine.settings.user_skills_dir
    write(user, "with-tools", "changing_add_tool_quietly", CHANGING)
    write(user, "without-tools", "changing_add_tool_quietly")
    write(user, "broken-tools", "broken_anything", BROKEN)
    # A toolset named like one of the worker's servers: for this skill, outbox_* is its own server.
    write(user, "own-outbox", "outbox_add_tool_quietly", {"outbox": CHANGING["changing"]})

    await trust_files(engine)  # the owner trusts what the skills run

    result = await sync_files(engine.skills)

    assert sorted(c.change.name for c in result.created) == ["broken-tools", "own-outbox", "with-tools"]
    [refused] = result.refused
    assert refused.name == "without-tools"
    assert any("unknown tool 'changing_add_tool_quietly'" in e for e in refused.errors)

    run = await engine.skills.run("with-tools", "files")
    assert run.status == "success", run.summary  # type: ignore[union-attr]
    [call] = run.tool_calls  # type: ignore[union-attr]
    assert call.tool == "changing_add_tool_quietly" and call.ok and call.result == "added from-with-tools"
    # The worker's own catalog never got the skill's server; it lists it under its skill.
    catalog = await engine.skills.catalog()
    assert "changing" not in {server.name for server in catalog.servers}
    toolsets = {(t.skill, t.server): t for t in catalog.skill_toolsets}
    assert sorted(toolsets) == [("broken-tools", "broken"), ("own-outbox", "outbox"), ("with-tools", "changing")]
    assert [key for key, toolset in toolsets.items() if toolset.shadows] == [("own-outbox", "outbox")]
    assert toolsets["with-tools", "changing"].connected
    assert "changing_add_tool_quietly" in toolsets["with-tools", "changing"].tools
    assert not toolsets["broken-tools", "broken"].connected and toolsets["broken-tools", "broken"].tools == []

    broken = await engine.skills.run("broken-tools", "files")
    assert broken.status == "error"  # type: ignore[union-attr]
    assert "toolset server 'broken' of skill 'broken-tools' failed to start" in broken.summary  # type: ignore[union-attr]

    # The worker is fine: the first skill runs again.
    again = await engine.skills.run("with-tools", "files")
    assert again.status == "success"  # type: ignore[union-attr]

    own = await engine.skills.run("own-outbox", "files")
    assert own.status == "success", own.summary  # type: ignore[union-attr]
    assert [c.result for c in own.tool_calls] == ["added from-own-outbox"]  # type: ignore[union-attr]
    worker_outbox = {entry.name for entry in (await engine.skills.catalog()).catalog["outbox"]}
    assert "outbox_send_message" in worker_outbox and "outbox_add_tool_quietly" not in worker_outbox  # untouched
    capsys.readouterr()
    await tools_cli.catalog(argparse.Namespace(json=False, refresh=False), engine.skills)
    printed = capsys.readouterr().out.splitlines()
    [line] = [line for line in printed if line.startswith("  own-outbox: outbox")]
    assert line.endswith("(shadows the worker's outbox for this skill)") and "connected" in line
    assert not any("shadows" in line for line in printed if line.startswith("  with-tools: "))


async def test_an_agent_run_and_a_chat_turn_are_offered_their_skills_toolsets(
        client: Client, settings: Settings, llm: ScriptedLLM) -> None:
    user = settings.user_skills_dir
    write(user, "agent-with-tools", None, CHANGING)  # Agent tier: no plan, no required_tools
    write(user, "agent-without", None)
    write(user, "agent-broken", None, BROKEN)
    write(user, "toolsmith", None, CHANGING, keywords=["toolsmith"])
    write(user, "brokensmith", None, BROKEN, keywords=["brokensmith"])
    llm.script("default", [
        call("changing_add_tool_quietly", {"name": "by-agent"}),
        say("Added the tool by-agent."),
        # agent-without: its sandbox has no such tool, so the call is refused and never reaches a server
        call("changing_add_tool_quietly", {"name": "smuggled"}),
        say("I could not."),
        # the chat turn that matched toolsmith:
        call("changing_add_tool_quietly", {"name": "by-chat"}),
        say("Done: by-chat is added."),
        # the chat turn that matched brokensmith:
        say("That skill's tools are not available now."),
    ])
    engine = await Engine(settings.model_copy(update={
        "llm_base_url": llm.base_url, "llm_api_key": "sk-toolsets-key", "llm_model": "default",
    }), client).start()
    try:
        await trust_files(engine)  # the owner trusts what the skills run
        result = await sync_files(engine.skills)
        assert not result.refused, result.refused

        run = await engine.skills.run("agent-with-tools", "files")
        assert run.status == "success", run.summary  # type: ignore[union-attr]
        assert [(c.tool, c.ok, c.result) for c in run.tool_calls] == [  # type: ignore[union-attr]
            ("changing_add_tool_quietly", True, "added by-agent")]
        first, second = llm.requests_for("default")[:2]
        # The sandbox: the skill's own server's tools, with their schemas, and nothing of the worker's.
        assert "changing_add_tool_quietly" in first.tool_names and "changing_wait" in first.tool_names
        assert "outbox_send_message" not in first.tool_names
        [quietly] = [t for t in first.tools if t["function"]["name"] == "changing_add_tool_quietly"]
        assert "name" in quietly["function"]["parameters"]["properties"]
        assert "changing_add_tool_quietly" in first.messages[0]["content"]  # the system prompt names it
        assert second.messages[-1] == {"role": "tool", "tool_call_id": second.messages[-2]["tool_calls"][0]["id"],
                                       "content": "added by-agent"}

        other = await engine.skills.run("agent-without", "files")
        assert other.status == "success", other.summary  # type: ignore[union-attr]
        [refused] = other.tool_calls  # type: ignore[union-attr]
        assert refused.refused and not refused.ok
        third, fourth = llm.requests_for("default")[2:4]
        assert third.tool_names == []
        assert "not available to this skill" in fourth.messages[-1]["content"]

        asked = len(llm.requests_for("default"))
        broken = await engine.skills.run("agent-broken", "files")
        assert broken.status == "error"  # type: ignore[union-attr]
        assert "toolset server 'broken' of skill 'agent-broken' failed to start" in broken.summary  # type: ignore[union-attr]
        assert "no licence" in broken.summary  # type: ignore[union-attr]
        assert len(llm.requests_for("default")) == asked  # failed before any LLM turn

        reply = await engine.skills.chat("toolsmith: add a tool called by-chat", session_id="toolsets")
        assert reply.ok and reply.reply == "Done: by-chat is added.", reply
        assert reply.matched == ["toolsmith"] and reply.unavailable == []
        chat_asked, chat_answered = llm.requests_for("default")[4:6]
        assert "changing_add_tool_quietly" in chat_asked.tool_names and "memory_store_skill" in chat_asked.tool_names
        assert "The skill toolsmith brings its own tools for this message: changing_*" in \
            chat_asked.messages[0]["content"]
        assert chat_answered.messages[-1]["content"] == "added by-chat"

        sorry = await engine.skills.chat("brokensmith: do it", session_id="toolsets-broken")
        assert sorry.ok and sorry.reply == "That skill's tools are not available now.", sorry
        [reason] = sorry.unavailable
        assert "toolset server 'broken' of skill 'brokensmith' failed to start" in reason
        last = llm.requests_for("default")[6]
        assert not any(name.startswith("broken_") for name in last.tool_names)
        assert "memory_store_skill" in last.tool_names

        # The histories replay: the toolsets' steps are deterministic workflow code.
        chats = await eventually(lambda: _chat_turns(client, engine.settings.task_queue, 2))
        replaying = replayer(SkillRun, ChatTurn)
        for workflow_id in [run.workflow_id, broken.workflow_id, *chats]:  # type: ignore[union-attr]
            await replaying.replay_workflow(await client.get_workflow_handle(workflow_id).fetch_history())
    finally:
        await engine.stop()


async def _chat_turns(client: Client, task_queue: str, count: int) -> list[str] | None:
    """The ids of the queue's closed ChatTurn workflows, once there are ``count`` of them."""
    found = [w.id async for w in client.list_workflows(
        f"WorkflowType='ChatTurn' AND TaskQueue='{task_queue}' AND ExecutionStatus='Completed'")]
    return found if len(found) == count else None
