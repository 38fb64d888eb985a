"""AGENT.md definitions: validation, and skills that must exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.skill_folders import load_agent
from skills.skillmd import AgentDefinitionError, check_agent_text

KNOWN = {"brainstorming", "debugging"}


def agent_text(frontmatter: str, body: str = "You are a helpful assistant.") -> str:
    return f"---\n{frontmatter}\n---\n{body}\n"


def test_a_valid_agent(tmp_path: Path) -> None:
    path = tmp_path / "helper" / "AGENT.md"
    path.parent.mkdir()
    path.write_text(
        agent_text(
            "name: helper\nmodel: gpt-4o\nallow_skills: true\nskills: [debugging]\ntools: [read, write]"
        )
    )

    agent = load_agent(path, KNOWN)

    assert agent.name == "helper"
    assert agent.model == "gpt-4o"
    assert agent.allow_skills is True
    assert agent.skills == ["debugging"]
    assert agent.tools == ["read", "write"]
    assert agent.system_prompt == "You are a helpful assistant."
    assert agent.path == path


def test_defaults_and_the_all_tools_star() -> None:
    agent, problems = check_agent_text(agent_text('name: plain\ntools: "*"'), KNOWN)

    assert problems == []
    assert agent is not None
    assert (agent.allow_skills, agent.skills, agent.tools, agent.model) == (False, [], "*", None)


def test_an_unknown_skill_is_an_error_naming_the_agent_and_the_skill(tmp_path: Path) -> None:
    path = tmp_path / "AGENT.md"
    path.write_text(agent_text("name: analyst\nskills: [debugging, danish-tender, ghost]"))

    with pytest.raises(AgentDefinitionError) as raised:
        load_agent(path, KNOWN)

    assert [p.message for p in raised.value.problems] == [
        "Agent 'analyst' references unknown skill: danish-tender",
        "Agent 'analyst' references unknown skill: ghost",
    ]
    assert f"{path}: error: Agent 'analyst' references unknown skill: ghost" in str(raised.value)


def test_every_field_problem_is_reported() -> None:
    agent, problems = check_agent_text(
        agent_text("allow_skills: maybe\ntools: everything\nskills: debugging"), KNOWN
    )

    assert agent is None
    assert [p.message for p in problems] == [
        "Missing required field in frontmatter: name",
        "Field 'allow_skills': Input should be a valid boolean, unable to interpret input",
        "Field 'skills': Input should be a valid list",
        "Field 'tools': must be a list of tool names, or \"*\" for every tool",
    ]


def test_fields_for_other_tools_are_a_warning() -> None:
    agent, problems = check_agent_text(agent_text("name: general\nprovider: openai"), KNOWN)

    assert agent is not None
    assert [(p.severity, p.message) for p in problems] == [
        ("warning", "Unexpected fields in frontmatter, ignored: provider")
    ]


def test_unparsable_agent_file() -> None:
    agent, problems = check_agent_text("no frontmatter", KNOWN)

    assert agent is None
    assert [p.message for p in problems] == ["AGENT.md must start with YAML frontmatter (---)"]
