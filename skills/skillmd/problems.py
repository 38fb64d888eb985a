"""One structured finding about a skill file, as validation and loading report it."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

Severity = Literal["error", "warning"]


class Problem(BaseModel):
    """A problem in one file: what is wrong, with which field, and how bad it is."""

    model_config = ConfigDict(frozen=True)

    severity: Severity
    """``error`` breaks the specification; ``warning`` is advice, or an error that lenient loading forgave."""
    message: str
    """Worded like the reference validator skills-ref, naming the field and the limit."""
    field: str | None = None
    """The frontmatter field at fault (dotted for nested ones: ``metadata.priority``)."""
    path: Path | None = None
    """The file the problem is in."""

    @classmethod
    def error(cls, message: str, field: str | None = None) -> Problem:
        return cls(severity="error", message=message, field=field)

    @classmethod
    def warning(cls, message: str, field: str | None = None) -> Problem:
        return cls(severity="warning", message=message, field=field)

    def at(self, path: Path) -> Problem:
        return self.model_copy(update={"path": path})

    def as_warning(self) -> Problem:
        return self.model_copy(update={"severity": "warning"})

    def __str__(self) -> str:
        where = f"{self.path}: " if self.path else ""
        return f"{where}{self.severity}: {self.message}"


def has_errors(problems: Iterable[Problem], *, strict: bool = False) -> bool:
    """Whether the problems fail validation; ``strict`` fails on warnings too."""
    return any(strict or p.severity == "error" for p in problems)
