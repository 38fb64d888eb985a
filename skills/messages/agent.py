"""The Agent loop's payloads: its state and limits, the conversation it opens, one LLM turn, one tool call
or script call of the model's."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from skills.run.catalog import ToolsetGrant
from skills.spec.models import Skill, ToolCallRecord
from skills.when.events import EventInfo


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
    """What the loop's requests left out to fit the model's context (``skills.llm.context``), once each."""
    script_skills: list[str] = Field(default_factory=list)
    """The file skills whose declared scripts ``run_script`` may run in this loop (empty: none)."""
    toolsets: list[ToolsetGrant] = Field(default_factory=list)
    """The SKILL.md ``toolsets`` granted to this loop (its skill's; a chat's matched skills'): their tools,
    in ``tools``, are called on those skills' own servers."""
    key_prefix: str = ""
    """What the idempotency keys of this loop's tool calls begin with (``skills.run.idempotency.run_prefix``,
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
    (``structured``, ``skills.llm.structured``)."""
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
    by_engine: bool = False
    """The last turn's answer, ``summary``, is the engine's own (``LlmTurnResult.by_engine``)."""


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
    history, as their calls' results): given to the first turn as data (``skills.run.recall``)."""
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
    calling tools, and the engine makes the call it means (``skills.llm.structured``)."""


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
    """What was left out of the request to fit the model's context (``skills.llm.context``), as sentences."""
    ends_turn: bool = False
    """A structured answer's change: once its calls succeed, ``final`` (the model's reply, written with the
    change) ends the loop, with no further turn to ask."""
    read_from_text: bool = False
    """The model wrote its tool calls as text (``skills.llm.textcalls``): they were read as calls."""
    by_engine: bool = False
    """``final`` is the engine's own answer, written with no model (a service no tool reaches, the list of
    skills): the chat's reply says so (``ChatReply.said_by``) and is not corrected as a model's claim."""


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
    """Sent to the server with the call (``skills.run.idempotency``), the same on every retry; empty: none."""
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
