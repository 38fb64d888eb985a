"""A skill's body and resource files, read only when asked for (by a :class:`SkillReader`) and within size caps.

Resources are the files under ``references/`` (``reference/`` is accepted too),
``assets/`` and ``scripts/``; any other file inside the skill's folder can be read
by its relative path as well, since SKILL.md bodies point at files like ``FORMS.md``.
Nothing outside the folder can be reached.
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from skills.errors import TooLargeError
from skills.skillmd.limits import DEFAULT_LIMITS, Limits
from skills.skillmd.manifest import SkillFile
from skills.skillmd.parsing import split_frontmatter
from skills.skillmd.problems import Problem

ResourceKind = Literal["references", "assets", "scripts"]

RESOURCE_FOLDERS: dict[str, ResourceKind] = {
    "references": "references",
    "reference": "references",
    "assets": "assets",
    "scripts": "scripts",
}


class Resource(BaseModel):
    """A file a skill ships beside its SKILL.md."""

    model_config = ConfigDict(frozen=True)

    path: str
    """Relative to the skill folder, with ``/`` separators: what ``read_resource`` takes."""
    kind: ResourceKind
    size: int
    """Bytes."""


class SkillReader(Protocol):
    """What reads a skill's folder when asked: its body, its resource files, its problems.

    ``adapters.skill_folders.FOLDERS`` reads the disk now, within the caps of ``Limits``; a test's may
    hold the files in memory. Reads raise ``SkillFileError`` (``ResourceError``, ``TooLargeError``)."""

    def read_body(self, skill: SkillFile, limits: Limits = DEFAULT_LIMITS) -> str:
        """The skill's instructions (the SKILL.md body), read from the file now."""
        ...

    def list_resources(self, skill: SkillFile) -> list[Resource]:
        """The skill's resource files, without reading them."""
        ...

    def read_resource(self, skill: SkillFile, relative_path: str, limits: Limits = DEFAULT_LIMITS) -> str:
        """A text file of the skill by its path relative to the skill folder; refused outside it."""
        ...

    def problems(self, skill: SkillFile, limits: Limits = DEFAULT_LIMITS) -> list[Problem]:
        """Every problem of the skill's SKILL.md and declared scripts, as ``skills validate`` reports them."""
        ...


def body_of(skill: SkillFile, text: str, limits: Limits = DEFAULT_LIMITS) -> str:
    """The body of ``text``, the skill's SKILL.md as read; ``TooLargeError`` past the body's cap."""
    _, body = split_frontmatter(text)
    size = len(body.encode())
    if size > limits.max_body_bytes:
        raise TooLargeError(f"{skill.path}: body is {size} bytes; the limit is {limits.max_body_bytes} bytes")
    return body
