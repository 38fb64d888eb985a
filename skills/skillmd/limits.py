"""Size caps on what is read from skill folders, so one huge file cannot flood memory or a prompt."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from skills.spec.limits import KIB, MAX_INSTRUCTIONS_BYTES


class Limits(BaseModel):
    model_config = ConfigDict(frozen=True)

    max_frontmatter_bytes: int = 64 * KIB
    """Frontmatter of a SKILL.md or AGENT.md (the spec's fields fit in a few KiB)."""
    max_body_bytes: int = MAX_INSTRUCTIONS_BYTES
    """Body (instructions) of a SKILL.md, read only when asked for; a registration's instructions have the same limit."""
    max_resource_bytes: int = 256 * KIB
    """One file under ``references/``, ``assets/``, ``scripts/`` (or elsewhere in the skill folder)."""

    @property
    def max_file_bytes(self) -> int:
        return self.max_frontmatter_bytes + self.max_body_bytes


DEFAULT_LIMITS = Limits()
