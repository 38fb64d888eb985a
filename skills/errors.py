"""The engine's errors: a short tree under one base class.

Validation errors are deterministic (retrying cannot fix them), so the activities
that raise them turn them into non-retryable Temporal failures, and the client
turns those back into these classes.
"""

from __future__ import annotations

from pydantic import BaseModel


class FieldError(BaseModel):
    """One problem with one field of an input, as a person can act on it."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


class SkillsError(Exception):
    """Base of every error the engine raises on purpose."""


class SkillValidationError(SkillsError):
    """A skill input was refused; nothing was stored."""

    def __init__(self, errors: list[FieldError]) -> None:
        self.errors = errors
        super().__init__("; ".join(str(e) for e in errors))

    @classmethod
    def single(cls, field: str, message: str) -> SkillValidationError:
        return cls([FieldError(field=field, message=message)])


class SkillNotFoundError(SkillsError):
    """No skill has that id, or that name for that agent."""


class ToolCallError(SkillsError):
    """A tool could not be called, or its result was an error."""
