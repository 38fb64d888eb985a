"""Text of SKILL.md files for the tests."""

from __future__ import annotations

from typing import Any

import yaml


def skill_text(frontmatter: dict[str, Any] | str, body: str = "Follow these steps.") -> str:
    """A SKILL.md's text: YAML from a dict (or given as is), then the body."""
    fm = frontmatter if isinstance(frontmatter, str) else yaml.safe_dump(frontmatter, sort_keys=False)
    return f"---\n{fm.strip()}\n---\n{body}\n"
