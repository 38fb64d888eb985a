"""The `skill` tool: its definition (enum of names, XML listing) and its result."""

from __future__ import annotations

from pathlib import Path

import pytest

from skills.skillmd import Catalog, discover, run_skill_tool, skill_tool_definition


@pytest.fixture
def catalog(tmp_path: Path, write_skill) -> Catalog:
    write_skill(
        tmp_path, "brainstorming", description="Turn ideas into designs <fast> & well.", body="Ask questions."
    )
    write_skill(tmp_path, "debugging", description="Find the bug.", body="Reproduce first.")
    return discover(user=tmp_path)


def test_the_definition_enumerates_the_skills(catalog: Catalog) -> None:
    tool = skill_tool_definition(catalog.skills.values())

    assert tool is not None
    assert tool["type"] == "function"
    function = tool["function"]
    assert function["name"] == "skill"
    assert function["parameters"] == {
        "type": "object",
        "properties": {
            "skill_name": {
                "type": "string",
                "enum": ["brainstorming", "debugging"],
                "description": "The name of the skill to load",
            }
        },
        "required": ["skill_name"],
        "additionalProperties": False,
    }
    assert function["description"].endswith(
        "<skills>\n"
        '<skill name="brainstorming">Turn ideas into designs &lt;fast&gt; &amp; well.</skill>\n'
        '<skill name="debugging">Find the bug.</skill>\n'
        "</skills>"
    )


def test_no_tool_without_skills() -> None:
    assert skill_tool_definition([]) is None


def test_running_it_returns_the_body(catalog: Catalog) -> None:
    assert run_skill_tool(catalog, "debugging") == "Reproduce first."


def test_an_unknown_name_is_a_helpful_error_not_an_exception(catalog: Catalog) -> None:
    assert run_skill_tool(catalog, "debuging") == (
        "Error: Skill 'debuging' not found. Did you mean 'debugging'? Available skills: brainstorming, debugging."
    )
    assert run_skill_tool(discover(), "x") == "Error: Skill 'x' not found. No skills are available."


def test_a_file_gone_since_discovery_is_an_error_text(catalog: Catalog) -> None:
    catalog.skills["debugging"].path.unlink()

    assert run_skill_tool(catalog, "debugging").startswith("Error loading skill 'debugging': ")
