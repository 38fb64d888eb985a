"""What an install says: where a skill came from (its ``.install.json``), what was installed, refused or removed,
and the limits one install is held to.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from skills.spec.limits import MAX_INSTALL_BYTES, MAX_INSTALL_FILE_BYTES, MAX_INSTALL_FILES

SourceKind = Literal["folder", "archive", "git", "mcp"]


RECORD = ".install.json"
"""The file in an installed skill's folder that says where it came from."""


@dataclass(frozen=True)
class InstallLimits:
    """How much one install may unpack; the defaults are those of :mod:`skills.spec.limits`."""

    max_file_bytes: int = MAX_INSTALL_FILE_BYTES
    max_total_bytes: int = MAX_INSTALL_BYTES
    max_files: int = MAX_INSTALL_FILES


class InstallRecord(BaseModel):
    """What ``.install.json`` holds: where the skill came from, and when it was installed."""

    model_config = ConfigDict(frozen=True)

    source: str
    kind: SourceKind
    path: str | None = None
    ref: str | None = None
    commit: str | None = None
    uri: str | None = None
    """For a skill from an MCP server (``kind`` mcp, ``source`` ``mcp:SERVER``): its SKILL.md's URI there."""
    installed_at: datetime


class InstalledSkill(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    path: Path
    """The installed skill's folder."""
    replaced: bool = False
    """Whether an installed skill of that name was replaced (``force``)."""
    scheduled: bool = False
    """Whether it carries a ``trigger_config``: the next sync registers it."""
    warnings: list[str] = []
    notes: list[str] = []


class RefusedSkill(BaseModel):
    """A skill of the source that was not installed, with every reason."""

    model_config = ConfigDict(frozen=True)

    name: str | None
    """Its name, when its SKILL.md could be read far enough to say."""
    folder: str
    """Its folder in the source (``SKILL.md`` when the source is the skill)."""
    reasons: list[str]

    @property
    def label(self) -> str:
        """How a refusal names it: its folder in a collection, else (one skill, or one from a server) its name."""
        return self.name if self.name and (self.folder == "SKILL.md" or "://" in self.folder) else self.folder


class InstallResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    installed: list[InstalledSkill]
    record: InstallRecord
    refused: list[RefusedSkill] = []
    """The source's skills that did not pass: the others were installed without them."""
    skipped: list[str] = []
    """Folders of the source that were not looked into, and why (``.curated/: a hidden folder of 30 skills``)."""


class UninstallResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    path: Path
    scheduled: bool = False
    """Whether it carried a schedule: the next sync disables its stored skill (``file removed``)."""
    revealed: str | None = None
    """The skill of the same name that shows again now, if any (``bundled /path``)."""


def read_record(folder: Path) -> InstallRecord | None:
    """Where an installed skill came from (its ``.install.json``); None for a skill put there by hand."""
    try:
        return InstallRecord.model_validate_json((Path(folder) / RECORD).read_text())
    except (OSError, ValueError):
        return None


def describe_record(record: InstallRecord | None) -> str:
    """One line: ``git https://host/repo.git (skills/x @ v1, commit 1a2b3c4)``, ``mcp mcp:docs
    (skill://pdf/SKILL.md)``, or ``-``."""
    if record is None:
        return "-"
    details = [d for d in (record.uri or record.path, f"@ {record.ref}" if record.ref else None,
                           f"commit {record.commit[:10]}" if record.commit else None) if d]
    return f"{record.kind} {record.source}" + (f" ({', '.join(details)})" if details else "")
