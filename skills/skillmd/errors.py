"""Errors of the SKILL.md layer, under the engine's one base class.

They live beside the code that raises them (rather than in ``skills.errors``) because
only this layer reads skill files; all of them are deterministic, so a caller must
not retry them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skills.errors import SkillsError

if TYPE_CHECKING:
    from skills.skillmd.problems import Problem


class SkillFileError(SkillsError):
    """A SKILL.md or AGENT.md file could not be read or parsed."""


class FrontmatterError(SkillFileError):
    """The file's YAML frontmatter is missing, unclosed, not a mapping or not safe YAML."""


class TooLargeError(SkillFileError):
    """A file is bigger than the limit set for its kind (frontmatter, body, resource)."""


class ResourceError(SkillFileError):
    """A resource path was refused (absolute, ``..``, a symlink out) or does not exist."""


class AgentDefinitionError(SkillFileError):
    """An AGENT.md was refused; ``problems`` lists every reason."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))
