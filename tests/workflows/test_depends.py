"""``depends`` on a real worker: a scheduled Agent-tier SKILL.md run and a chat turn bring the skills
their skill depends on: their instructions (transitively, once each), their toolsets' tools (a real
stdio MCP server) and their scripts (the real bwrap sandbox), with the scripted LLM."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from temporalio.client import Client

from client.files import sync_files
from config.settings import Settings
from tests.conftest import ROOT, Engine, trust_files
from tests.fakes.llm_server import ScriptedLLM, call, say, scripted_llm_fixture
from tests.history import replayer
from tests.skills.skillmd.skill_files import skill_text
from workflows.run import SkillRun

SERVER = ROOT / "tests" / "mcp_servers" / "changing_server.py"
CHANGING = {"changing": {"command": "python", "args": [SERVER.name]}}  # in the skill folder, for the sandbox
NEVER = {"schedule": "0 3 1 1 *"}  # registered and scheduled, but only run by hand here
REPORT = """\
import json, pathlib, sys
print(json.dumps({"words": pathlib.Path("references/words.txt").read_text().split()[: int(sys.argv[1])]}))
"""

llm = scripted_llm_fixture(api_key="sk-depends-key")


def write(root: Path, name: str, body: str, *, depends: list[str] | None = None, scheduled: bool = False,
          keywords: list[str] | None = None, toolsets: dict[str, Any] | None = None,
          scripts: dict[str, str] | None = None) -> None:
    """A SKILL.md skill: scheduled (an Agent-tier skill: no plan), a chat playbook (``keywords``), or
    neither (only ever brought along by another)."""
    metadata: dict[str, Any] = {"notify_on_completion": False}
    if scheduled:
        metadata["trigger_config"] = NEVER
    frontmatter: dict[str, Any] = {"name": name, "description": f"The {name} skill.", "metadata": metadata}
    for key, value in (("depends", depends), ("toolsets", toolsets), ("scripts", sorted(scripts or {})),
                       ("triggers", {"keywords": keywords} if keywords else None)):
        if value:
            frontmatter[key] = value
    folder = root / name
    folder.mkdir(parents=True)
    if toolsets:
        shutil.copyfile(SERVER, folder / SERVER.name)
    for script, text in (scripts or {}).items():
        (folder / "scripts").mkdir(exist_ok=True)
        (folder / "scripts" / script).write_text(text)
        (folder / "references").mkdir(exist_ok=True)
        (folder / "references" / "words.txt").write_text("alpha beta gamma\n")
    (folder / "SKILL.md").write_text(skill_text(frontmatter, body))


async def test_a_skills_dependencies_come_with_its_agent_run_and_its_chat_turn(
        client: Client, settings: Settings, llm: ScriptedLLM) -> None:
    user = settings.user_skills_dir
    write(user, "house-style", "Sign every letter as The House.", toolsets=CHANGING, scripts={"report.py": REPORT})
    write(user, "signoff", "End every letter with a blessing.", depends=["house-style"])
    # A diamond: house-style is reached directly and through signoff, and comes once.
    write(user, "letters", "Write the weekly letter.", depends=["signoff", "house-style"], scheduled=True)
    write(user, "alone", "Write a note.", scheduled=True)
    write(user, "letter-desk", "Answer questions about letters.", depends=["house-style"], keywords=["letterdesk"])
    llm.script("default", [
        call("changing_add_tool_quietly", {"name": "by-letters"}),
        call("run_script", {"script": "report.py", "args": ["2"]}),
        say("Wrote the letter."),
        # alone: nothing of house-style is offered, so its script is refused
        call("run_script", {"script": "report.py", "args": ["2"]}),
        say("I could not."),
        # the chat turn that matched letter-desk:
        call("run_script", {"script": "report.py", "args": ["1"]}),
        say("The first word is alpha."),
    ])
    engine = await Engine(settings.model_copy(update={
        "scripts_enabled": True, "llm_base_url": llm.base_url, "llm_api_key": "sk-depends-key",
        "llm_model": "default",
    }), client).start()
    try:
        await trust_files(engine)  # the owner trusts what the skills run
        result = await sync_files(engine.skills)
        assert sorted(c.change.name for c in result.created) == ["alone", "letters"] and not result.refused

        run = await engine.skills.run("letters", "files")
        assert run.status == "success", run.summary  # type: ignore[union-attr]
        assert [(c.tool, c.ok) for c in run.tool_calls] == [  # type: ignore[union-attr]
            ("changing_add_tool_quietly", True), ("run_script", True)]
        first, second, third = llm.requests_for("default")[:3]
        system, task = first.messages[0]["content"], first.messages[1]["content"]
        # The task, then each dependency's instructions once, depth first: signoff, then house-style.
        assert task.index("Write the weekly letter.") < task.index('<skill_instructions name="signoff">') \
            < task.index('<skill_instructions name="house-style">')
        assert task.count('<skill_instructions name="house-style">') == 1
        assert "End every letter with a blessing." in task and "Sign every letter as The House." in task
        # The sandbox: house-style's toolset and its script, for this run, named in the system prompt.
        assert {"changing_add_tool_quietly", "run_script"} <= set(first.tool_names)
        assert "changing_add_tool_quietly" in system and "run_script" in system
        [script_tool] = [t for t in first.tools if t["function"]["name"] == "run_script"]
        assert script_tool["function"]["parameters"]["properties"]["script"]["enum"] == ["report.py"]
        assert second.messages[-1]["content"] == "added by-letters"
        assert '"words": ["alpha", "beta"]' in third.messages[-1]["content"]

        alone = await engine.skills.run("alone", "files")
        assert alone.status == "success", alone.summary  # type: ignore[union-attr]
        [refused] = alone.tool_calls  # type: ignore[union-attr]
        assert refused.refused and not refused.ok
        fourth = llm.requests_for("default")[3]
        assert fourth.tool_names == [] and "<skill_instructions" not in fourth.messages[1]["content"]

        reply = await engine.skills.chat("letterdesk: what is the first word?", session_id="depends")
        assert reply.ok and reply.reply == "The first word is alpha.", reply
        assert "letter-desk" in reply.matched and "house-style" not in reply.matched
        asked, answered = llm.requests_for("default")[5:7]
        assert {"run_script", "changing_add_tool_quietly"} <= set(asked.tool_names)
        assert '"words": ["alpha"]' in answered.messages[-1]["content"]

        history = await client.get_workflow_handle(run.workflow_id).fetch_history()  # type: ignore[union-attr]
        await replayer(SkillRun).replay_workflow(history)
    finally:
        await engine.stop()
