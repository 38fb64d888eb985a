"""The digest that pins a skill's executable parts, read from its folder: what changes it (toolsets, the files
that run) and what does not (instructions, description, data files, Python's own caches)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adapters.skill_folders import executable_parts, load_skill_file
from skills.skillmd.trust import executable_digest, trust_state
from tests.skills.skillmd.skill_files import skill_text

SERVER = {"x": {"command": "python", "args": ["server.py"]}}


def skill(folder: Path, body: str = "Do it.", **fields: Any) -> Any:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(skill_text({"name": folder.name, "description": "A skill.", **fields}, body))
    found, problems = load_skill_file(folder / "SKILL.md", "user")
    assert found is not None, problems
    return found


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "tool"
    (root / "scripts" / "lib").mkdir(parents=True)
    (root / "scripts" / "run.sh").write_text("echo run\n")
    (root / "scripts" / "lib" / "helper.sh").write_text("echo helper\n")
    (root / "server.py").write_text("print('serve')\n")
    (root / "references").mkdir()
    (root / "references" / "notes.md").write_text("notes\n")
    return root


def digest(folder: Path, **fields: Any) -> str | None:
    return executable_parts(skill(folder, **{"toolsets": SERVER, "scripts": ["run.sh"], **fields})).digest


def test_a_skill_with_nothing_to_run_needs_no_trust(tmp_path: Path) -> None:
    plain = skill(tmp_path / "plain")
    parts = executable_parts(plain)
    assert parts.digest is None and not parts.executable
    assert trust_state(plain, None, parts=parts).status == "not needed" and trust_state(plain, None, parts=parts).runs
    assert executable_digest({}, {}) is None


def test_the_digest_covers_the_toolsets_and_the_files_that_run(folder: Path) -> None:
    first = digest(folder)
    parts = executable_parts(skill(folder, toolsets=SERVER, scripts=["run.sh"]))
    assert parts.files == ["scripts/lib/helper.sh", "scripts/run.sh", "server.py"]
    assert parts.lines() == ["toolset x: python server.py", "script scripts/run.sh", "file scripts/lib/helper.sh",
                             "file server.py"]
    assert first is not None and first.startswith("sha256:") and digest(folder) == first  # stable

    # Not covered: the instructions, the description, triggers, data files, Python's caches.
    assert digest(folder, body="Other instructions.", description="Changed.", triggers={"keywords": ["x"]}) == first
    (folder / "references" / "notes.md").write_text("other notes\n")
    (folder / "scripts" / "__pycache__").mkdir()
    (folder / "scripts" / "__pycache__" / "run.cpython-312.pyc").write_bytes(b"\0")
    assert digest(folder) == first

    changes = [
        lambda: (folder / "scripts" / "run.sh").write_text("echo evil\n"),
        lambda: (folder / "scripts" / "lib" / "helper.sh").write_text("echo evil\n"),
        lambda: (folder / "server.py").write_text("print('evil')\n"),
        lambda: (folder / "scripts" / "new.sh").write_text("echo new\n"),
    ]
    seen = {first}
    for change in changes:
        change()
        after = digest(folder)
        assert after not in seen
        seen.add(after)
    assert digest(folder, toolsets={"x": {"command": "python", "args": ["server.py", "--more"]}}) not in seen
    assert digest(folder, toolsets={"x": {"command": "python", "args": ["server.py"], "env": {"K": "${K}"}}}) \
        not in seen
    assert digest(folder, toolsets={"x": {"url": "https://example.com/mcp"}}) not in seen


def test_a_link_is_pinned_as_where_it_points(folder: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.sh"
    outside.write_text("echo outside\n")
    (folder / "scripts" / "run.sh").unlink()
    (folder / "scripts" / "run.sh").symlink_to(outside)
    first = digest(folder)
    (folder / "scripts" / "run.sh").unlink()
    (folder / "scripts" / "run.sh").symlink_to(tmp_path / "elsewhere.sh")
    assert digest(folder) != first


def test_states(folder: Path) -> None:
    found = skill(folder, toolsets=SERVER)
    parts = executable_parts(found)
    pinned = parts.digest
    assert trust_state(found, None, parts=parts).status == "untrusted"
    assert trust_state(found, pinned, parts=parts).status == "trusted"
    assert trust_state(found, "sha256:other", parts=parts).describe() == "untrusted (changed since trusted)"
    assert trust_state(found, None, parts=parts, bundled=True).runs
    error = str(trust_state(found, None, parts=parts).error())
    assert "toolset x: python server.py" in error and "run `skills trust tool`" in error
