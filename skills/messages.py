"""Inputs and outputs of the workflows and activities, one model per call.

One input object per workflow or activity, so fields can be added later
without breaking callers or running histories. They live here, apart from the
code that handles them, so the client can use them without importing the
worker's dependencies.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, Field, computed_field, model_validator

from skills.account import NOTHING, Effect, correction, effects
from skills.approvals import Approval
from skills.catalog import ToolsetGrant, upgraded_grant
from skills.display import shown
from skills.errors import FieldError
from skills.events import EventInfo
from skills.incidents import IncidentNote
from skills.models import (
    BY_USER,
    Delivery,
    Destination,
    Normalized,
    RunRecord,
    RunTrigger,
    Skill,
    ToolCallRecord,
    TriggerConfig,
)
from skills.rehearsal import rehearsal_lines
from skills.reply import NoticeRef


class SkillRef(BaseModel):
    """A skill named by id, or by name (case-insensitive), optionally within one agent."""

    ref: str
    agent_id: str | None = None


class SkillFilter(BaseModel):
    agent_id: str | None = None
    enabled: bool | None = None
    trigger_type: str | None = None


class RunsQuery(BaseModel):
    skill: SkillRef | None = None
    limit: int = 20


# --- registration -------------------------------------------------------------------------


class RegisterInput(BaseModel):
    """A new skill (``target`` empty) or a partial update of ``target``."""

    data: dict[str, Any]
    target: SkillRef | None = None
    from_files: bool = False
    """Set by the SKILL.md sync alone: only it registers skills of the files agent, and only for a scheduled
    SKILL.md the worker's folders hold."""
    by: str = ""
    """Who asked, for the skill's revisions (``skills.revisions``): ``cli``, ``mcp``, ``chat:<session>``,
    ``sync``... Attribution only, never a privilege; empty: ``client``."""
    reverts: int | None = None
    """``skills revert``: the revision whose spec ``data`` is, recorded as a revert of it."""


class Prepared(BaseModel):
    """The normalizer's verdict, and which skill an update replaces."""

    normalized: Normalized | None = None
    existing_id: int | None = None
    """The skill an update replaces; the save loads it again, in its own transaction."""
    errors: list[FieldError] = Field(default_factory=list)


class SaveInput(BaseModel):
    normalized: Normalized
    existing_id: int | None = None
    by: str = ""
    reverts: int | None = None


class Saved(BaseModel):
    """What a save wrote. Payloads hold one skill body at most: the stored skill comes back without
    its instructions (the workflow has them, in the normalized input), the replaced one whole."""

    skill: Skill | None = None
    previous: Skill | None = None
    """An update's skill as it was: what ``undo_save`` puts back."""
    errors: list[FieldError] = Field(default_factory=list)


class UndoSave(BaseModel):
    """Put the store back as it was before a save whose schedule could not follow."""

    skill_id: int
    previous: Skill | None = None
    """The skill an update replaced; none for a new skill, which is removed."""


class RegistrationResult(BaseModel):
    """What the client gets back from a registration or an update."""

    ok: bool
    skill: Skill | None = None
    notes: list[str] = Field(default_factory=list)
    """What the normalizer changed, in words (aliases read, time converted, tier switched...)."""
    errors: list[FieldError] = Field(default_factory=list)
    next_fire: datetime | None = None


class RegisterManyInput(BaseModel):
    """Several new skills at once (``skills register`` of a folder or a list): each item is registered
    on its own road (normalize, store, schedule), refused on its own, and never half-stored."""

    items: list[Any]
    """Each a mapping of a skill's fields; anything else is refused as that item."""
    first_index: int = 0
    """The position of ``items[0]`` in the caller's whole list (a big list is sent in batches)."""
    by: str = ""
    """Who asked, for the skills' revisions (``RegisterInput.by``)."""


