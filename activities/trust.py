"""The owner's trust in SKILL.md skills' executable parts, as the worker's folders and store hold it.

- ``trust_skill`` (acting; only inside a ``TrustSkill`` workflow): record, or forget, the digest of a
  skill's toolsets and scripts as they are in the worker's folders now.
- ``trust_states`` (a read a client may start): each skill's state, for ``skills show``, ``list --files``
  and ``catalog``.

:func:`trust_states` is what a fire (``begin_run``), a script and a chat turn ask before anything of a
skill runs. The digest is ``skills.skillmd.trust``'s; bundled skills are trusted without a record.
"""

from __future__ import annotations

from datetime import UTC, datetime

from temporalio import activity

from activities.failures import application_error
from adapters.skill_folders import executable_parts, file_skill
from adapters.store import Store
from config.settings import Settings
from skills.errors import SkillNotFoundError, UntrustedSkillError, WorkflowInputError
from skills.naming import TRUST_SKILL, TRUST_STATES
from skills.skillmd.manifest import SkillFile
from skills.skillmd.trust import (
    TrustInput,
    TrustQuery,
    TrustResult,
    TrustState,
    trust_state,
    untrusted_reason,
)


def trust_states(store: Store, settings: Settings, skills: list[SkillFile]) -> list[TrustState]:
    """Each skill's trust: its executable parts read now, against the digest its owner trusted."""
    bundled = settings.skill_folders()["bundled"].resolve()
    parts = {skill.name: executable_parts(skill) for skill in skills}
    records = store.trust.trusted([name for name, found in parts.items() if found.executable])
    return [trust_state(skill, *records.get(skill.name, (None, None)), parts=parts[skill.name],
                        bundled=skill.folder.resolve().parent == bundled) for skill in skills]


def untrusted(store: Store, settings: Settings, skills: list[SkillFile]) -> UntrustedSkillError | None:
    """The refusal naming the first of ``skills`` whose executable parts may not run, or None."""
    return next((state.error() for state in trust_states(store, settings, skills) if not state.runs), None)


class TrustActivities:
    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings

    @activity.defn
    def trust_skill(self, request: TrustInput) -> TrustResult:
        """Trust (record the digest of) or untrust a skill's executable parts as the worker's folders hold
        them now. Only a ``TrustSkill`` workflow may ask: trust is the owner's act, not a payload's."""
        if activity.info().workflow_type != TRUST_SKILL:
            raise application_error(WorkflowInputError(f"trust_skill runs only inside a {TRUST_SKILL} workflow"))
        skill = file_skill(self.settings, request.name)
        if skill is None:
            raise application_error(SkillNotFoundError(
                f"no SKILL.md skill named '{request.name}' in the worker's skill folders"))
        if request.action == "untrust":
            self.store.trust.remove_trust(skill.name)
            [state] = trust_states(self.store, self.settings, [skill])
            return TrustResult(ok=True, state=state, pause=None if state.runs else self._firing(skill.name))
        [state] = trust_states(self.store, self.settings, [skill])
        parts = state.parts
        if state.status in ("not needed", "bundled"):
            return TrustResult(ok=True, state=state)
        if parts.digest is None:
            return TrustResult(ok=False, state=state, error=f"skill '{skill.name}' cannot be pinned: {parts.problem}")
        if request.expected_digest is not None and request.expected_digest != parts.digest:
            return TrustResult(ok=False, state=state, error=(
                f"the worker's copy of skill '{skill.name}' ({skill.folder}) differs from the one reviewed here: "
                "nothing was trusted; trust it where the worker's folders are, or make them the same"))
        now = datetime.now(UTC)
        self.store.trust.set_trust(skill.name, parts.digest, parts.lines(), now)
        activity.logger.info("skill %s trusted: %s", skill.name, parts.digest)
        return TrustResult(ok=True, resume=self._paused_for_trust(skill.name), state=state.model_copy(update={
            "status": "trusted", "trusted_digest": parts.digest, "trusted_at": now}))

    def _paused_for_trust(self, name: str) -> int | None:
        """The files agent's stored skill ``name``, if the sync paused it for want of trust (never a skill
        a person paused: its reason is theirs)."""
        try:
            stored = self.store.skills.find_skill(name, self.settings.file_skills_agent)
        except SkillNotFoundError:
            return None
        return stored.id if not stored.enabled and untrusted_reason(stored.disabled_reason) else None

    def _firing(self, name: str) -> int | None:
        """The files agent's stored skill ``name``, if its schedule may fire now (enabled, scheduled): an
        untrust stops it at once rather than at the next sync."""
        try:
            stored = self.store.skills.find_skill(name, self.settings.file_skills_agent)
        except SkillNotFoundError:
            return None
        return stored.id if stored.enabled and stored.schedule_id is not None else None

    @activity.defn(name=TRUST_STATES)
    def trust_states(self, request: TrustQuery) -> list[TrustState]:
        """The trust of each named skill found in the worker's folders (unknown names are left out)."""
        found = [skill for name in dict.fromkeys(request.names[:1000])
                 if (skill := file_skill(self.settings, name)) is not None]
        return trust_states(self.store, self.settings, found)
