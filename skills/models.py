"""What a skill is, as it crosses workflow and activity boundaries.

These are plain pydantic models. The SQLModel tables live only in
``activities.store``; keeping them apart means the data converter never sees a
table model (which would lose its datetime types) and workflows never import a
database layer.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from skills.backoff import FailureState
from skills.preflight import PreflightCheck

TriggerType = Literal["cron", "event", "manual"]
Tier = Literal["direct", "agent"]
RunStatus = Literal["running", "success", "error", "skipped", "missed", "waiting", "denied"]
"""``waiting``: for the owner's approval of a call (``skills.approvals``); ``denied``: a Direct step's call
was denied (or not answered in time), so the run ended without it: not a failure for the backoff."""
RunTrigger = Literal["schedule", "manual", "event"]
"""What started a run: its schedule, a person (``skills run``), or an event (``skills emit``)."""

DEFAULT_MAX_STEPS = 10

# Why a skill is disabled (Skill.disabled_reason). Only MISSING_TOOLS and NO_LLM come back by themselves.
BY_USER = "by user"
FAILURES = "failures"
MISSING_TOOLS = "missing tools"
FIRED = "fired"
MISSED = "missed"
BUDGET = "budget"
NO_LLM = "no LLM"
"""An Agent-tier skill registered on a worker with no LLM configured: every fire would fail."""


class PlanStep(BaseModel):
    """One fixed tool call of a Direct-tier plan (``{id, toolName, parameters}``; ``toolName`` as model-written JSON spells it)."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    id: str
    tool_name: str = Field(alias="toolName")
    parameters: dict[str, Any] = Field(default_factory=dict)
    approval: bool = Field(default=False, exclude_if=lambda approval: not approval)
    """The call waits for the owner's approval (as for a tool in ``approval_required_tools``)."""


class TriggerConfig(BaseModel):
    """When a skill fires. A cron-type skill: exactly one of ``schedule``, ``interval_minutes``, ``at``.
    An event-type skill: ``event`` alone (it has no schedule; ``skills emit`` starts its runs)."""

    model_config = ConfigDict(extra="forbid")

    schedule: str | None = None
    """Classic 5-field cron or an ``@hourly``-style macro, read in ``timezone``."""
    timezone: str | None = None
    """IANA time zone of ``schedule`` and of a naive ``at``."""
    interval_minutes: int | None = None
    """Every N minutes, counted from when the trigger was set."""
    at: datetime | None = None
    """One shot, at this moment (always time-zone aware once normalized)."""
    event: str | None = None
    """The event an event-type skill is subscribed to (``skills.events.EVENT_NAME``)."""

    @property
    def kind(self) -> Literal["cron", "interval", "at"] | None:
        if self.schedule is not None:
            return "cron"
        if self.interval_minutes is not None:
            return "interval"
        if self.at is not None:
            return "at"
        return None

    def describe(self) -> str:
        match self.kind:
            case "cron":
                return f"cron '{self.schedule}' ({self.timezone})"
            case "interval":
                return f"every {self.interval_minutes} min"
            case "at":
                return f"once at {self.at.isoformat() if self.at else '?'}"
        if self.event is not None:
            return f"on event '{self.event}'"
        return "no schedule"


