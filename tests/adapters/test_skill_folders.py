"""The worker's SKILL.md folders, read from real folders on disk: which copy of a skill the lookup
finds, what it brings along, and what it declares."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adapters.skill_folders import declared_toolsets, dependencies_of, file_skill
from config.settings import Settings
from tests.skills.skillmd.skill_files import skill_text


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, bundled_skills_dir=tmp_path / "bundled", user_skills_dir=tmp_path / "user",
                    project_skills_dir=tmp_path / "project")


def write(root: Path, name: str, **fields: Any) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(skill_text({"name": name, "description": f"The {name} skill.", **fields}))
    return folder


def test_the_lookup_finds_the_copy_the_sync_would_with_its_source(settings: Settings) -> None:
    write(settings.bundled_skills_dir, "tea")
    write(settings.user_skills_dir, "tea")
    assert file_skill(settings, "tea").source == "user"
    project = write(settings.project_skills_dir, "tea")
    found = file_skill(settings, "tea")
    assert (found.source, found.folder) == ("project", project)
    write(settings.bundled_skills_dir, "coffee")
    assert file_skill(settings, "coffee").source == "bundled"


def test_a_broken_copy_hides_the_ones_below_it(settings: Settings) -> None:
    """The first folder holding the name decides, as the sync's precedence does: a user copy that does not
    load is not replaced by the bundled one behind the owner's back."""
    write(settings.bundled_skills_dir, "tea")
    broken = settings.user_skills_dir / "tea"
    broken.mkdir(parents=True)
    (broken / "SKILL.md").write_text("no frontmatter here\n")
    assert file_skill(settings, "tea") is None


def test_a_folder_whose_skill_is_named_otherwise_is_not_found(settings: Settings) -> None:
    folder = settings.user_skills_dir / "tea"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(skill_text({"name": "coffee", "description": "Misnamed."}))
    assert file_skill(settings, "tea") is None
    assert file_skill(settings, "coffee") is None
    assert file_skill(settings, "absent") is None


def test_the_lookup_reads_the_file_as_it_is_now(settings: Settings) -> None:
    folder = write(settings.user_skills_dir, "tea")
    assert file_skill(settings, "tea").manifest.description == "The tea skill."
    (folder / "SKILL.md").write_text(skill_text({"name": "tea", "description": "Changed since."}))
    assert file_skill(settings, "tea").manifest.description == "Changed since."


def test_dependencies_are_read_transitively_and_the_missing_named(settings: Settings) -> None:
    write(settings.user_skills_dir, "top", depends=["middle", "gone"])
    write(settings.user_skills_dir, "middle", depends=["bottom", "off"])
    write(settings.bundled_skills_dir, "bottom")
    write(settings.user_skills_dir, "off", default_enabled=False)
    found, missing = dependencies_of(settings, file_skill(settings, "top"))
    assert [skill.name for skill in found] == ["middle", "bottom"]
    assert sorted(missing) == ["gone", "off"]
    assert dependencies_of(settings, file_skill(settings, "bottom")) == ([], [])


def test_declared_toolsets_are_those_of_the_skills_in_effect(settings: Settings) -> None:
    write(settings.bundled_skills_dir, "served", toolsets={"old": {"command": "python", "args": ["old.py"]}})
    write(settings.user_skills_dir, "served", toolsets={"new": {"command": "python", "args": ["new.py"]}})
    write(settings.user_skills_dir, "plain")
    declared = declared_toolsets(settings)
    assert list(declared) == ["served"]
    assert list(declared["served"]) == ["new"]
    assert declared["served"]["new"].args == ["new.py"]
