"""The MCP Skills extension's wire (the package's docstring says it whole): its id, a skill's URI, an entry and
its resources as pydantic models, a file's digest, and the limits both sides keep.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal
from urllib.parse import quote, unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field

from skills.errors import SkillsError

EXTENSION_ID = "io.modelcontextprotocol/skills"


SCHEME = "skill"


MAX_FILES = 512
"""Files one skill may have to be served or fetched (the limit FastMCP's implementation keeps too)."""


MAX_BYTES = 16 * 1024 * 1024
"""Bytes one skill's files may hold in all."""


CHUNK = 64 * 1024
"""Bytes read at a time to digest a served file."""


PAGE_SIZE = 100
"""Skills in one ``skills/list`` page."""


MAX_PAGES = 100
"""Pages a fetch reads before it stops: a server whose cursor never ends cannot hold an install."""


class SkillExchangeError(SkillsError):
    """A skill that cannot be served or fetched as the extension says, with the reason."""


class SkillResource(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    uri: str
    digest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    size: int = Field(ge=0)


class SkillEntry(BaseModel):
    """One skill as ``skills/list`` and ``skills/get`` give it."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    uri: str
    frontmatter: dict[str, Any]
    resources: list[SkillResource] | Literal["dynamic"]
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


def skill_uri(path: str, file: str = "SKILL.md") -> str:
    """``skill://<path>/<file>``, each segment percent-encoded as a URI path wants it."""
    return f"{SCHEME}://" + "/".join(quote(part, safe="") for part in [*path.split("/"), *file.split("/")])


def uri_parts(uri: str) -> tuple[str, ...]:
    """The decoded segments of a ``skill://`` URI (its authority is the first); refused if it is not one,
    or if a segment is empty, ``.``, ``..`` or holds a separator."""
    parsed = urlsplit(uri)
    if parsed.scheme.lower() != SCHEME or not parsed.netloc or parsed.query or parsed.fragment:
        raise SkillExchangeError(f"'{uri}' is not a skill:// URI")
    raw = [parsed.netloc, *parsed.path.split("/")[1:]]
    parts = tuple(unquote(part) for part in raw)
    for part in parts:
        if part in ("", ".", "..") or "/" in part or "\\" in part or "\0" in part:
            raise SkillExchangeError(f"'{uri}' has a segment that is empty, '.', '..' or holds a separator")
    return parts


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()
