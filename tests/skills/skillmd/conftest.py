"""Helpers that write skill folders under tmp_path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .skill_files import skill_text

WriteSkill = Callable[..., Path]


@pytest.fixture
def write_skill() -> WriteSkill:
    """``write_skill(root, name, body=..., folder=..., **fields)`` writes root/folder/SKILL.md."""

    def write(
        root: Path,
        name: str,
        *,
        body: str = "Follow these steps.",
        folder: str | None = None,
        description: str | None = None,
        **fields: Any,
    ) -> Path:
        frontmatter = {"name": name, "description": description or f"The {name} skill. It helps.", **fields}
        path = root / (folder or name) / "SKILL.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(skill_text(frontmatter, body))
        return path

    return write
