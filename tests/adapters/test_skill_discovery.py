"""Lenient loading, discovery across sources, precedence and the shadow report."""

from __future__ import annotations

from pathlib import Path

from adapters.skill_folders import FOLDERS, discover, load_skill_file
from skills.skillmd import Limits, Shadowed, project_skills_dir


def test_a_broken_file_is_skipped_with_a_warning_and_the_others_load(tmp_path: Path, write_skill) -> None:
    write_skill(tmp_path, "alpha")
    write_skill(tmp_path, "omega")
    broken = tmp_path / "broken" / "SKILL.md"
    broken.parent.mkdir()
    broken.write_text("---\nname: [broken\n---\nbody")
    nameless = write_skill(tmp_path, "", folder="nameless")

    catalog = discover(user=tmp_path)

    assert list(catalog.skills) == ["alpha", "omega"]
    skipped = {p.path: p for p in catalog.problems}
    assert skipped[broken].severity == "warning"
    assert skipped[broken].message.startswith("Skipped: Invalid YAML in frontmatter:")
    assert skipped[nameless].message == "Skipped: Field 'name' must be a non-empty string"
    assert str(skipped[broken]).startswith(f"{broken}: warning: Skipped:")


def test_a_skill_with_a_usable_name_and_description_loads_with_warnings(tmp_path: Path, write_skill) -> None:
    path = write_skill(tmp_path, "Loose", folder="loose", colour="blue", metadata={"priority": "high"})

    skill, problems = load_skill_file(path, "user")

    assert skill is not None and skill.name == "Loose"
    assert skill.manifest.metadata.priority == 0
    assert {p.severity for p in problems} == {"warning"}
    assert [p.message for p in problems] == [
        "Unexpected fields in frontmatter: colour. Only ['allowed-tools', 'brief_description', 'compatibility', "
        "'default_enabled', 'depends', 'description', 'license', 'metadata', 'name', 'scripts', 'toolsets', "
        "'triggers', 'version'] are allowed.",
        "Skill name 'Loose' must be lowercase",
        "Directory name 'loose' must match skill name 'Loose'",
        "Field 'metadata.priority': must be a whole number between -1000 and 1000, got 'high'",
    ]
    assert {p.path for p in problems} == {path}


def test_an_invalid_pattern_is_a_load_warning_not_a_crash(tmp_path: Path, write_skill) -> None:
    write_skill(tmp_path, "regex", triggers={"patterns": ["(unclosed", r"deploy\s+\w+"]})

    catalog = discover(user=tmp_path)

    assert [p.pattern for p in catalog.skills["regex"].manifest.triggers.patterns] == [r"deploy\s+\w+"]
    assert [(p.severity, p.field) for p in catalog.problems] == [("warning", "triggers.patterns.0")]
    assert "invalid regular expression '(unclosed'" in catalog.problems[0].message


def test_project_over_user_over_bundled_and_the_shadowed_are_reported(tmp_path: Path, write_skill) -> None:
    bundled, user, workdir = tmp_path / "bundled", tmp_path / "user", tmp_path / "work"
    project = project_skills_dir(workdir)
    assert project == workdir / ".agents" / "skills"
    for root in (bundled, user, project):
        write_skill(root, "shared", description=f"From {root.name}.")
    write_skill(bundled, "both", description="Bundled both.")
    write_skill(user, "both", description="User both.")
    write_skill(bundled, "only-bundled")

    catalog = discover(project=project, user=user, bundled=bundled)

    assert {name: s.source for name, s in catalog.skills.items()} == {
        "both": "user",
        "only-bundled": "bundled",
        "shared": "project",
    }
    assert catalog.skills["both"].manifest.description == "User both."
    assert sorted(catalog.shadowed, key=lambda s: (s.name, s.source)) == [
        Shadowed(
            name="both",
            path=bundled / "both" / "SKILL.md",
            source="bundled",
            winner_path=user / "both" / "SKILL.md",
            winner_source="user",
        ),
        Shadowed(
            name="shared",
            path=bundled / "shared" / "SKILL.md",
            source="bundled",
            winner_path=project / "shared" / "SKILL.md",
            winner_source="project",
        ),
        Shadowed(
            name="shared",
            path=user / "shared" / "SKILL.md",
            source="user",
            winner_path=project / "shared" / "SKILL.md",
            winner_source="project",
        ),
    ]


def test_two_folders_claiming_one_name_in_a_source(tmp_path: Path, write_skill) -> None:
    write_skill(tmp_path, "dup", folder="a-dup")
    write_skill(tmp_path, "dup", folder="b-dup")

    catalog = discover(user=tmp_path)

    assert catalog.skills["dup"].path == tmp_path / "a-dup" / "SKILL.md"
    assert [(s.path.parent.name, s.winner_path.parent.name) for s in catalog.shadowed] == [("b-dup", "a-dup")]


