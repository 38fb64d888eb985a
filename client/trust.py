"""Trusting a SKILL.md skill's executable parts, from a client: `skills trust`, `skills install --trust`.

A change runs as the ``TrustSkill`` workflow on the worker, which reads the skill from its own folders
and records the digest of its toolsets and scripts; a read of the trust states is a standalone
``trust_states`` activity. Neither needs the database: the worker holds the store.
"""

from __future__ import annotations

from datetime import timedelta

from client.skills_client import SkillsClient
from skills.errors import SkillNotFoundError, SkillsError
from skills.naming import TRUST_SKILL, TRUST_STATES, slug
from skills.skillmd.trust import TrustInput, TrustQuery, TrustResult, TrustState

TRUST_READ_TIMEOUT = timedelta(seconds=10)


async def trust(skills: SkillsClient, name: str, *, expected_digest: str | None = None,
                untrust: bool = False) -> TrustState:
    """Trust (or untrust) the skill ``name`` as the worker's folders hold it. With ``expected_digest`` (what
    the owner reviewed), a worker whose copy differs trusts nothing. Raises :class:`SkillsError` saying why."""
    action = "untrust" if untrust else "trust"
    result = await skills.calls.workflow(TRUST_SKILL, TrustInput(name=name, action=action, expected_digest=expected_digest),
                                         TrustResult, f"{action}-{slug(name)}", f"{action} skill '{name}'")
    if not result.ok or result.state is None:
        message = result.error or f"{action} of '{name}' failed"
        raise SkillNotFoundError(message) if message.startswith("no SKILL.md skill") else SkillsError(message)
    return result.state


async def trust_states(skills: SkillsClient, names: list[str]) -> dict[str, TrustState]:
    """The trust of each of ``names`` as the worker sees it (names it does not find are left out)."""
    if not names:
        return {}
    states = await skills.calls.read(TRUST_STATES, TrustQuery(names=names), list[TrustState])
    return {state.name: state for state in states}
