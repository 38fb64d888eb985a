"""``skills doctor``: the Temporal schedules of the worker's task queue against the skills in its store.

The store is the source of truth and the schedules are derived from it, so anything that changed a
schedule behind the engine's back (``temporal schedule delete``, ``toggle --pause``, a schedule created
by hand, a store restored from an older backup) makes fires happen that nobody stored, or not happen
at all, silently. Each problem is reported with what to do about it:

- ``missing``: a skill's schedule is not there (it never fires);
- ``extra``: a schedule starts the engine's runs on this queue but no skill has it (its fires are
  refused, or run a skill it no longer means);
- ``paused``: paused while its skill is enabled (nobody gave the engine a reason: no fire, no notice);
- ``running``: not paused while its skill is disabled (every fire is recorded as a skip);
- ``overdue``: a scheduled fire with no run or recorded skip past ``overdue_after`` (the worker's
  reckoning, the ``skills_overdue`` gauge's);
- ``engine``: one of the engine's own rounds (maintenance, the SKILL.md sync) is missing or paused;
- ``sandbox``: scripts are on, and the worker that answered cannot run them in its sandbox (bubblewrap
  missing, namespaces refused, a folder its user cannot enter: which folder, which user, which permission).

Listing schedules is eventually consistent: every problem the list suggests is confirmed by describing
that schedule before it is reported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field
from temporalio.service import RPCError, RPCStatusCode

from skills import linear
from skills.naming import MAINTENANCE_JOB, SKILL_RUN, SYNC_JOB, engine_job_id

if TYPE_CHECKING:
    from temporalio.client import ScheduleDescription

    from client.skills_client import SkillsClient
    from skills.spec.models import Skill

ENGINE_JOBS = (MAINTENANCE_JOB, SYNC_JOB)
"""The engine's own rounds (adapters.schedules.engine_schedules), by job name."""
SKILL_RUN = SKILL_RUN

ProblemKind = Literal["missing", "extra", "paused", "running", "overdue", "engine", "sandbox"]


class Problem(BaseModel):
    kind: ProblemKind
    schedule_id: str
    skill: str | None = None
    message: str
    fix: str


class Diagnosis(BaseModel):
    task_queue: str
    skills: int
    """Skills in the store with a schedule."""
    schedules: int
    """Schedules of this task queue in Temporal (the engine's rounds included)."""
    problems: list[Problem] = Field(default_factory=list)
    sandbox: str = ""
    """How the answering worker runs scripts (or that they are off), or why it cannot."""

    @property
    def ok(self) -> bool:
        return not self.problems


