"""Event triggers: what an event is, how its name and id are checked, and the messages of an emit.

A skill with ``trigger_type: event`` and ``trigger_config: {event: NAME}`` has no schedule;
it runs when NAME is emitted (``skills emit``, ``SkillsClient.emit``, the ``emit_event``
management tool). An emit is an ``EmitEvent`` workflow whose id is derived from the event's
name and id, so the same event id emitted twice within the dedupe window starts its
subscribers once. Pure code: the models cross workflow and activity boundaries, and the
client imports them without the worker's dependencies.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from skills import linear
from skills.errors import FieldError
from skills.spec.limits import KIB, describe, json_size, not_unicode, too_deep

EVENT_NAME = linear.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,99}")
"""An event's name: letters, digits, ``.``, ``_``, ``/`` and ``-``, up to 100, starting with a letter
or digit (``email.received``, ``deploy/finished``). Names match exactly, case included."""
EVENT_ID = linear.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/+=-]{0,199}")
"""An event's id (for dedupe): the characters message ids and UUIDs use, up to 200."""
MAX_EVENT_DATA_BYTES = 64 * KIB
"""An event's data as JSON: it travels in every subscriber's SkillRun input."""

_NAME_RULE = ("letters, digits, '.', '_', '/' and '-', at most 100, starting with a letter or digit "
              "(e.g. 'email.received')")
_ID_RULE = "letters, digits and . _ : @ / + = -, at most 200, starting with a letter or digit"


def event_name_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as an event name, or None."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return "is required: the name of the event (e.g. 'email.received')"
    if not isinstance(value, str):
        return f"must be a string, got {type(value).__name__}"
    if not EVENT_NAME.fullmatch(value.strip()):
        return f"'{value}' is not a valid event name: {_NAME_RULE}"
    return None


def check_event(name: Any, event_id: Any, data: Any) -> list[FieldError]:
    """Every problem of an emit's input, each naming its field (``event``, ``id``, ``data``)."""
    problems: list[FieldError] = []
    problem = event_name_problem(name)
    if problem:
        problems.append(FieldError(field="event", message=problem))
    if event_id is not None:
        if not isinstance(event_id, str):
            problems.append(FieldError(field="id", message=f"must be a string, got {type(event_id).__name__}"))
        elif not EVENT_ID.fullmatch(event_id):
            problems.append(FieldError(field="id", message=f"'{event_id[:80]}' is not a valid event id: {_ID_RULE}"))
    deep = too_deep("data", data)
    if deep is not None:  # measured first: writing deep data as JSON would recurse
        return [*problems, deep]
    unwritable = not_unicode(data)
    if unwritable is not None:
        return [*problems, unwritable.model_copy(update={"field": ".".join(p for p in ("data", unwritable.field) if p)})]
    size = json_size(data)
    if size > MAX_EVENT_DATA_BYTES:
        problems.append(FieldError(field="data", message=f"is {size:,} bytes as JSON; the limit is "
                                                         f"{describe(MAX_EVENT_DATA_BYTES)}"))
    return problems


class EventInfo(BaseModel):
    """One event, as a subscriber's run sees it (``{{event.name}}``, ``{{event.data.…}}``)."""

    name: str
    id: str
    data: Any = None
    time: datetime
    """When it was emitted."""


def event_workflow_id(task_queue: str, name: str, event_id: str) -> str:
    """The EmitEvent workflow of one event: the same name and id are the same workflow.
    ``:`` separates the parts, and no event name contains one."""
    return f"{task_queue}-event:{name}:{event_id}"


def event_run_id(run_prefix: str, event_id: str) -> str:
    """A subscriber's SkillRun for one event (``run_prefix`` is the skill's schedule id form):
    the same event never starts the same skill twice while its run is open."""
    return f"{run_prefix}-event-{event_id}"


# --- messages -----------------------------------------------------------------------------


class EmitInput(BaseModel):
    event: EventInfo
    dedupe: bool = True
    """False when the id was generated: nobody can send it again, so nothing is remembered."""
    skill_id: int | None = None
    """A hook's call (``POST /hooks/<skill>``): this one skill runs, if it has a hook token, whatever
    event it is subscribed to; its run's trigger is ``hook``."""


class ClaimEvent(BaseModel):
    name: str
    event_id: str
    dedupe: bool
    claimer: str
    """The EmitEvent run claiming the event: a retried claim by the same run is still its own."""
    now: datetime
    skill_id: int | None = None
    """A hook's call: the one skill to run (``EmitInput.skill_id``)."""


class Subscriber(BaseModel):
    """A skill subscribed to the event: what starting its run needs, not its body."""

    skill_id: int
    name: str
    agent_id: str
    tier: str
    enabled: bool
    disabled_reason: str | None = None
    run_prefix: str
    summary: str
    run_timeout_seconds: float | None = None
    """The run's execution timeout on this worker (``skills.run.deadline``); none from an older worker."""


class StartedRun(BaseModel):
    skill_id: int
    name: str
    workflow_id: str


class SkippedSkill(BaseModel):
    skill_id: int
    name: str
    reason: str


class EmitResult(BaseModel):
    """What an emit did: the runs it started, the subscribers it skipped and why."""

    event: str
    event_id: str
    workflow_id: str = ""
    started: list[StartedRun] = Field(default_factory=list)
    skipped: list[SkippedSkill] = Field(default_factory=list)
    duplicate: bool = False
    """The event id was emitted before, within the dedupe window: nothing was started this time
    (``started`` lists what the first emit started)."""
    first_seen_at: datetime | None = None
    """When a duplicate's first emit happened."""
    dedupe_until: datetime | None = None
    """Until when emitting the same id again is a duplicate (None: a generated id, no dedupe)."""
    emitted_at: datetime | None = None
    """When the engine took the event in (the EmitEvent workflow's start)."""

    @property
    def message(self) -> str:
        """One paragraph a person or a model can read."""
        if self.duplicate:
            seen = self.first_seen_at.isoformat() if self.first_seen_at else "earlier"
            names = ", ".join(f"'{r.name}'" for r in self.started) or "nothing"
            return (f"Event '{self.event}' id {self.event_id} was already emitted at {seen}: nothing started "
                    f"again (that emit started {names}).")
        if not self.started and not self.skipped:
            return f"Event '{self.event}' (id {self.event_id}) has no subscribers: no skill runs on it."
        lines = [f"Event '{self.event}' (id {self.event_id}): started {len(self.started)} run"
                 f"{'s' * (len(self.started) != 1)}" + (":" if self.started else ".")]
        lines += [f"- '{r.name}' ({r.skill_id}): workflow {r.workflow_id}" for r in self.started]
        if self.skipped:
            lines.append(f"Skipped {len(self.skipped)}:")
            lines += [f"- '{s.name}' ({s.skill_id}): {s.reason}" for s in self.skipped]
        return "\n".join(lines)


class EventClaim(BaseModel):
    """The claim's answer: a duplicate (and what the first emit did), or the subscribers to start."""

    duplicate: EmitResult | None = None
    subscribers: list[Subscriber] = Field(default_factory=list)
    dedupe_until: datetime | None = None


class RecordEvent(BaseModel):
    claimer: str
    result: EmitResult