def test_missing_folders_are_empty_sources_and_stray_folders_are_noted(tmp_path: Path, write_skill) -> None:
    write_skill(tmp_path, "real")
    (tmp_path / "notes").mkdir()
    (tmp_path / ".git").mkdir()
    (tmp_path / "__pycache__").mkdir()

    catalog = discover(project=tmp_path / "absent", user=tmp_path)

    assert list(catalog.skills) == ["real"]
    assert [p.message for p in catalog.problems] == ["No SKILL.md found in notes"]


def test_a_hidden_folder_of_skills_is_named_and_read_when_a_source_points_at_it(tmp_path: Path, write_skill) -> None:
    # openai/skills keeps its skills in skills/.curated/: discovery leaves hidden folders out, and says so
    # of one that holds skills.
    write_skill(tmp_path / ".curated", "linear")
    write_skill(tmp_path / ".curated", "gh-fix-ci")
    (tmp_path / ".install-0123abcd" / "source" / "x").mkdir(parents=True)  # an install's staging: not a word

    catalog = discover(user=tmp_path)

    assert catalog.skills == {}
    assert [p.message for p in catalog.problems] == [
        "Left out .curated: a hidden folder of 2 skills; point a skills folder setting at it to use them"]
    assert list(discover(user=tmp_path / ".curated").skills) == ["gh-fix-ci", "linear"]


def test_default_enabled_false_stays_out_unless_enabled(tmp_path: Path, write_skill) -> None:
    write_skill(tmp_path, "quiet", default_enabled=False)
    write_skill(tmp_path, "loud")

    assert list(discover(bundled=tmp_path).skills) == ["loud"]
    assert discover(bundled=tmp_path).disabled == ["quiet"]
    assert list(discover(bundled=tmp_path, enable={"quiet"}).skills) == ["loud", "quiet"]


def test_an_unknown_dependency_is_a_warning(tmp_path: Path, write_skill) -> None:
    write_skill(tmp_path, "needy", depends=["ghost", "helper"])
    write_skill(tmp_path, "helper")

    catalog = discover(user=tmp_path)

    assert [p.message for p in catalog.problems] == ["Skill 'needy' depends on unknown skill 'ghost'"]


def test_discovery_reads_the_frontmatter_only(tmp_path: Path, write_skill) -> None:
    path = write_skill(tmp_path, "lazy")
    # Bytes that are not UTF-8 after the frontmatter: discovery must never get that far.
    path.write_bytes(path.read_bytes().replace(b"Follow these steps.", b"\xff\xfe broken body"))

    catalog = discover(user=tmp_path)

    skill = catalog.skills["lazy"]
    assert catalog.problems == []
    assert "body" not in skill.model_dump()
    assert skill.mtime.tzinfo is not None
    try:
        FOLDERS.read_body(skill)
    except Exception as exc:  # the body is read, and fails, only when asked for
        assert "not UTF-8 text" in str(exc)
    else:
        raise AssertionError("the body should have been read and refused")


def test_oversized_frontmatter_is_skipped(tmp_path: Path, write_skill) -> None:
    write_skill(tmp_path, "huge", metadata={"blob": "x" * 5000})

    catalog = discover(user=tmp_path, limits=Limits(max_frontmatter_bytes=1024))

    assert catalog.skills == {}
    assert catalog.problems[0].message.startswith("Skipped: ")
    assert "frontmatter exceeds 1024 bytes" in catalog.problems[0].message


def test_discovery_again_sees_every_change_to_the_folder(tmp_path: Path, write_skill) -> None:
    """Unchanged files are not read again (their stamp is kept): edits, new, broken and removed files are seen."""
    import os
    import shutil

    write_skill(tmp_path, "alpha", description="The first words. It helps.")
    write_skill(tmp_path, "beta")
    assert sorted(discover(user=tmp_path).skills) == ["alpha", "beta"]

    edited = write_skill(tmp_path, "alpha", description="Other words, same length!")
    stat = edited.stat()
    os.utime(edited, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # a same-size edit, a later time
    write_skill(tmp_path, "gamma")
    shutil.rmtree(tmp_path / "beta")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "SKILL.md").write_text("---\nname: [broken\n---\n")

    catalog = discover(user=tmp_path)

    assert sorted(catalog.skills) == ["alpha", "gamma"]
    assert catalog.skills["alpha"].manifest.description == "Other words, same length!"
    assert [p.path for p in catalog.problems] == [tmp_path / "broken" / "SKILL.md"]
    # A folder's cached state does not leak into another folder's discovery.
    assert sorted(discover(project=tmp_path / "nothing here", user=tmp_path).skills) == ["alpha", "gamma"]
