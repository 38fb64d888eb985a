"""What a skill is, as it crosses workflow and activity boundaries.

These are plain pydantic models. The SQLModel tables live only in
``adapters.store``; keeping them apart means the data converter never sees a
table model (which would lose its datetime types) and workflows never import a
database layer.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from skills.run.backoff import FailureState
from skills.run.preflight import PreflightCheck

TriggerType = Literal["cron", "event", "manual"]
Tier = Literal["direct", "agent"]
RunStatus = Literal["running", "success", "error", "skipped", "missed", "waiting", "denied", "quiet"]
"""``waiting``: for the owner's approval of a call (``skills.owner.approvals``); ``denied``: a Direct step's call
was denied (or not answered in time), so the run ended without it: not a failure for the backoff;
``quiet``: an Agent-tier run whose model answered that there is nothing to report
(``skills.run.notify.NOTHING_TO_REPORT``): no notice, and neither a success nor a failure for the failure
count, the backoff or an incident."""
RunTrigger = Literal["schedule", "manual", "event", "hook", "rehearsal"]
"""What started a run: its schedule, a person (``skills run``), an event (``skills emit``), a call of
its hook (``POST /hooks/<skill>``), or a rehearsal (``skills rehearse``, a chat's proposal): a run that
calls only read-only tools for real, records the rest, delivers nothing and counts toward nothing."""
REHEARSAL = "rehearsal"

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
ENDED = "ended"
"""The schedule reached its ``end_at`` or ran ``max_runs`` times: it fires no more (a later end or more
runs, given by an update, and a resume start it again)."""

Overlap = Literal["skip", "buffer_one", "allow"]
"""A fire that finds the previous run still going: skipped, queued (one at most), or run alongside."""
CatchUp = Literal["once", "none", "all"]
"""Fires missed while the engine was down, within the catch-up window: one run for them all, none, or each."""
OVERLAPS: tuple[str, ...] = get_args(Overlap)
CATCH_UPS: tuple[str, ...] = get_args(CatchUp)
Deliver = Literal["always", "on_change", "never"]
"""Whether a successful run's result reaches the owner (its completion notice): each time, only when it differs
from the last one delivered, or never (failures are told whatever this says: they are about the skill's health)."""
DELIVERIES: tuple[str, ...] = get_args(Deliver)
SHAPE_FIELDS = ("timeout_minutes", "end_at", "max_runs", "jitter_seconds", "spread", "overlap", "catch_up")
"""The fields that shape a skill's schedule and runs."""


class Destination(BaseModel):
    """Where a skill's result goes (``deliver_to``): a send tool of the catalog, with its fixed arguments; the
    result is its ``message``. Checked at registration as a plan step is (the tool, its schema, the
    argument rules' allowlists)."""

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    digest_minutes: float | None = None
    """Results for this destination within this many minutes go out as one message (``DeliveryDigest``)."""

    @property
    def key(self) -> str:
        """What names this destination's digest: the tool and its arguments, hashed (same place, same digest)."""
        text = json.dumps([self.tool, self.arguments, self.digest_minutes], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    @property
    def label(self) -> str:
        """The tool and what names its recipient: ``telegram_send_message chat_id=42``."""
        named = " ".join(f"{k}={v}" for k, v in sorted(self.arguments.items()) if isinstance(v, str | int))
        return f"{self.tool} {named}".strip()


DeliveryStatus = Literal["delivered", "failed", "unknown", "queued", "rehearsed"]
"""What became of one delivery: sent; refused or unreachable, every retry; not known (its call timed out,
the message may have gone); waiting in its destination's digest (``digest_minutes``), until it is sent;
or, in a rehearsal, what would have been sent (``message``), not sent."""


class Delivery(BaseModel):
    """One destination's outcome for a run's result (``RunRecord.deliveries``)."""

    destination: str
    """``Destination.label``."""
    status: DeliveryStatus
    error: str = ""
    message: str = ""
    """A rehearsal's: the message that would have gone to the destination."""


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
    """The event an event-type skill is subscribed to (``skills.when.events.EVENT_NAME``)."""

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
                # A SKILL.md's trigger may name no zone: its registration gives it the engine's.
                zone = self.timezone or "the engine's time zone"
                return f"cron '{self.schedule}' ({zone})"
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
    (see ``skills.run.notify``); True = always; False = never. Failures notify whatever this says."""
    notify_interval_minutes: int = 0
    deliver: Deliver = "always"
    """``on_change``: a result equal to the last delivered one (by its digest) is recorded, not delivered."""
    deliver_to: list[Destination] = Field(default_factory=list)
    """Where a successful run's result goes, each a durable step of its own (empty: the notifier, as ever)."""
    max_tokens_per_month: int | None = None
    """An Agent-tier skill's tokens in any 30 days: a fire that would pass it (what it used, plus the median of
    its recent runs) is skipped, and the owner told once."""
    remind_after_minutes: int = 0
    """While an incident stays open (the same failure again and again), tell it again once this many minutes
    have passed since it was last told (0: only when it opens, and when it ends; ``skills.run.incidents``)."""
    context_from: list[str] = Field(default_factory=list)
    """Skills whose last delivered result an Agent-tier run is given as context in its first turn
    (``skills.run.recall``): ``self`` (this skill) or names of the same agent's skills."""
    preflight: list[PreflightCheck] = Field(default_factory=list)
    """Checks run before the tier; one that finds nothing to do skips the run at zero cost."""
    model: str | None = None
    """The Agent tier's model for this skill; none means the engine's default."""
    approval_required_tools: list[str] = Field(default_factory=list)
    """Tools whose every call waits for the owner's approval (``skills.owner.approvals``), on either tier."""
    approval_exempt_tools: list[str] = Field(default_factory=list)
    """Tools its server marks destructive (``destructiveHint: true``) that this skill's runs call without
    asking: the owner said they run unattended. Any other destructive tool's call waits for approval."""
    approval_timeout_minutes: int | None = None
    """How long a call waits for the answer before it is denied; none means the engine's setting."""
    fallback_models: list[str] = Field(default_factory=list)
    """Tried in order when an LLM turn fails on the model before it in a way another model can fix
    (``skills.errors.FALLBACK_FAILURES``: unknown model, overloaded or rate-limited after its retries)."""
    # The shape of the schedule and of each run (docs/skills.md#schedule-shape).
    timeout_minutes: float | None = None
    """A run still going after this long ends as ``error`` (timed out); none: the engine's deadline only."""
    end_at: datetime | None = None
    """The schedule fires no later than this (time-zone aware); then the skill is ``ended``."""
    max_runs: int | None = None
    """The schedule ends after this many scheduled runs (counted from the skill's creation)."""
    jitter_seconds: int = 0
    """Each recurring fire is delayed by a random 0..N seconds (Temporal's spec jitter)."""
    spread: bool = False
    """With no ``jitter_seconds``, a cron's fires are spread by the default (``skills.when.spread``). The
    normalizer turns it on for a new skill that asks for no exact time; a skill stored before it, or built
    any other way, keeps its exact second."""
    overlap: Overlap = "skip"
    catch_up: CatchUp = "once"
    # -- business days and holidays (skills.when.calendar) --
    skip_holidays: str | None = None
    """A country code, optionally with a subdivision (``US``, ``US-CA``, ``DE-BY``): the schedule skips the
    public holidays there, in the skill's time zone's dates."""
    business_days_only: bool = False
    """The schedule skips the weekend (the ``skip_holidays`` country's, else Saturday and Sunday)."""

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
    """The execution timeout of this skill's runs (``skills.run.deadline``; filled in by the worker, which
    knows its limits): a manual run is started with it."""
    skips_until: datetime | None = None
    """When the skip list of the skill's schedule runs out (``skills.when.calendar``): Maintenance renews it before."""
    last_run_at: datetime | None = None
    last_run_status: RunStatus | None = None
    last_run_summary: str | None = None
    last_notified_at: datetime | None = None
    delivered_digest: str | None = None
    """SHA-256 (hex) of the last result delivered to the owner (``skills.run.notify.result_digest``): what
    ``deliver: on_change`` compares a new result with; the text itself is not kept twice."""
    has_hook: bool = False
    """A ``POST /hooks/<skill>`` token is set (``skills hook NAME``); only its digest is stored, never shown."""
    scheduled_runs: int = 0
    """Runs its schedule started (each fire once, skipped ones too): what ``max_runs`` counts."""
    revision: int = 0
    """Its newest revision (``skills history``); 0: none recorded yet."""
    created_at: datetime
    updated_at: datetime

    @property
    def failures(self) -> FailureState:
        return FailureState(consecutive_failures=self.consecutive_failures, last_failure_at=self.last_failure_at,
                            last_error=self.last_error)

    @property
    def is_one_shot(self) -> bool:
        return self.trigger_config is not None and self.trigger_config.kind == "at"

    def ended(self, now: datetime) -> str | None:
        """Why the schedule fires no more, if it has ended (recorded, or an ``end_at`` already past); a skill
        with no schedule has none to end."""
        if not self.is_scheduled:
            return None
        if self.max_runs is not None and self.scheduled_runs >= self.max_runs:
            return f"ran {self.scheduled_runs} of max_runs {self.max_runs}"
        if self.end_at is not None and self.end_at <= now:
            return f"end_at {self.end_at.isoformat()} has passed"
        return None

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
    idempotency_key: str = ""
    """The key the call was sent with (``skills.run.idempotency``): the same on every retry of the call, so a
    server that honours it acts once. Empty for calls recorded before keys, and for scripts."""
    rehearsed: bool = False
    """A rehearsal recorded this call and did not make it (its tool is not read-only, or needs approval)."""
    arguments: dict[str, Any] | None = None
    """A rehearsed call's arguments as they would have been sent (after the argument pipeline)."""


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
    model: str | None = None
    """The model that gave an Agent-tier run's last answer (a fallback model when the primary failed)."""
    deliveries: list[Delivery] = Field(default_factory=list)
    """Each ``deliver_to`` destination's outcome for this run's result (empty: none, or the notifier's)."""
    unchanged: bool = False
    """A success with ``deliver: on_change`` whose result was the last delivered one: not delivered again."""
