"""Hostile files and inputs as a user meets them in the `skills` commands: one bad SKILL.md is
skipped with its reason and the others keep working; a registration file nested too deep is
refused naming the file, not a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapters.skill_folders import discover
from starter.inputs import InputError, load_input, parse_document
from tests.starter.test_files_cli import cli, dirs, run, write

__all__ = ["dirs"]  # the fixture, shared with the other file-command tests

NESTED_FRONTMATTER = "---\nname: nested\ndescription: Nested. It breaks.\nmetadata: " + "[" * 40_000 + "\n---\nBody.\n"


def write_nested(root: Path) -> Path:
    path = root / "nested" / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(NESTED_FRONTMATTER)
    return path


def test_validate_refuses_the_nested_file_and_passes_the_good_one(dirs: dict[str, Path]) -> None:
    # Before: RecursionError out of `skills validate` for every file given with it.
    good = write(dirs["project"], "good")
    bad = write_nested(dirs["project"])
    checked = cli("validate", "--json", str(dirs["project"]))
    report = json.loads(checked.stdout)
    assert checked.returncode == 1 and "Traceback" not in checked.stderr
    by_path = {Path(f["path"]).name: f for f in report["files"]}
    assert by_path["good"]["ok"] is True
    [problem] = by_path["nested"]["problems"]
    assert problem["severity"] == "error" and problem["path"] == str(bad)
    assert "more than 32 levels of nested [" in problem["message"]
    assert good.exists()


def test_discovery_skips_only_the_nested_file_and_says_why(dirs: dict[str, Path],
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    write(dirs["project"], "good", triggers={"keywords": ["water"]})
    bad = write_nested(dirs["project"])
    catalog = discover(project=dirs["project"])
    assert list(catalog.skills) == ["good"]
    [problem] = catalog.problems
    assert problem.path == bad and problem.message.startswith("Skipped: ") and "levels of nested [" in problem.message
    # A command that discovers (as every chat turn and sync round does) still answers.
    code, out, err = run(capsys, "match", "a glass of water")
    assert code == 0 and "good" in out and "1 loading problem(s)" in err


def test_a_registration_file_nested_too_deep_is_refused_naming_the_file(tmp_path: Path) -> None:
    deep_json = tmp_path / "deep.json"
    deep_json.write_text('{"name": "x", "execution_plan": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(InputError, match=r"deep\.json: nested more than 32 levels deep"):
        load_input(str(deep_json))
    deep_yaml = tmp_path / "deep.yaml"
    deep_yaml.write_text("name: x\nexecution_plan: " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(InputError, match=r"deep\.yaml: more than 32 levels of nested \["):
        load_input(str(deep_yaml))
    with pytest.raises(InputError, match="cannot be read"):
        parse_document('{"max_steps": ' + "9" * 5000 + "}", "big.json")


def test_skills_register_of_a_deep_file_fails_with_the_file_not_a_traceback(tmp_path: Path) -> None:
    from tests.starter.test_cli import run_skills

    deep = tmp_path / "deep.json"
    deep.write_text('{"name": "x", "execution_plan": ' + "[" * 100_000 + "]" * 100_000 + "}")
    done = run_skills("register", str(deep))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "deep.json: nested more than 32 levels deep" in done.stderr + done.stdout
