"""A fire's payloads: the run's input, start and outcome, an Agent run carried over, a script step (and whether
the worker's sandbox can run one), and the deliveries, digests and notices of its result."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, model_validator

from skills.messages.agent import AgentLoopState
from skills.messages.manage import SkillRef
from skills.run.catalog import ToolsetGrant, upgraded_grant
from skills.run.incidents import IncidentNote
from skills.spec.models import Delivery, Destination, RunRecord, RunTrigger, Skill
from skills.when.events import EventInfo


class SkillRunInput(BaseModel):
    """Input of a SkillRun: the skill's id, never its body (the body may change between fires)."""

    skill_id: int
    trigger: RunTrigger = "schedule"
    event: EventInfo | None = None
    """The event that started this run (trigger "event"): ``{{event.…}}`` in a plan, the agent's input."""
    resume: AgentResume | None = None
    """Set when a long Agent-tier run continued as new: where it was."""
    rehearse: Rehearse | None = None
    """A rehearsal (trigger ``rehearsal``) of a skill as this definition makes it, not as stored: one not
    made yet (``skill_id`` 0), or a change of one (its ``target``)."""


class Rehearse(BaseModel):
    """What a rehearsal tries when it is not a stored skill: a definition, normalized as a registration
    would normalize it (``begin_run`` does, on the worker), over ``target`` for a change."""

    data: dict[str, Any]
    target: SkillRef | None = None
    closed_world: bool = False
    """Call for real only the read-only tools that also say ``openWorldHint: false`` (a chat's proposal: a
    read-only fetch of an open-world tool could carry what the model knows out before the owner's yes)."""


class BeginRun(BaseModel):
    skill_id: int
    run_id: str
    workflow_id: str
    trigger: RunTrigger
    scheduled_at: datetime | None
    started_at: datetime
    rehearse: Rehearse | None = None


class RunStart(BaseModel):
    """The skill as it is at this fire, the run row opened for it, and what the fire should do."""

    skill: Skill | None
    """Without its instructions (:meth:`Skill.without_instructions`): the Agent tier loads them by id."""
    run: RunRecord | None
    skip: str | None = None
    """Why this fire must not run the skill (disabled, backoff), decided from the stored state."""
    skip_notice: str | None = None
    """What the owner is told of the skip, once (a skill past its ``max_tokens_per_month``); None: nothing."""
    refused: str | None = None
    """Why this fire fails at once, recorded as an error (an ``UntrustedSkillError``: its executable parts,
    or a dependency's, are not trusted by the owner); nothing of the skill ran."""
    toolsets: ToolsetGrant | None = None
    """A file skill's SKILL.md ``toolsets``, granted at this fire by reference (names and a digest; the worker
    reads what to start from the file, and refuses the grant if the file changed): for this run only."""
    dependencies: list[str] = Field(default_factory=list)
    """The SKILL.md skills a file skill ``depends`` on, read at this fire (transitively, once each): an
    Agent-tier run gets their instructions after its task, and their scripts."""
    dependency_toolsets: list[ToolsetGrant] = Field(default_factory=list)
    """The ``toolsets`` of those dependencies: an Agent-tier run connects them too (a Direct plan does not:
    its steps were checked against the skill's own tools when it was registered)."""
    tool_timeout_seconds: float = 60.0
    script_timeout_seconds: float = 60.0
    """The wall timeout of one script run (a ``run_script`` step); its activity gets a margin on top."""
    notify_interval_seconds: float = 600.0
    """The global minimum between completion notifications (a skill's notify_interval_minutes: 0)."""
    notifier_tool: str = "outbox_send_message"
    """The tool notices go through: a run that called it messaged the user itself (skills.run.notify)."""
    approval_timeout_seconds: float = 24 * 3600.0
    """How long a call waits for the owner's approval (the skill's, else the engine's setting)."""
    destructive_tools: list[str] = Field(default_factory=list)
    """The skill's tools whose servers mark them destructive (``destructiveHint: true``) at this fire, less its
    ``approval_exempt_tools``: their calls wait for approval as ``approval_required_tools``' do. Empty in the
    histories of runs begun before it was decided: they replay as they ran."""
    llm_timeout_seconds: float = 600.0
    """One LLM turn's limit in all (``SKILLS_LLM_TURN_TIMEOUT``): the ``llm_turn`` activity's start-to-close."""
    run_token_cap: int = 50_000
    malformed_call_limit: int = 3
    rehearsal: bool = False
    """A rehearsal (``skills.run.rehearsal``): read-only calls only, nothing delivered, nothing counted. ``skill``
    then keeps its instructions when it is a definition's (there is no stored body to load them from)."""
    closed_world: bool = False
    """A rehearsal whose read-only calls must also be closed-world (``Rehearse.closed_world``)."""

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        return upgraded_grant(data, "run.skill_name")


