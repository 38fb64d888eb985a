"""The store's reads that a client starts on its own (``skills get``, ``list``, ``runs``) and the
workflows use: each a synchronous activity, since the store blocks (the worker runs it in its
thread pool)."""

from __future__ import annotations

from datetime import UTC, datetime

from temporalio import activity

from activities.failures import as_application_errors
from adapters.store import Store
from skills.errors import SkillNotFoundError
from skills.messages.manage import HistoryQuery, IncidentsQuery, RunsQuery, SkillFilter, SkillRef
from skills.naming import GET_SKILL, LIST_GRANTS, LIST_INCIDENTS, LIST_REVISIONS, LIST_RUNS, LIST_SKILLS
from skills.owner.grants import Grant, GrantsQuery
from skills.run.backoff import BackoffPolicy
from skills.run.deadline import RunLimits, run_timeout
from skills.run.incidents import Incident
from skills.spec.models import RunRecord, Skill
from skills.spec.revisions import Revision


class StoreActivities:
    """Reads of the store, for the client's management calls and the workflows."""

    def __init__(self, store: Store, backoff: BackoffPolicy, limits: RunLimits | None = None) -> None:
        self.store = store
        self.backoff = backoff
        self.limits = limits or RunLimits()

    @activity.defn(name=GET_SKILL)
    def get_skill(self, ref: SkillRef) -> Skill:
        with as_application_errors():
            return self._with_backoff(self.store.skills.find_skill(ref.ref, ref.agent_id))

    @activity.defn(name=LIST_SKILLS)
    def list_skills(self, flt: SkillFilter) -> list[Skill]:
        return [self._with_backoff(skill) for skill in self.store.skills.list_skills(flt)]

    def _with_backoff(self, skill: Skill) -> Skill:
        return skill.model_copy(update={"backoff_until": skill.failures.retry_after(self.backoff),
                                        "run_timeout_seconds": run_timeout(skill, self.limits).total_seconds()})

    @activity.defn(name=LIST_RUNS)
    def list_runs(self, query: RunsQuery) -> list[RunRecord]:
        with as_application_errors():
            skill_id = self.store.skills.find_skill(query.skill.ref, query.skill.agent_id).id if query.skill else None
            return self.store.runs.list_runs(skill_id, query.limit)

    @activity.defn(name=LIST_INCIDENTS)
    def list_incidents(self, query: IncidentsQuery) -> list[Incident]:
        with as_application_errors():
            skill_id = self.store.skills.find_skill(query.skill.ref, query.skill.agent_id).id if query.skill else None
            return self.store.runs.list_incidents(skill_id, closed=query.closed, limit=query.limit)

    @activity.defn(name=LIST_GRANTS)
    def list_grants(self, query: GrantsQuery) -> list[Grant]:
        """The standing grants, newest first: the live ones, or (``all``) revoked and expired ones too."""
        return self.store.approvals.list_grants(now=datetime.now(UTC), live_only=not query.all, limit=query.limit)

    @activity.defn(name=LIST_REVISIONS)
    def list_revisions(self, query: HistoryQuery) -> list[Revision]:
        """A skill's revisions, newest first (``rev``: that one); a deleted skill's, found by its name or id."""
        with as_application_errors():
            ref = query.skill
            try:
                skill_id = self.store.skills.find_skill(ref.ref, ref.agent_id).id
            except SkillNotFoundError:
                gone = self.store.revisions.deleted_skill_revisions(ref.ref, ref.agent_id)
                if len(gone) != 1:
                    raise SkillNotFoundError(
                        f"no skill {ref.ref!r}" + ("" if not gone else f", and {len(gone)} deleted ones of that name "
                                                   "(name one by its id: " + ", ".join(str(r.skill_id) for r in gone)
                                                   + ")")) from None
                skill_id = gone[0].skill_id
            if query.rev is not None:
                return [self.store.revisions.get_revision(skill_id, query.rev)]
            return self.store.revisions.list_revisions(skill_id, query.limit)