class ItemRegistration(BaseModel):
    """What came of one item of a bulk registration."""

    index: int
    """Its position in the caller's list, from 0."""
    name: str
    ok: bool
    skill_id: int | None = None
    schedule_id: str | None = None
    next_fire: datetime | None = None
    notes: list[str] = Field(default_factory=list)
    errors: list[FieldError] = Field(default_factory=list)


class BulkRegistrationResult(BaseModel):
    items: list[ItemRegistration] = Field(default_factory=list)

    @property
    def registered(self) -> list[ItemRegistration]:
        return [item for item in self.items if item.ok]

    @property
    def refused(self) -> list[ItemRegistration]:
        return [item for item in self.items if not item.ok]


class PreviousSchedule(BaseModel):
    """What a skill's schedule was built from before a change: enough to tell whether the old
    schedule must go (a new id) or be recreated (a new trigger: the memo is set only at creation)."""

    schedule_id: str | None = None
    trigger_config: TriggerConfig | None = None
    trigger_as_written: dict[str, Any] | None = None

    @classmethod
    def of(cls, skill: Skill) -> PreviousSchedule:
        return cls(schedule_id=skill.schedule_id, trigger_config=skill.trigger_config,
                   trigger_as_written=skill.trigger_as_written)


class ScheduleSync(BaseModel):
    """Make the skill's schedule match the stored skill (create, update, pause or delete).

    The skill is named by id and loaded by the activity: payloads never carry two bodies."""

    skill_id: int
    previous: PreviousSchedule | None = None


class ScheduleSynced(BaseModel):
    schedule_id: str | None = None
    next_fire: datetime | None = None


class SkipRenewal(BaseModel):
    """Renew the skip lists (``skills.calendar``) of the schedules whose lists run out soonest."""

    limit: int = 50
    """Schedules renewed at most, in one activity: a Maintenance round stays short whatever the number of skills."""


class ChangeInput(BaseModel):
    """Delete, pause or resume a skill."""

    target: SkillRef
    action: Literal["delete", "pause", "resume", "hook"]
    reason: str = BY_USER
    hook_digest: str | None = None
    """``hook``: the digest of the skill's new hook token (replacing any); None removes its hook. The
    token itself never enters a payload (``skills.hooks``)."""
    by: str = ""
    """Who asked, for the skill's revisions (``skills.revisions``): ``cli``, ``mcp``, ``chat:<session>``,
    ``sync``... Attribution only, never a privilege; empty: ``client``."""


class ChangeResult(BaseModel):
    ok: bool
    skill: Skill | None = None
    errors: list[FieldError] = Field(default_factory=list)


class HookInput(BaseModel):
    skill_id: int
    digest: str | None
    now: datetime


class EnableInput(BaseModel):
    skill_id: int
    enabled: bool
    reason: str | None = None
    now: datetime
    by: str = ""


