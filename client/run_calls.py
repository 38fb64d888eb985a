"""Runs, from a client: a skill run now or rehearsed (a SkillRun workflow started here), and the runs, incidents
and overdue fires the worker recorded (standalone activities).

A part of :class:`client.skills_client.SkillsClient` (:mod:`client.base`).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError

from client.base import ClientBase, raise_refusal, refuse_oversize
from client.calls import root, root_message
from search_attributes import search_attributes
from skills.errors import FieldError, SkillRunFailed, SkillsError, SkillValidationError, error_class
from skills.messages.maintenance import OverdueQuery, OverdueSkills, RunHistory
from skills.messages.manage import IncidentsQuery, RunsQuery, SkillRef
from skills.messages.run import Rehearse, SkillRunInput
from skills.naming import (
    FIND_OVERDUE_SKILLS,
    LIST_INCIDENTS,
    LIST_RUNS,
    RUN_HISTORY,
    SKILL_RUN,
    run_summary,
    schedule_id_for,
)
from skills.run.deadline import RunLimits, run_timeout
from skills.run.incidents import Incident
from skills.run.rehearsal import REHEARSAL_TIMEOUT
from skills.spec.models import REHEARSAL, RunRecord


class RunCalls(ClientBase):
    """A skill's runs: started now, rehearsed, and read back."""

    async def run(self, ref: str | int, agent_id: str | None = None, wait: bool = True) -> RunRecord | str:
        """Run a skill now, whatever its trigger; return the run, or its workflow id if not waiting."""
        skill = await self.get(ref, agent_id)  # answered by a worker, or WorkerUnavailableError
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        handle = await self.client.start_workflow(
            SKILL_RUN,
            SkillRunInput(skill_id=skill.id, trigger="manual"),
            id=f"{skill.schedule_id or schedule_id_for(self.task_queue, skill.id, skill.name)}-manual-{stamp}",
            task_queue=self.task_queue,
            result_type=RunRecord,
            search_attributes=search_attributes(skill),
            static_summary=f"manual run · {run_summary(skill)}",
            # A run always ends: the worker gives the deadline its limits make (skills.run.deadline);
            # from an older worker, the one the default limits make.
            execution_timeout=timedelta(seconds=skill.run_timeout_seconds) if skill.run_timeout_seconds
            else run_timeout(skill, RunLimits()),
        )
        if not wait:
            return handle.id
        return await run_result(handle)

    async def rehearse(self, ref: str | int | None = None, agent_id: str | None = None, *,
                       data: dict[str, Any] | None = None, wait: bool = True) -> RunRecord | str:
        """Rehearse a skill (``skills.run.rehearsal``): the stored one ``ref`` names, a definition ``data`` as its
        registration would make it, or, with both, ``ref`` changed by ``data``. A real run of the
        ``rehearsal`` kind: only read-only tools are called, every other call is recorded with its
        arguments, nothing is delivered or counted. Returns the run (its calls, the messages it would have
        sent as ``deliveries``, its tokens), or its workflow id if not waiting. A definition the worker
        refuses raises :class:`SkillValidationError`, by field, as a registration would."""
        if ref is None and data is None:
            raise SkillValidationError.single("ref", "name a skill to rehearse, or give a definition")
        skill = await self.get(ref, agent_id) if ref is not None else None
        if data is not None:
            refuse_oversize(data)
        rehearse = Rehearse(data=data, target=SkillRef(ref=str(skill.id), agent_id=skill.agent_id) if skill else None) \
            if data is not None else None
        name = skill.name if skill is not None else str(data.get("name") or "a definition") if data else ""
        handle = await self.client.start_workflow(
            SKILL_RUN,
            SkillRunInput(skill_id=skill.id if skill is not None else 0, trigger=REHEARSAL, rehearse=rehearse),
            id=f"{self.task_queue}-rehearsal-{uuid.uuid4().hex[:16]}",
            task_queue=self.task_queue,
            result_type=RunRecord,
            **({"search_attributes": search_attributes(skill)} if skill is not None else {}),
            static_summary=f"rehearsal of {name}"[:200],
            execution_timeout=REHEARSAL_TIMEOUT,
        )
        if not wait:
            return handle.id
        try:
            return await handle.result()
        except WorkflowFailureError as e:
            first = root(e)
            if isinstance(first, ApplicationError) and error_class(first.type) is SkillValidationError and first.details:
                raise_refusal([FieldError.model_validate(item) for item in first.details[0]])
            raise SkillsError(f"the rehearsal failed: {root_message(e)}") from e

    async def runs(self, ref: str | int | None = None, agent_id: str | None = None, limit: int = 20) -> list[RunRecord]:
        skill = SkillRef(ref=str(ref), agent_id=agent_id) if ref is not None else None
        return await self.calls.read(LIST_RUNS, RunsQuery(skill=skill, limit=limit), list[RunRecord])

    async def incidents(self, ref: str | int | None = None, agent_id: str | None = None, *, closed: bool = False,
                        limit: int = 50) -> list[Incident]:
        """The open incidents (``closed``: the closed ones too), of one skill or of all, newest first."""
        skill = SkillRef(ref=str(ref), agent_id=agent_id) if ref is not None else None
        return await self.calls.read(LIST_INCIDENTS, IncidentsQuery(skill=skill, closed=closed, limit=limit),
                                list[Incident])

    async def run_history(self, ref: str | int | None = None, agent_id: str | None = None) -> RunHistory:
        """How far back :meth:`runs` can go: the worker's retention, and the oldest run it keeps (of a skill)."""
        skill = SkillRef(ref=str(ref), agent_id=agent_id) if ref is not None else None
        return await self.calls.read(RUN_HISTORY, RunsQuery(skill=skill), RunHistory)

    async def overdue(self, limit: int = 100) -> OverdueSkills:
        """The skills with a scheduled fire that has no run or recorded skip past the worker's ``overdue_after``."""
        return await self.calls.read(FIND_OVERDUE_SKILLS, OverdueQuery(limit=limit), OverdueSkills)


async def run_result(handle: WorkflowHandle[Any, RunRecord]) -> RunRecord:
    """The run a SkillRun recorded, whether it completed or failed: a run in error fails its
    workflow (SkillRunFailed) with the recorded run as the failure's details."""
    try:
        return await handle.result()
    except WorkflowFailureError as e:
        cause = e.cause
        if isinstance(cause, ApplicationError) and error_class(cause.type) is SkillRunFailed and cause.details:
            return RunRecord.model_validate(cause.details[0])
        raise SkillsError(f"SkillRun failed: {root_message(e)}") from e