class ScriptRun(BaseModel):
    """One script of one skill (a Direct plan step): the step's parameters, checked by the activity."""

    skill: str
    """The file skill (the worker's SKILL.md folders) whose declared script it is."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """``{"script": "fetch.py", "args": [...]}``."""
    step_id: str = ""


class SandboxState(BaseModel):
    """Whether the worker can run skills' scripts in its sandbox: its start line, and ``skills doctor``."""

    scripts_enabled: bool = False
    ok: bool = True
    summary: str = ""
    """How scripts run (the sandbox's user, the bwrap, a copy of it and why), or why they cannot (which folder
    stops which user, lacking which permission)."""
    fix: str = ""
    """What to do when they cannot."""


class AgentResume(BaseModel):
    """An Agent-tier run carried over a continue-as-new."""

    start: RunStart
    run: RunRecord
    loop: AgentLoopState
    chain_started_at: datetime | None = None
    """When the chain's first run started: the execution timeout counts from it, across every carry-over.
    An input carried over before this field existed has none; its run's start stands in for it."""


class RunOutcome(BaseModel):
    """A closed run and what it did to its skill."""

    run: RunRecord
    skill: Skill | None
    """The skill after the run, without its instructions."""
    disabled: str | None = None
    """The reason the skill was disabled by this run ("failures", "fired"), if it was."""
    retired_schedule: str | None = None
    """The schedule of a one-shot that has fired, to delete."""
    retry_after: datetime | None = None
    """Until when scheduled fires are skipped, after a failure."""
    budget: str | None = None
    """Why the run paused its skill for budget: the counts and the thresholds."""
    incident: IncidentNote | None = None
    """What the run did to its skill's incident (opened, repeated, recovered...). None in the histories of
    runs closed before incidents existed: those replay their notice as it was."""


class DeliverInput(BaseModel):
    """One destination of a run's result (``deliver_to``): its own activity, retried, with its own key."""

    destination: Destination
    message: str
    idempotency_key: str
    run_id: str | None = None
    """The run whose result it is: remembered with the message a chat delivered, for a reply to it."""


class DigestItem(BaseModel):
    """A result for a digest, by reference: the run, its skill, and the destination's place in its deliver_to."""

    run_id: str
    skill_id: int
    destination: int


class DigestQueue(BaseModel):
    key: str
    """``Destination.key``: which digest."""
    label: str
    minutes: float
    item: DigestItem


class DigestStart(BaseModel):
    key: str
    minutes: float
    pending: list[DigestItem] = Field(default_factory=list)
    """Results that came while the previous digest was sent (a continue-as-new)."""


class DigestSend(BaseModel):
    key: str
    items: list[DigestItem]
    error: str = ""


class DeliveriesRecord(BaseModel):
    """What became of a run's result at each destination, for its record, the skill and the metric."""

    run_id: str
    skill_id: int
    deliveries: list[Delivery]
    at: datetime
    digest: str | None = None
    """The delivered result's digest (kept on the skill when one destination at least had it)."""


class NotifyInput(BaseModel):
    skill_id: int | None
    """The skill whose last_notified_at to set; none for the engine's own alerts."""
    message: str
    at: datetime
    idempotency_key: str = ""
    """Sent with the notifier's call (``skills.run.idempotency``: the run's ``notify`` call), so a retried
    notification is delivered once by a notifier that honours it; empty for the engine's own alerts."""
    run_id: str | None = None
    """The run the notice tells of: a notifier that answers with the ids of what it sent (the telegram
    server) has them remembered, so a reply to the notice continues with that run (``skills.chat.reply``)."""
    digest: str | None = None
    """The digest of the result this notice delivers (``skills.run.notify.result_digest``), kept on the skill
    once it is sent: what ``deliver: on_change`` compares the next result with. None: no result in it."""


SkillRunInput.model_rebuild()
