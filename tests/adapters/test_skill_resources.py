"""Lazy bodies and resources: listing, reading, refusing paths that leave the folder, size caps."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from adapters.skill_folders import FOLDERS, discover
from skills.skillmd import (
    Limits,
    Resource,
    ResourceError,
    SkillFile,
    TooLargeError,
)


@pytest.fixture
def skill(tmp_path: Path, write_skill) -> SkillFile:
    path = write_skill(tmp_path / "skills", "forms", body="# Forms\n\nSee references/guide.md.")
    folder = path.parent
    for relative, text in {
        "references/guide.md": "The guide.",
        "references/deep/more.md": "More.",
        "reference/old.md": "Old layout.",
        "assets/template.txt": "Dear {name},",
        "scripts/fill.py": "print('fill')",
        "FORMS.md": "At the root.",
    }.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    (tmp_path / "secret.txt").write_text("outside")
    return discover(user=tmp_path / "skills").skills["forms"]


def test_the_body_is_read_when_asked(skill: SkillFile) -> None:
    assert FOLDERS.read_body(skill) == "# Forms\n\nSee references/guide.md."


def test_resources_are_listed_without_being_read(skill: SkillFile) -> None:
    assert FOLDERS.list_resources(skill) == [
        Resource(path="references/guide.md", kind="references", size=10),
        Resource(path="references/deep/more.md", kind="references", size=5),
        Resource(path="reference/old.md", kind="references", size=11),
        Resource(path="assets/template.txt", kind="assets", size=12),
        Resource(path="scripts/fill.py", kind="scripts", size=13),
    ]


def test_a_resource_is_read_by_its_relative_path(skill: SkillFile) -> None:
    assert FOLDERS.read_resource(skill, "references/guide.md") == "The guide."
    assert FOLDERS.read_resource(skill, "FORMS.md") == "At the root."


@pytest.mark.parametrize(
    ("relative", "message"),
    [
        ("../secret.txt", "must not contain '..'"),
        ("references/../../secret.txt", "must not contain '..'"),
        ("..\\secret.txt", "must not contain '..'"),
        ("/etc/passwd", "must be relative to the skill folder"),
        ("C:\\Windows\\win.ini", "must be relative to the skill folder"),
        ("", "must be relative to the skill folder"),
        ("references/missing.md", "not found"),
        ("references", "not found"),
    ],
)
def test_paths_that_could_leave_the_folder_are_refused(skill: SkillFile, relative: str, message: str) -> None:
    with pytest.raises(ResourceError, match=message):
        FOLDERS.read_resource(skill, relative)


def test_a_symlink_out_of_the_folder_is_refused_and_not_listed(skill: SkillFile, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    os.symlink(secret, skill.folder / "references" / "leak.md")
    os.symlink(tmp_path, skill.folder / "assets" / "everything")
    os.symlink(skill.folder / "FORMS.md", skill.folder / "references" / "inside.md")

    with pytest.raises(ResourceError, match="resolves outside the skill folder"):
        FOLDERS.read_resource(skill, "references/leak.md")
    with pytest.raises(ResourceError, match="resolves outside the skill folder"):
        FOLDERS.read_resource(skill, "assets/everything/secret.txt")
    listed = [r.path for r in FOLDERS.list_resources(skill)]
    assert "references/leak.md" not in listed
    assert not any(p.startswith("assets/everything") for p in listed)
    # A symlink that stays inside is fine.
    assert "references/inside.md" in listed
    assert FOLDERS.read_resource(skill, "references/inside.md") == "At the root."


def test_a_symlinked_resource_folder_pointing_out_is_not_listed(tmp_path: Path, write_skill) -> None:
    outside = tmp_path / "outside"
    (outside).mkdir()
    (outside / "x.md").write_text("x")
    path = write_skill(tmp_path / "skills", "linked")
    os.symlink(outside, path.parent / "references")

    skill = discover(user=tmp_path / "skills").skills["linked"]

    assert FOLDERS.list_resources(skill) == []


def test_resource_size_is_capped(skill: SkillFile) -> None:
    (skill.folder / "assets" / "big.txt").write_text("x" * 300 * 1024)

    with pytest.raises(TooLargeError, match="the limit is 262144 bytes"):
        FOLDERS.read_resource(skill, "assets/big.txt")
    assert len(FOLDERS.read_resource(skill, "assets/big.txt", Limits(max_resource_bytes=400 * 1024))) == 300 * 1024


def test_body_size_is_capped(tmp_path: Path, write_skill) -> None:
    write_skill(tmp_path, "wordy", body="w" * 2000)
    skill = discover(user=tmp_path).skills["wordy"]

    with pytest.raises(TooLargeError, match="body is 2000 bytes; the limit is 1000 bytes"):
        FOLDERS.read_body(skill, Limits(max_body_bytes=1000))
    with pytest.raises(TooLargeError, match="the limit is"):
        FOLDERS.read_body(skill, Limits(max_body_bytes=100, max_frontmatter_bytes=100))


def test_a_binary_resource_is_refused_as_text(skill: SkillFile) -> None:
    (skill.folder / "assets" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xff")

    with pytest.raises(Exception, match="not UTF-8 text"):
        FOLDERS.read_resource(skill, "assets/logo.png")