class SkillSpec(BaseModel):
    """A skill as the user defines it, after normalization and validation."""

    agent_id: str
    name: str
    description: str = ""
    enabled: bool = True
    trigger_type: TriggerType
    trigger_config: TriggerConfig | None = None
    instructions: str
    required_tools: list[str] = Field(default_factory=list)
    execution_plan: list[PlanStep] | None = None
    max_steps: int = DEFAULT_MAX_STEPS
    notify_on_completion: bool | None = None
    """The completion notice: None (unset) = automatic, sent unless the run itself messaged the user
    (see ``skills.notify``); True = always; False = never. Failures notify whatever this says."""
    notify_interval_minutes: int = 0
    preflight: list[PreflightCheck] = Field(default_factory=list)
    """Checks run before the tier; one that finds nothing to do skips the run at zero cost."""
    model: str | None = None
    """The Agent tier's model for this skill; none means the engine's default."""
    approval_required_tools: list[str] = Field(default_factory=list)
    """Tools whose every call waits for the owner's approval (``skills.approvals``), on either tier."""
    approval_timeout_minutes: int | None = None
    """How long a call waits for the answer before it is denied; none means the engine's setting."""

    @property
    def tier(self) -> Tier:
        return "direct" if self.execution_plan else "agent"

    @property
    def subscribed_event(self) -> str | None:
        """The event this skill is subscribed to, if it is an event-type skill."""
        if self.trigger_type != "event" or self.trigger_config is None:
            return None
        return self.trigger_config.event

    @property
    def is_scheduled(self) -> bool:
        return self.trigger_type == "cron" and self.trigger_config is not None and self.trigger_config.kind is not None


class Skill(SkillSpec):
    """A stored skill: the spec plus identity, schedule and what its runs left behind."""

    id: int
    schedule_id: str | None = None
    disabled_reason: str | None = None
    trigger_as_written: dict[str, Any] | None = None
    """The trigger exactly as the user sent it (``in_minutes: 5`` before it became ``at``)."""
    consecutive_failures: int = 0
    last_failure_at: datetime | None = None
    last_error: str | None = None
    backoff_until: datetime | None = None
    """Scheduled fires before this are skipped (filled in by the worker, which knows the policy)."""
    run_timeout_seconds: float | None = None
    """The execution timeout of this skill's runs (``skills.deadline``; filled in by the worker, which
    knows its limits): a manual run is started with it."""
    last_run_at: datetime | None = None
    last_run_status: RunStatus | None = None
    last_run_summary: str | None = None
    last_notified_at: datetime | None = None
    created_at: datetime
    updated_at: datetime

    @property
    def failures(self) -> FailureState:
        return FailureState(consecutive_failures=self.consecutive_failures, last_failure_at=self.last_failure_at,
                            last_error=self.last_error)

    @property
    def is_one_shot(self) -> bool:
        return self.trigger_config is not None and self.trigger_config.kind == "at"

    def without_instructions(self) -> Skill:
        """This skill for a workflow payload: everything a fire decides on, without the instructions.

        Instructions may be up to a megabyte (a SKILL.md body) and Temporal caps a payload at
        2 MB, so workflows carry this and the activities that need the text load it by id."""
        return self.model_copy(update={"instructions": ""})


class Normalized(BaseModel):
    """The normalizer's answer: the spec, what it changed, and the trigger as written."""

    spec: SkillSpec
    notes: list[str] = Field(default_factory=list)
    trigger_as_written: dict[str, Any] | None = None
    missing_tools: list[str] = Field(default_factory=list)
    disabled_reason: str | None = None
    """Why the registration stores the skill disabled although it was not asked to be (no LLM)."""
    """Tools not in the catalog; only a skill registered disabled may have them."""


class ToolCallRecord(BaseModel):
    """One tool call of a run, as kept in the run's row."""

    step_id: str
    tool: str
    ok: bool
    duration_ms: int
    result: str = ""
    """The result text, cut to a few kilobytes."""
    adjusted: list[str] = Field(default_factory=list)
    """What the argument pipeline changed before the call (``"limit": "5"`` became 5, ...)."""
    refused: bool = False
    """An Agent-tier call of a tool outside the skill's required_tools: never executed."""


class RunRecord(BaseModel):
    """One fire of a skill: scheduled, manual, skipped or missed."""

    run_id: str
    skill_id: int
    skill_name: str
    workflow_id: str
    trigger: RunTrigger = "schedule"
    scheduled_at: datetime | None = None
    started_at: datetime
    finished_at: datetime | None = None
    status: RunStatus = "running"
    summary: str = ""
    tier: Tier
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
