"""Where SKILL.md skills come from: the names of the sources and the folder of the bundled ones.

A module of its own, with nothing imported, so that the settings can name them without loading the
parsing and validation of skill files (a process that reads no skill file, `skills get`, pays nothing)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

SourceName = Literal["project", "user", "bundled"]

BUNDLED_DIR = Path(__file__).parent.parent / "bundled"
"""The skills shipped with the engine (``skills/bundled/``): a path worked out from the module's own, no file
read (the settings make it absolute where they use it)."""