async def diagnose(skills: SkillsClient) -> Diagnosis:
    """Compare; raises WorkerUnavailableError when no worker answers (the store is read through it)."""
    queue = skills.task_queue
    stored = {s.schedule_id: s for s in await skills.list() if s.schedule_id}
    overdue = await skills.overdue()
    own = linear.compile(rf"{linear.escape(queue)}-\d+-")
    listed = {entry.id: entry async for entry in await skills.client.list_schedules() if own.match(entry.id)
              or entry.id in {engine_job_id(queue, job) for job in ENGINE_JOBS}}
    sandbox = await skills.sandbox()
    diagnosis = Diagnosis(task_queue=queue, skills=len(stored), schedules=len(listed), sandbox=sandbox.summary)
    problems = diagnosis.problems
    if not sandbox.ok:
        problems.append(Problem(kind="sandbox", schedule_id="", message=f"scripts cannot run: {sandbox.summary}",
                                fix=sandbox.fix))

    for job in ENGINE_JOBS:
        schedule_id = engine_job_id(queue, job)
        description = await _describe(skills, schedule_id)
        if description is None:
            problems.append(Problem(kind="engine", schedule_id=schedule_id, message=f"the engine's {job} round has no "
                                    "schedule", fix="restart the worker: it creates its rounds' schedules at start"))
        elif description.schedule.state.paused:
            problems.append(Problem(kind="engine", schedule_id=schedule_id, message=(
                f"the engine's {job} round is paused ({description.schedule.state.note or 'no note'})"),
                fix=f"temporal schedule toggle --unpause --schedule-id {schedule_id} --reason 'skills doctor'"))

    for schedule_id, skill in sorted(stored.items(), key=lambda item: item[1].id):
        entry = listed.get(schedule_id)
        listed_paused = entry.schedule.state.paused if entry is not None and entry.schedule is not None else None
        if listed_paused is not None and listed_paused == (not skill.enabled):
            continue  # as the store says (the list's state; confirmed below only when it disagrees)
        description = await _describe(skills, schedule_id)
        if description is None:
            problems.append(Problem(kind="missing", schedule_id=schedule_id, skill=skill.name, message=(
                f"skill '{skill.name}' ({_state(skill)}) has no schedule: it never fires"), fix=(
                f"skills resume {skill.id}" if skill.enabled else
                f"skills pause {skill.id} (rebuilds it paused; the reason becomes 'by user'), or skills resume {skill.id}")))
            continue
        state = description.schedule.state
        if state.paused and skill.enabled:
            problems.append(Problem(kind="paused", schedule_id=schedule_id, skill=skill.name, message=(
                f"skill '{skill.name}' is enabled, but its schedule was paused outside the engine "
                f"(note: {state.note or 'none'}): it does not fire, and nothing says why"),
                fix=f"skills resume {skill.id} to let it fire, or skills pause {skill.id} to record the pause"))
        elif not state.paused and not skill.enabled:
            problems.append(Problem(kind="running", schedule_id=schedule_id, skill=skill.name, message=(
                f"skill '{skill.name}' is {_state(skill)}, but its schedule is not paused: every fire is a skip"),
                fix=f"skills pause {skill.id}, or skills resume {skill.id} to enable it"))

    for schedule_id in sorted(set(listed) - set(stored)):
        if any(schedule_id == engine_job_id(queue, job) for job in ENGINE_JOBS):
            continue
        description = await _describe(skills, schedule_id)
        action = description.schedule.action if description is not None else None
        if action is None or getattr(action, "task_queue", None) != queue or getattr(action, "workflow", None) != SKILL_RUN:
            continue  # gone since the list, or another engine's (a task queue that begins like this one)
        problems.append(Problem(kind="extra", schedule_id=schedule_id, message=(
            f"schedule {schedule_id} starts skill runs on task queue '{queue}', but no skill in the store has it"),
            fix=f"temporal schedule delete --schedule-id {schedule_id} (or, if its skill was lost from the store, "
                "register the skill again, then delete this one)"))

    for late in overdue.skills:
        last = f"its last recorded fire was at {late.last_fire:%Y-%m-%d %H:%M:%S} UTC" if late.last_fire else \
            "no fire recorded since its schedule was set"
        problems.append(Problem(kind="overdue", schedule_id=late.skill.schedule_id or "", skill=late.skill.name, message=(
            f"skill '{late.skill.name}' was due at {late.due_at:%Y-%m-%d %H:%M:%S} UTC and has no run or recorded skip "
            f"after {overdue.threshold_seconds:g} s; {last}"), fix=(
            f"check that a worker polls task queue '{queue}' and that Temporal is reachable; "
            f"temporal schedule describe --schedule-id {late.skill.schedule_id} shows the schedule's recent actions")))
    if overdue.count > len(overdue.skills):
        problems.append(Problem(kind="overdue", schedule_id="", message=(
            f"{overdue.count - len(overdue.skills)} more skills are overdue"), fix="see the ones above"))
    return diagnosis


async def _describe(skills: SkillsClient, schedule_id: str) -> ScheduleDescription | None:
    try:
        return await skills.client.get_schedule_handle(schedule_id).describe()
    except RPCError as e:
        if e.status == RPCStatusCode.NOT_FOUND:
            return None
        raise


def _state(skill: Skill) -> str:
    return "enabled" if skill.enabled else f"disabled: {skill.disabled_reason or 'by user'}"