# --- a fire -------------------------------------------------------------------------------


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
    """The tool notices go through: a run that called it messaged the user itself (skills.notify)."""
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
    """A rehearsal (``skills.rehearsal``): read-only calls only, nothing delivered, nothing counted. ``skill``
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


class AgentLoopState(BaseModel):
    """Where an Agent loop is: references and counters only (the conversation is in the store)."""

    conversation_id: str
    model: str
    tools: list[str]
    """The sandbox: the tools the model is offered and may have executed."""
    step: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    malformed_streak: int = 0
    calls: list[ToolCallRecord] = Field(default_factory=list)
    changes: list[dict[str, Any]] = Field(default_factory=list)
    """What management tools changed (a chat's skills created, updated, deleted)."""
    left_out: list[str] = Field(default_factory=list)
    """What the loop's requests left out to fit the model's context (``skills.context``), once each."""
    script_skills: list[str] = Field(default_factory=list)
    """The file skills whose declared scripts ``run_script`` may run in this loop (empty: none)."""
    toolsets: list[ToolsetGrant] = Field(default_factory=list)
    """The SKILL.md ``toolsets`` granted to this loop (its skill's; a chat's matched skills'): their tools,
    in ``tools``, are called on those skills' own servers."""
    key_prefix: str = ""
    """What the idempotency keys of this loop's tool calls begin with (``skills.idempotency.run_prefix``,
    a skill's run); empty for a chat, whose keys name its conversation and message."""
    fallback_models: list[str] = Field(default_factory=list)
    """The models still to try, in order, when a turn fails on ``model`` in a way another model can fix
    (``skills.errors.FALLBACK_FAILURES``); the loop moves to the next one and stays there."""
    answered_by: str | None = None
    """The model of the last turn that answered (recorded on the run)."""
    approval_tools: list[str] = Field(default_factory=list)
    """Tools whose every call waits for the owner's approval (the skill's ``approval_required_tools``)."""
    tool_mode: Literal["native", "structured"] = "native"
    """How a chat's model is asked for its calls: tools offered (``native``), or one JSON answer to a schema
    (``structured``, ``skills.structured``)."""
    rehearsal: bool = False
    """A rehearsal's loop: calls made only for read-only tools (none for ``approval_tools``), the rest recorded."""
    closed_world: bool = False
    """A rehearsal's loop whose read-only calls must also be closed-world (``Rehearse.closed_world``)."""


FINAL_EXCERPT = 2000
"""How much of an Agent run's final answer is its summary (the whole answer stays in the store)."""


class LoopLimits(BaseModel):
    """What bounds one Agent loop (a skill's fire or a chat turn)."""

    max_steps: int
    token_cap: int
    malformed_limit: int
    llm_timeout_seconds: float
    """One LLM turn's limit in all (``SKILLS_LLM_TURN_TIMEOUT``)."""
    tool_timeout_seconds: float
    script_timeout_seconds: float = 60.0
    """A ``run_script`` call's wall timeout (its activity gets a margin on top)."""
    answer_chars: int = FINAL_EXCERPT
    """How much of the final answer the loop returns (a run's summary; a chat's whole reply)."""


class LoopEnd(BaseModel):
    status: Literal["success", "error"]
    summary: str
    state: AgentLoopState


class AgentResume(BaseModel):
    """An Agent-tier run carried over a continue-as-new."""

    start: RunStart
    run: RunRecord
    loop: AgentLoopState
    chain_started_at: datetime | None = None
    """When the chain's first run started: the execution timeout counts from it, across every carry-over.
    An input carried over before this field existed has none; its run's start stands in for it."""


class PreflightResult(BaseModel):
    """A pre-flight check that ran and did not skip: its tool and its result (the call's, as recorded)."""

    tool: str
    result: str


class AgentStart(BaseModel):
    conversation_id: str
    skill_id: int
    now: datetime
    event: EventInfo | None = None
    """The event that started the run: it follows the task in the first user message."""
    toolset_tools: list[str] = Field(default_factory=list)
    """The tools of the skill's own toolset servers and its dependencies' (``open_toolsets``): they join
    its sandbox."""
    dependencies: list[str] = Field(default_factory=list)
    """The SKILL.md skills a file skill depends on (``begin_run``): their instructions follow the task,
    and their declared scripts join ``run_script``."""
    preflight: list[PreflightResult] = Field(default_factory=list)
    """The run's pre-flight checks that ran and did not skip, with their results (already in the run's
    history, as their calls' results): given to the first turn as data (``skills.recall``)."""
    skill: Skill | None = None
    """A rehearsal of a definition: the skill as it normalized (not stored, or stored otherwise)."""


class AgentSession(BaseModel):
    model: str
    tools: list[str]
    """What the model is offered: the skill's required_tools and its own toolsets' tools, nothing else
    (``run_script`` for a file skill that declares scripts, on a worker with scripts enabled)."""
    script_skills: list[str] = Field(default_factory=list)
    """The skill, when it is a file skill whose declared scripts ``run_script`` may run."""
    fallback_models: list[str] = Field(default_factory=list)
    """The skill's ``fallback_models``: tried in order after ``model`` (``workflows.agent_loop``)."""


class LlmTurn(BaseModel):
    conversation_id: str
    model: str
    tools: list[str]
    step: int
    answer_chars: int = FINAL_EXCERPT
    """How much of a final answer comes back in the result (all of it stays in the store)."""
    script_skills: list[str] = Field(default_factory=list)
    """Whose declared scripts the ``run_script`` tool offers (its schema lists them)."""
    toolsets: list[ToolsetGrant] = Field(default_factory=list)
    """The skills' own toolsets granted to the loop: their tools' schemas come from their servers."""
    tool_mode: Literal["native", "structured"] = "native"
    """``structured``: a chat's model answers one JSON object to a schema (``response_format``) instead of
    calling tools, and the engine makes the call it means (``skills.structured``)."""


class ToolCallRef(BaseModel):
    """A tool call the model asked for, by reference (its arguments stay in the store)."""

    id: str
    name: str


class LlmTurnResult(BaseModel):
    message_seq: int
    """Where the assistant's message was stored."""
    tool_calls: list[ToolCallRef] = Field(default_factory=list)
    final: str = ""
    """The answer (cut to a few kilobytes) when the model called no tool."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    left_out: list[str] = Field(default_factory=list)
    """What was left out of the request to fit the model's context (``skills.context``), as sentences."""
    ends_turn: bool = False
    """A structured answer's change: once its calls succeed, ``final`` (the model's reply, written with the
    change) ends the loop, with no further turn to ask."""
    read_from_text: bool = False
    """The model wrote its tool calls as text (``skills.textcalls``): they were read as calls."""


class EndpointChange(BaseModel):
    """The LLM endpoint became unreachable, or came back."""

    up: bool
    reason: str | None = None


class AgentToolCall(BaseModel):
    conversation_id: str
    message_seq: int
    call_id: str
    allowed: list[str]
    """The sandbox: a tool not in it is never executed, whatever the workflow asks."""
    toolsets: list[ToolsetGrant] = Field(default_factory=list)
    """The skills' own toolsets granted to the loop: a tool one of them owns is called on its server."""
    idempotency_key: str = ""
    """Sent to the server with the call (``skills.idempotency``), the same on every retry; empty: none."""
    rehearsal: bool = False
    """A rehearsal's call: made only when its tool is read-only (``ToolHub.rehearse``), else recorded."""
    record_only: bool = False
    """A rehearsal's call of a tool that would need approval: recorded, read-only or not."""
    closed_world: bool = False
    """A rehearsal's call made only if its tool is read-only and says ``openWorldHint: false``."""


class AgentToolResult(BaseModel):
    tool: str
    ok: bool
    refused: bool = False
    malformed: bool = False
    excerpt: str = ""
    duration_ms: int = 0
    adjusted: list[str] = Field(default_factory=list)
    change: dict[str, Any] | None = None
    """For a management tool that changed a skill: what it did (bounded: the skill's key facts)."""
    rehearsed: bool = False
    arguments: dict[str, Any] | None = None
    """A rehearsed call's arguments as they would have been sent."""


class AgentScriptCall(BaseModel):
    """A ``run_script`` call of the model's, by reference (its arguments stay in the store)."""

    conversation_id: str
    message_seq: int
    call_id: str
    skills: list[str]
    """The skills whose declared scripts this conversation may run: its sandbox."""


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


class HistoryQuery(BaseModel):
    """``skills history REF``: a skill's revisions, newest first (``rev``: that one alone). A deleted
    skill's are found by its name or id too."""

    skill: SkillRef
    rev: int | None = Field(default=None, ge=1)
    limit: int = Field(default=50, ge=1, le=1000)


class IncidentsQuery(BaseModel):
    """``skills incidents [REF] [--all]``: the open incidents (with ``closed``, the closed ones too), newest first."""

    skill: SkillRef | None = None
    closed: bool = False
    limit: int = Field(default=50, ge=1, le=1000)


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
    """Sent with the notifier's call (``skills.idempotency``: the run's ``notify`` call), so a retried
    notification is delivered once by a notifier that honours it; empty for the engine's own alerts."""
    run_id: str | None = None
    """The run the notice tells of: a notifier that answers with the ids of what it sent (the telegram
    server) has them remembered, so a reply to the notice continues with that run (``skills.reply``)."""
    digest: str | None = None
    """The digest of the result this notice delivers (``skills.notify.result_digest``), kept on the skill
    once it is sent: what ``deliver: on_change`` compares the next result with. None: no result in it."""


# --- chat -------------------------------------------------------------------------------


class ChatInput(BaseModel):
    session_id: str
    """Messages of one session share a conversation (kept in the store)."""
    message: str
    reply_to: str | None = None
    """The run whose result the message replies to (its id, or its first 8+ characters): the turn opens
    with that result and its skill, read from the store by the prepare activity (``skills.reply``)."""
    reply_to_notice: NoticeRef | None = None
    """The delivered notice the message replies to (a Telegram reply): its run, if the store knows it,
    is the context, as with ``reply_to``; a message that was no notice adds nothing."""
    agent_id: str | None = None
    """With a reply: only a run of this agent's skills may be its context."""


class ChatReply(BaseModel):
    session_id: str
    ok: bool
    reply: str
    """The model's answer (or why the turn stopped)."""
    changes: list[dict[str, Any]] = Field(default_factory=list)
    """Skills the turn created, updated or deleted: action, id, name, tier, trigger, next_fire."""
    matched: list[str] = Field(default_factory=list)
    """SKILL.md skills the message triggered."""
    unavailable: list[str] = Field(default_factory=list)
    """Matched skills' own toolset servers that could not start, with the reason: the turn went on without them."""
    proposals: list[Approval] = Field(default_factory=list)
    """Changes the turn proposed and did not make: each waits for the owner's yes (``skills.approvals``)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    left_out: list[str] = Field(default_factory=list)
    """What was left out of the model's requests to fit its context (earlier messages, lower-ranked skills)."""
    rehearsals: dict[int, RunRecord] = Field(default_factory=dict)
    """The rehearsal of each proposed skill that ended in time, by proposal: what it would do (``skills.rehearsal``)."""
    rehearsing: dict[int, str] = Field(default_factory=dict)
    """Rehearsals still running (their workflow ids, by proposal), or why one could not run."""
    called: list[str] = Field(default_factory=list)
    """Tools outside the chat's own (a matched skill's toolset, a script) that answered a call this turn."""
    asked_again: str | None = None
    """Why the model was asked a second time in this turn, structured (``SKILLS_LLM_TOOLS=auto``): its first
    answer made no call where one was needed."""
    said_by: Literal["model", "engine"] = "model"
    """Who wrote ``reply``: the model, or the engine (an answer to proposals, or why the turn stopped)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def effects(self) -> list[Effect]:
        """What the turn did, as the engine recorded it (``skills.account``): each skill created, updated or
        deleted, then each proposal; empty when it did nothing, whatever the reply says."""
        return effects(self.changes, self.proposals, self.called)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def correction(self) -> str | None:
        """The engine's correction of a model's reply that claims an act the turn did not do."""
        return correction(self.reply, self.effects) if self.said_by == "model" and self.ok else None

    def account_lines(self) -> list[str]:
        """The engine's account, under the model's words: the correction of a false claim, then what the turn
        did (``change_lines``), or that it did nothing."""
        again = [f"asked again: {self.asked_again}"] if self.asked_again else []
        if self.correction is not None:
            return [self.correction, *again]
        done = [*self.change_lines(), *(f"called: {tool}" for tool in self.called)]
        return [*(done or [NOTHING]), *again]

    def change_lines(self) -> list[str]:
        """One line per skill the turn changed, with its next fire, then each change it proposed, with
        what would be stored and how to confirm it: the facts under the model's words."""
        lines = []
        for change in self.changes:
            when = f", next fire {_local(change['next_fire'], change.get('trigger'))}" if change.get("next_fire") else ""
            if any("skipped" in line for line in change.get("coming") or []):
                # Days skipped (business days, holidays) are what the user most needs to see are right.
                when = f", next fires {'; '.join(change['coming'])}"
            tier = f" ({change['tier']} tier{when})" if change.get("tier") else when
            lines.append(f"{change['action']}: skill {change.get('id')} '{change.get('name')}'{tier}")
        for proposal in self.proposals:
            lines.append(f"proposed #{proposal.id}, NOT made: reply yes to make it or no to cancel "
                         f"(or `skills approve {proposal.id}`), before {_local(proposal.expires_at.isoformat(), None)}")
            lines += [f"  {line}" for line in proposal.summary.splitlines()]
            if proposal.id in self.rehearsals:
                lines += [f"  {line}" for line in rehearsal_lines(self.rehearsals[proposal.id])]
            elif proposal.id in self.rehearsing:
                lines.append(f"  rehearsal: {shown(self.rehearsing[proposal.id])}")
        return lines


def zone_time(moment: datetime, zone: str | None) -> str:
    """A time as a clock in ``zone`` (an IANA name) shows it: ``2026-11-22 09:05 Europe/Paris``.

    With no zone, as this machine's clock shows it, named by its abbreviation
    (``2026-11-22 09:05 CET``). A zone this machine does not know raises
    ZoneInfoNotFoundError (ValueError for a malformed name): each caller has its own way out."""
    local = moment.astimezone(ZoneInfo(zone)) if zone else moment.astimezone()
    return f"{local:%Y-%m-%d %H:%M} {zone or local.tzname() or local.strftime('UTC%z')}"


def _local(iso: str, trigger: dict[str, Any] | None) -> str:
    """An ISO time as the skill's zone (UTC if it has none) shows it; the ISO text if it cannot."""
    try:
        return zone_time(datetime.fromisoformat(iso), (trigger or {}).get("timezone") or "UTC")
    except (ValueError, TypeError, ZoneInfoNotFoundError, OSError):
        return iso


class ChatPrepare(BaseModel):
    conversation_id: str
    message: str
    now: datetime
    reply_to: str | None = None
    """The run the message replies to (``ChatInput.reply_to``): its id only, read here from the store."""
    reply_to_notice: NoticeRef | None = None
    agent_id: str | None = None


class ChatSession(BaseModel):
    model: str
    tools: list[str]
    matched: list[str] = Field(default_factory=list)
    """The SKILL.md skills the message triggered (their instructions are in the prompt)."""
    max_steps: int
    token_cap: int
    malformed_limit: int
    llm_timeout_seconds: float
    tool_timeout_seconds: float
    script_skills: list[str] = Field(default_factory=list)
    """The matched SKILL.md skills whose declared scripts ``run_script`` may run (scripts enabled)."""
    script_timeout_seconds: float = 60.0
    toolsets: list[ToolsetGrant] = Field(default_factory=list)
    """The own toolsets of the skills whose instructions are in the prompt: the turn connects them and
    their tools join its sandbox (``open_toolsets``)."""
    untrusted: list[str] = Field(default_factory=list)
    """Why skills in the prompt came without their toolsets and scripts (their owner has not trusted them,
    or they changed since): the turn goes on without them, and says so."""
    answer: bool | None = None
    """The message is the user's plain yes (True) or no (False) to ``answering``: no LLM is asked."""
    answering: list[int] = Field(default_factory=list)
    """The session's pending proposed changes the message answers."""
    rehearsal_wait_seconds: float = 0.0
    """How long the turn waits for the rehearsal of each skill it proposes (0: none is rehearsed)."""
    tool_mode: Literal["auto", "native", "structured"] = "native"
    """``SKILLS_LLM_TOOLS``: how the model makes its calls (``skills.structured``)."""


class ChatProposals(BaseModel):
    """The proposals a turn recorded (approval ids), to read back for its reply."""

    ids: list[int]


class ChatAnswer(BaseModel):
    """The turn's reply, written by the engine (an answer to proposals), appended to the conversation."""

    conversation_id: str
    text: str
    now: datetime
    role: Literal["assistant", "user"] = "assistant"
    """``user``: the engine's note to the model before it asks again (``SKILLS_LLM_TOOLS=auto``), in the
    user's turn so every chat template takes it."""


class ReminderRequest(BaseModel):
    """A chat message that may be a plain reminder, the conversation it belongs to, and the turn's now."""

    conversation_id: str
    message: str
    now: datetime


class ReminderProposed(BaseModel):
    """The reminder recorded as a proposal, and the reply that says so (None: the message is the model's)."""

    proposal: Approval | None = None
    reply: str = ""


# --- maintenance --------------------------------------------------------------------------


class SkillBrief(BaseModel):
    """A skill named in a payload that may list many: its id, for the activities, and its name, for people."""

    id: int
    name: str
    schedule_id: str | None = None


class MaintenanceScan(BaseModel):
    ready: list[SkillBrief] = Field(default_factory=list)
    """Disabled for missing tools, and every tool is available now."""
    missed: list[SkillBrief] = Field(default_factory=list)
    """Enabled one-shots that never fired and are now beyond the catch-up window."""


class MissedOneShot(BaseModel):
    skill_id: int
    workflow_id: str


class ClosedRuns(BaseModel):
    """Runs the Maintenance round closed as ``error``: left ``running`` past their deadline."""

    outcomes: list[RunOutcome] = Field(default_factory=list)


class StuckSkill(BaseModel):
    """A skill whose scheduled fires are being skipped because a run of it is still going."""

    skill: SkillBrief
    run_id: str
    skipped: int
    """Fires skipped behind that run so far."""
    message: str


class OverdueSkill(BaseModel):
    """A skill whose schedule should have fired by ``due_at`` and has no run or recorded skip of that fire."""

    skill: SkillBrief
    due_at: datetime
    last_fire: datetime | None = None
    """The scheduled time of its newest recorded fire (None: none since its schedule was last set)."""


class OverdueQuery(BaseModel):
    """Which overdue skills to name: the ``limit`` longest overdue (the count is of all)."""

    limit: int = Field(default=100, ge=0, le=1000)


class OverdueSkills(BaseModel):
    """The skills overdue now (``skills_overdue``; ``skills doctor``): how many, and the first of them."""

    count: int = 0
    skills: list[OverdueSkill] = Field(default_factory=list)
    """At most the query's ``limit``, the longest overdue first."""
    threshold_seconds: float = 0


class PrunedRuns(BaseModel):
    """Run records the maintenance round deleted: past the retention window, and past the cap per skill."""

    by_age: int = 0
    by_count: int = 0
    revisions: int = 0
    """Revisions of skills deleted before the retention window, forgotten."""


class RunHistory(BaseModel):
    """How far back the run history goes (``skills runs``): what the retention keeps, and the oldest kept."""

    retention_days: int
    max_runs_per_skill: int
    oldest: datetime | None = None


class MaintenanceReport(BaseModel):
    enabled: list[str] = Field(default_factory=list)
    missed: list[str] = Field(default_factory=list)
    closed: list[str] = Field(default_factory=list)
    """Runs closed as ``error`` for want of an end (run ids)."""
    stuck: list[str] = Field(default_factory=list)
    """Skills newly found with their fires skipped behind a run still going."""
    endpoint: str | None = None
    """"down" or "up" when the LLM endpoint changed."""
    ended: list[str] = Field(default_factory=list)
    """Skills recorded ``ended``: their ``end_at`` passed."""
    skips_renewed: list[str] = Field(default_factory=list)
    """Skills whose schedule's skip list (business days, holidays) was renewed before it ran out."""
    pruned: PrunedRuns | None = None
    overdue: int = 0
    """Skills overdue (a scheduled fire with no run or recorded skip past ``overdue_after``)."""


SkillRunInput.model_rebuild()
