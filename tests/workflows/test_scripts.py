"""Skill scripts on a real worker: a Direct plan's run_script step, an Agent-tier run and a chat turn
calling the run_script tool (the scripted LLM), all through the real bwrap sandbox; and the refusals
(scripts disabled, bubblewrap missing) with their reasons, said at the worker's start and by
`skills doctor` too; and a bwrap under a folder only its owner may enter."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from activities.scripts import SANDBOX_DOCS
from client.doctor import diagnose
from client.files import sync_files
from config.settings import Settings
from tests.adapters.test_sandbox_user import install_bwrap, private_folder
from tests.conftest import Engine, trust_files
from tests.fakes.llm_server import ScriptedLLM, call, say, scripted_llm_fixture
from tests.skills.skillmd.skill_files import skill_text

NEVER = {"schedule": "0 3 1 1 *"}  # registered and scheduled, but only run by hand here
REPORT = """\
import json, pathlib, sys
words = pathlib.Path("references/words.txt").read_text().split()
pathlib.Path("/tmp/scratch.txt").write_text("kept in the temp dir")
print(json.dumps({"count": int(sys.argv[1]), "words": words[: int(sys.argv[1])],
                  "scratch": pathlib.Path("/tmp/scratch.txt").read_text()}))
"""

llm = scripted_llm_fixture(api_key="sk-test-key")


def write_skill(root: Path, name: str, *, plan: list[dict[str, Any]] | None = None,
                scripts: dict[str, str] | None = None, trigger: dict[str, Any] | None = None,
                keywords: list[str] | None = None, body: str = "Count the words with the report script.") -> Path:
    metadata: dict[str, Any] = {"notify_on_completion": False}
    if trigger is not None:
        metadata["trigger_config"] = trigger
    if plan is not None:
        metadata["execution_plan"] = plan
    scripts = scripts if scripts is not None else {"report.py": REPORT, "fail.sh": "echo 'no luck' >&2\nexit 2\n"}
    frontmatter: dict[str, Any] = {"name": name, "description": f"The {name} skill.", "metadata": metadata,
                                   "scripts": sorted(scripts)}
    if keywords:
        frontmatter["triggers"] = {"keywords": keywords}
    folder = root / name
    (folder / "scripts").mkdir(parents=True)
    (folder / "references").mkdir()
    (folder / "references" / "words.txt").write_text("alpha beta gamma delta\n")
    for script, text in scripts.items():
        (folder / "scripts" / script).write_text(text)
    (folder / "SKILL.md").write_text(skill_text(frontmatter, body))
    return folder


def step(script: str, *args: str) -> list[dict[str, Any]]:
    return [{"id": "report", "toolName": "run_script", "parameters": {"script": script, "args": list(args)}}]


async def attempts(client: Client, workflow_id: str, activity: str) -> list[int]:
    """The attempts of each ``activity`` the workflow ran, from its real history."""
    scheduled: dict[int, str] = {}
    found = []
    async for event in client.get_workflow_handle(workflow_id).fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled[event.event_id] = event.activity_task_scheduled_event_attributes.activity_type.name
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            attrs = event.activity_task_started_event_attributes
            if scheduled.get(attrs.scheduled_event_id) == activity:
                found.append(attrs.attempt)
    return found


async def test_a_direct_plan_runs_a_script_step_in_the_sandbox(client: Client, settings: Settings) -> None:
    user = settings.user_skills_dir
    write_skill(user, "word-count", plan=step("report.py", "2"), trigger=NEVER)
    write_skill(user, "unlucky", plan=step("fail.sh"), trigger=NEVER)
    write_skill(user, "sneaky", plan=step("../SKILL.md"), trigger=NEVER)
    engine = await Engine(settings.model_copy(update={"scripts_enabled": True}), client).start()
    try:
        await trust_files(engine)  # the owner trusts what the skills run
        synced = await sync_files(engine.skills)
        assert sorted(c.change.name for c in synced.created) == ["sneaky", "unlucky", "word-count"], synced

        run = await engine.skills.run("word-count", "files")
        assert run.status == "success", run.summary  # type: ignore[union-attr]
        [recorded] = run.tool_calls  # type: ignore[union-attr]
        assert recorded.tool == "run_script" and recorded.ok
        assert recorded.result.strip() == ('{"count": 2, "words": ["alpha", "beta"], '
                                           '"scratch": "kept in the temp dir"}')
        assert not (user / "word-count" / "scratch.txt").exists()  # the temp dir went with the run

        failed = await engine.skills.run("unlucky", "files")
        assert failed.status == "error"  # type: ignore[union-attr]
        assert failed.summary == ("run_script failed: [stderr]\nno luck\n\n"  # type: ignore[union-attr]
                                  "[script fail.sh failed: exited with status 2]")
        # A script that ran and failed is a result: it was not run again.
        assert await attempts(client, failed.workflow_id, "run_script") == [1]  # type: ignore[union-attr]

        sneaky = await engine.skills.run("sneaky", "files")
        assert sneaky.status == "error"  # type: ignore[union-attr]
        assert "script: '../SKILL.md' is not a script skill 'sneaky' declares (it declares: fail.sh, " \
               "report.py)" in sneaky.summary  # type: ignore[union-attr]
        assert await attempts(client, sneaky.workflow_id, "run_script") == [1]  # type: ignore[union-attr]
    finally:
        await engine.stop()


def start_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "activities.scripts" and "sandbox" in r.getMessage()]


async def test_scripts_disabled_or_without_bubblewrap_are_refused_with_the_reason(
        client: Client, settings: Settings, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="activities.scripts")
    write_skill(settings.user_skills_dir, "word-count", plan=step("report.py", "1"), trigger=NEVER)
    engine = await Engine(settings, client).start()  # scripts_enabled is off by default
    try:
        assert start_lines(caplog) == []  # nothing to say about a sandbox no script uses
        assert (await diagnose(engine.skills)).sandbox == "scripts are off (SKILLS_SCRIPTS_ENABLED=false)"
        await trust_files(engine)  # the owner trusts what the skills run
        await sync_files(engine.skills)
        run = await engine.skills.run("word-count", "files")
        assert run.status == "error"  # type: ignore[union-attr]
        assert run.summary == ("run_script failed: scripts are disabled on this worker (set "  # type: ignore[union-attr]
                               "SKILLS_SCRIPTS_ENABLED=true to let skills run the scripts they declare, in the "
                               "bubblewrap sandbox)")
    finally:
        await engine.stop()
    missing = settings.model_copy(update={"scripts_enabled": True, "bwrap_path": "/nonexistent/bin/bwrap"})
    engine = await Engine(missing, client).start()
    try:
        reason = ("bubblewrap is not installed ('/nonexistent/bin/bwrap' not found; install the package 'bubblewrap' "
                  "or set SKILLS_BWRAP_PATH): scripts are never run unsandboxed")
        assert start_lines(caplog) == [f"script sandbox: scripts cannot run here: {reason}; fix: {SANDBOX_DOCS}"]
        found = await diagnose(engine.skills)
        assert not found.ok
        [problem] = [p for p in found.problems if p.kind == "sandbox"]
        assert (problem.message, problem.fix) == (f"scripts cannot run: {reason}", SANDBOX_DOCS)
        run = await engine.skills.run("word-count", "files")
        assert run.status == "error"  # type: ignore[union-attr]
        assert run.summary == ("run_script failed: bubblewrap is not installed ('/nonexistent/bin/bwrap' not "  # type: ignore[union-attr]
                               "found; install the package 'bubblewrap' or set SKILLS_BWRAP_PATH): scripts are "
                               "never run unsandboxed")
        assert await attempts(client, run.workflow_id, "run_script") == [1]  # type: ignore[union-attr]
    finally:
        await engine.stop()


async def test_the_start_line_and_the_doctor_say_how_scripts_run_from_a_folder_only_its_owner_may_enter(
        client: Client, settings: Settings, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="activities.scripts")
    write_skill(settings.user_skills_dir, "word-count", plan=step("report.py", "2"), trigger=NEVER)
    private = private_folder(owner=os.geteuid())  # drwx------, as root's home or a mktemp -d
    try:
        bwrap = install_bwrap(private / "venv" / "site-packages", owner=os.geteuid())
        engine = await Engine(settings.model_copy(update={"scripts_enabled": True, "bwrap_path": str(bwrap)}),
                              client).start()
        try:
            [line] = start_lines(caplog)
            if os.geteuid() == 0:  # the sandbox runs as nobody, who cannot enter `private`: a checked copy runs
                assert line.startswith(f"script sandbox: scripts run as nobody (uid 65534), with a copy of {bwrap} "
                                       "made in "), line
                assert line.endswith(f" and checked against its digest, since nobody (uid 65534) cannot enter "
                                     f"{private} (drwx------ root:root: others' bits give no search (x) permission)")
            else:
                assert line.endswith(f"in a user namespace, with {bwrap}"), line
            await trust_files(engine)
            await sync_files(engine.skills)
            run = await engine.skills.run("word-count", "files")
            assert run.status == "success", run.summary  # type: ignore[union-attr]
            assert '"words": ["alpha", "beta"]' in run.tool_calls[0].result  # type: ignore[union-attr]
            found = await diagnose(engine.skills)
            assert found.sandbox == line.removeprefix("script sandbox: ")
            assert "sandbox" not in {p.kind for p in found.problems}
        finally:
            await engine.stop()
    finally:
        shutil.rmtree(private, ignore_errors=True)


async def test_an_agent_run_and_a_chat_call_run_script(client: Client, settings: Settings, llm: ScriptedLLM) -> None:
    user = settings.user_skills_dir
    write_skill(user, "word-count", trigger=NEVER)  # no plan: an Agent-tier skill
    write_skill(user, "wordsmith", keywords=["wordsmith"], scripts={"report.py": REPORT},
                body="Use the report script to count words.")
    llm.script("default", [
        call("run_script", {"script": "report.py", "args": ["3"]}),
        call("run_script", {"script": "nope.py"}),
        say("There are three words: alpha, beta, gamma."),
        # then the chat turn (the same model):
        call("run_script", {"script": "report.py", "args": ["1"]}),
        say("The first word is alpha."),
    ])
    engine = await Engine(settings.model_copy(update={
        "scripts_enabled": True, "llm_base_url": llm.base_url, "llm_api_key": "sk-test-key", "llm_model": "default",
    }), client).start()
    try:
        await trust_files(engine)  # the owner trusts what the skills run
        await sync_files(engine.skills)
        run = await engine.skills.run("word-count", "files")
        assert run.status == "success", run.summary  # type: ignore[union-attr]
        assert [(c.tool, c.ok) for c in run.tool_calls] == [("run_script", True), ("run_script", False)]  # type: ignore[union-attr]

        first, second, third = llm.requests_for("default")[:3]
        assert first.tool_names == ["run_script"]  # the sandbox: required_tools (none) and the skill's scripts
        [tool] = first.tools
        assert tool["function"]["parameters"]["properties"]["script"]["enum"] == ["fail.sh", "report.py"]
        assert second.messages[-1]["role"] == "tool"
        assert '"words": ["alpha", "beta", "gamma"]' in second.messages[-1]["content"]
        assert "Error: script: 'nope.py' is not a script skill 'word-count' declares" in third.messages[-1]["content"]

        reply = await engine.skills.chat("wordsmith: what is the first word?", session_id="scripts")
        assert reply.ok and reply.reply == "The first word is alpha.", reply
        assert "wordsmith" in reply.matched
        asked, answered = llm.requests_for("default")[3:]
        assert "run_script" in asked.tool_names
        assert '"words": ["alpha"]' in answered.messages[-1]["content"]
    finally:
        await engine.stop()
