"""`skills install`, `skills uninstall` and `skills list --files` as a user runs them."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from tests.starter.test_files_cli import dirs, run, write  # noqa: F401 - dirs is a fixture


def test_install_list_and_uninstall(dirs: dict[str, Path], tmp_path: Path,  # noqa: F811
                                    capsys: pytest.CaptureFixture[str]) -> None:
    source = write(tmp_path / "src", "digest", metadata={"trigger_config": {"schedule": "0 9 * * *"}})
    write(dirs["bundled"], "shipped")

    code, out, _ = run(capsys, "install", str(source.parent))
    assert code == 0
    assert f"installed digest in {dirs['user'] / 'digest'}" in out
    assert "it carries a schedule: the next sync registers it, paused until you trust it" in out
    assert "fires by itself: cron '0 9 * * *' (the engine's time zone)" in out  # a schedule is reach: listed, and waits for trust

    code, out, _ = run(capsys, "list", "--files")
    assert code == 0
    lines = {line.split()[0]: line for line in out.splitlines()[1:] if line.strip()}
    # It needs trust (no worker answers here, so whose is unknown); the table may shorten the path.
    assert "user     unknown  folder /" in lines["digest"]
    assert "bundled" in lines["shipped"] and " - " in lines["shipped"]

    code, out, _ = run(capsys, "list", "--files", "--json")
    listed = {s["name"]: s for s in json.loads(out)["skills"]}
    assert listed["digest"]["installed_from"]["kind"] == "folder" and listed["digest"]["scheduled"] is True
    assert listed["shipped"]["installed_from"] is None

    code, _, err = run(capsys, "install", str(source.parent))
    assert code == 1 and "a skill of that name is already installed" in err

    code, _, err = run(capsys, "uninstall", "shipped")
    assert code == 1 and "'shipped' is a bundled skill" in err

    code, out, _ = run(capsys, "uninstall", "digest")
    assert code == 0 and "the next sync disables its stored skill" in out
    assert not (dirs["user"] / "digest").exists()


def test_a_refused_archive_prints_every_reason_as_json(dirs: dict[str, Path], tmp_path: Path,  # noqa: F811
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    archive = tmp_path / "evil.tar"
    with tarfile.open(archive, "w") as tar:
        for name in ("../up.txt", "/abs.txt"):
            tar.addfile(tarfile.TarInfo(name))

    code, out, _ = run(capsys, "install", "--json", str(archive))

    assert code == 1
    assert json.loads(out) == {"ok": False, "error": "refused", "errors": [
        {"field": "", "message": "../up.txt contains '..' (it would be written outside the skill)"},
        {"field": "", "message": "/abs.txt has an absolute path"},
    ]}
    assert not dirs["user"].exists()


def test_a_refusal_quoting_an_archives_names_prints_no_terminal_code(
        dirs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    # An entry named to clear the screen and print a line of its own, shown in the refusal it causes.
    archive = tmp_path / "sly.tar"
    with tarfile.open(archive, "w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(tarfile.TarInfo("../x\x1b[2J\x1b[H\rinstalled fine\u202e.txt"))

    code, out, err = run(capsys, "install", str(archive))

    assert code == 1 and not any(ch in out + err for ch in "\x1b\r\u202e"), err
    assert "../x\\x1b[2J\\x1b[H\\rinstalled fine\\u202e.txt contains '..'" in err


def test_a_collection_with_a_bad_skill_installs_the_rest_and_exits_1(
        dirs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    write(tmp_path / "pack", "good")
    write(tmp_path / "pack", "broken", description="x" * 1025)
    (tmp_path / "pack" / "docs").mkdir()

    code, out, err = run(capsys, "install", str(tmp_path / "pack"))

    assert code == 1
    assert f"installed good in {dirs['user'] / 'good'}" in out and "left out docs/: no SKILL.md" in out
    assert "refused broken\n  Description exceeds 1024 character limit (1025 chars)\n" in err
    assert "1 installed, 1 refused" in err
    assert sorted(p.name for p in dirs["user"].iterdir()) == ["good"]

    code, out, _ = run(capsys, "install", "--json", "--force", str(tmp_path / "pack"))
    answer = json.loads(out)
    assert code == 1 and answer["ok"] is False
    assert [s["name"] for s in answer["installed"]] == ["good"]
    assert answer["refused"] == [{"name": "broken", "folder": "broken",
                                  "reasons": ["Description exceeds 1024 character limit (1025 chars)"]}]

    code, _, err = run(capsys, "install", "--all-or-nothing", "--force", str(tmp_path / "pack"))
    assert code == 1 and "broken: Description exceeds 1024 character limit (1025 chars)" in err


def test_validate_names_the_hidden_folders_it_left_out(dirs: dict[str, Path], tmp_path: Path,  # noqa: F811
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "skills" / ".curated", "gh-fix-ci")
    write(tmp_path / "skills" / ".curated", "linear")

    code, out, _ = run(capsys, "validate", str(tmp_path / "skills"))

    assert code == 1 and "Missing required file: SKILL.md" in out
    curated = tmp_path / "skills" / ".curated"
    assert f"left out {curated}/: a hidden folder of 2 skills; to check them: skills validate {curated}" in out

    code, out, _ = run(capsys, "validate", str(curated))
    assert code == 0 and "2 checked, 0 errors" in out


def test_install_refuses_a_file_the_sync_would_refuse(dirs: dict[str, Path], tmp_path: Path,  # noqa: F811
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # Two triggers: the sync's registration refuses it, so install does, by the same normalizer.
    source = write(tmp_path / "src", "twice",
                   metadata={"trigger_config": {"schedule": "0 9 * * *", "interval_minutes": 5}})
    code, _, err = run(capsys, "install", str(source.parent))
    assert code == 1 and "refused" in err, err
    assert "twice: Field 'metadata.trigger_config': give exactly one of schedule, interval_minutes, at" in err
    assert not (dirs["user"] / "twice").exists()
