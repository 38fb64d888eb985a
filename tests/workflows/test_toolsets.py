"""SKILL.md toolsets on a real worker: a skill's own MCP server (a real stdio process) serves its
run only; a skill without it cannot name its tools; a server that fails to start fails only that run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from client.files import sync_files
from tests.conftest import PYTHON, ROOT, Engine
from tests.skills.skillmd.skill_files import skill_text

SERVER = str(ROOT / "tests" / "mcp_servers" / "changing_server.py")
NEVER = {"schedule": "0 3 1 1 *"}  # registered and scheduled, but only run by hand here


def write(root: Path, name: str, tool: str, toolsets: dict[str, Any] | None = None) -> Path:
    frontmatter: dict[str, Any] = {
        "name": name,
        "description": f"The {name} skill.",
        "metadata": {
            "trigger_config": NEVER,
            "execution_plan": [{"id": "use", "toolName": tool, "parameters": {"name": f"from-{name}"}}],
            "notify_on_completion": False,
        },
    }
    if toolsets is not None:
        frontmatter["toolsets"] = toolsets
    path = root / name / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(skill_text(frontmatter, "Use the tool."))
    return path


async def test_a_skill_uses_its_own_toolset_and_a_broken_one_fails_only_its_run(engine: Engine) -> None:
    user = engine.settings.user_skills_dir
    write(user, "with-tools", "changing_add_tool_quietly", {"changing": {"command": PYTHON, "args": [SERVER]}})
    write(user, "without-tools", "changing_add_tool_quietly")
    write(user, "broken-tools", "broken_anything",
          {"broken": {"command": PYTHON, "args": ["-c", "import sys; sys.exit('cannot start: no licence')"]}})

    result = await sync_files(engine.skills)

    assert sorted(c.change.name for c in result.created) == ["broken-tools", "with-tools"]
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
    assert sorted(toolsets) == [("broken-tools", "broken"), ("with-tools", "changing")]
    assert toolsets["with-tools", "changing"].connected
    assert "changing_add_tool_quietly" in toolsets["with-tools", "changing"].tools
    assert not toolsets["broken-tools", "broken"].connected and toolsets["broken-tools", "broken"].tools == []

    broken = await engine.skills.run("broken-tools", "files")
    assert broken.status == "error"  # type: ignore[union-attr]
    assert "toolset server 'broken' of skill 'broken-tools' failed to start" in broken.summary  # type: ignore[union-attr]

    # The worker is fine: the first skill runs again.
    again = await engine.skills.run("with-tools", "files")
    assert again.status == "success"  # type: ignore[union-attr]
