"""The `skill` tool: its definition (enum of names, XML listing) and its result."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from adapters.skill_folders import FOLDERS, discover
from skills.skillmd import (
    DEFAULT_LIMITS,
    Catalog,
    Limits,
    Problem,
    Resource,
    SkillFile,
    SkillManifest,
    TooLargeError,
    run_skill_tool,
    skill_file_tool,
    skill_tool_definition,
)


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
            },
            "file": {"type": "string", "description": "Read this file of the skill instead, e.g. 'references/x.md'"},
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
    assert run_skill_tool(catalog, "debugging", FOLDERS) == "Reproduce first."


def test_an_unknown_name_is_a_helpful_error_not_an_exception(catalog: Catalog) -> None:
    assert run_skill_tool(catalog, "debuging", FOLDERS) == (
        "Error: Skill 'debuging' not found. Did you mean 'debugging'? Available skills: brainstorming, debugging."
    )
    assert run_skill_tool(discover(), "x", FOLDERS) == "Error: Skill 'x' not found. No skills are available."


def test_a_file_gone_since_discovery_is_an_error_text(catalog: Catalog) -> None:
    catalog.skills["debugging"].path.unlink()

    assert run_skill_tool(catalog, "debugging", FOLDERS).startswith("Error loading skill 'debugging': ")


def test_a_file_of_the_skill_is_read_and_nothing_beside_it(catalog: Catalog, tmp_path: Path) -> None:
    folder = catalog.skills["debugging"].folder
    (folder / "references").mkdir()
    (folder / "references" / "steps.md").write_text("Bisect.")
    (folder / ".skills-install.json").write_text('{"secret": "x"}')
    (tmp_path / "outside.md").write_text("not the skill's")
    (folder / "references" / "out.md").symlink_to(tmp_path / "outside.md")

    assert run_skill_tool(catalog, "debugging", FOLDERS, file="references/steps.md") == "Bisect."
    assert run_skill_tool(catalog, "debugging", FOLDERS, file="./references/steps.md") == "Bisect."
    for path in ("../outside.md", "references/../../outside.md", "/etc/passwd", ".skills-install.json",
                 "SKILL.md", "references/out.md"):
        answer = run_skill_tool(catalog, "debugging", FOLDERS, file=path)
        assert answer == (f"Error: skill 'debugging' has no file '{path}'. Its files: references/steps.md."), path


def test_the_chat_form_is_short_and_names_the_skills() -> None:
    tool = skill_file_tool(["debugging", "brainstorming"])
    assert tool is not None and skill_file_tool([]) is None
    parameters = tool["function"]["parameters"]
    assert parameters["properties"]["skill_name"]["enum"] == ["brainstorming", "debugging"]
    assert parameters["required"] == ["skill_name"] and "file" in parameters["properties"]


class InMemory:
    """A :class:`~skills.skillmd.SkillReader` over files held in memory: the tool needs no folder."""

    def __init__(self, files: dict[str, dict[str, str]]) -> None:
        self.files = files

    def read_body(self, skill: SkillFile, limits: Limits = DEFAULT_LIMITS) -> str:
        return self.files[skill.name]["SKILL.md"]

    def list_resources(self, skill: SkillFile) -> list[Resource]:
        return [Resource(path=path, kind="references", size=len(text))
                for path, text in self.files[skill.name].items() if path != "SKILL.md"]

    def read_resource(self, skill: SkillFile, relative_path: str, limits: Limits = DEFAULT_LIMITS) -> str:
        if len(self.files[skill.name][relative_path]) > limits.max_resource_bytes:
            raise TooLargeError(f"{relative_path} is over the cap")
        return self.files[skill.name][relative_path]

    def problems(self, skill: SkillFile, limits: Limits = DEFAULT_LIMITS) -> list[Problem]:
        return []


def test_the_tool_reads_through_the_reader_it_is_handed() -> None:
    skills = {name: SkillFile(manifest=SkillManifest(name=name, description=f"The {name} skill.", depends=depends),
                              path=Path(f"/nowhere/{name}/SKILL.md"), source="user", mtime=datetime(2026, 1, 5, tzinfo=UTC))
              for name, depends in [("report", ["style"]), ("style", [])]}
    reader = InMemory({"report": {"SKILL.md": "Write the report.", "references/big.md": "b" * 100},
                       "style": {"SKILL.md": "House style."}})
    catalog = Catalog(skills=skills)

    assert run_skill_tool(catalog, "report", reader) == (
        'Write the report.\n\n<skill_instructions name="style">\nHouse style.\n</skill_instructions>')
    assert run_skill_tool(catalog, "report", reader, file="references/big.md") == "b" * 100
    assert run_skill_tool(catalog, "report", reader, Limits(max_resource_bytes=10), file="references/big.md") == (
        "Error reading 'references/big.md' of skill 'report': references/big.md is over the cap. "
        "Its files: references/big.md.")
    assert run_skill_tool(catalog, "report", reader, file="SKILL.md").startswith(
        "Error: skill 'report' has no file 'SKILL.md'.")
