"""A skill's body and resource files, read only when asked for and within size caps.

Resources are the files under ``references/`` (``reference/`` is accepted too),
``assets/`` and ``scripts/``; any other file inside the skill's folder can be read
by its relative path as well, since SKILL.md bodies point at files like ``FORMS.md``.
Nothing outside the folder can be reached.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from skills.errors import TooLargeError
from skills.skillmd import files
from skills.skillmd.limits import DEFAULT_LIMITS, Limits
from skills.skillmd.manifest import SkillFile
from skills.skillmd.parsing import split_frontmatter

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


def read_body(skill: SkillFile, limits: Limits = DEFAULT_LIMITS) -> str:
    """The skill's instructions (the SKILL.md body), read from the file now."""
    text = files.read_text(skill.path, limits.max_file_bytes)
    _, body = split_frontmatter(text)
    size = len(body.encode())
    if size > limits.max_body_bytes:
        raise TooLargeError(f"{skill.path}: body is {size} bytes; the limit is {limits.max_body_bytes} bytes")
    return body


def list_resources(skill: SkillFile) -> list[Resource]:
    """The skill's resource files, without reading them."""
    return [
        Resource(path=path, kind=kind, size=size)
        for folder, kind in RESOURCE_FOLDERS.items()
        for path, size in files.files_under(skill.folder, folder)
    ]


def read_resource(skill: SkillFile, relative_path: str, limits: Limits = DEFAULT_LIMITS) -> str:
    """A text file of the skill by its path relative to the skill folder.

    Raises ``ResourceError`` for a path that is absolute, contains ``..``, resolves
    outside the folder (a symlink out) or names no file; ``TooLargeError`` over the cap.
    """
    return files.read_text(files.resolve_inside(skill.folder, relative_path), limits.max_resource_bytes)
