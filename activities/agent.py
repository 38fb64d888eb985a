"""The Agent tier's activities: one LLM turn, one tool call the model asked for.

The conversation lives in the store (by run id); these activities read and append
to it, and give the workflow back only what it needs to decide (tool names and call
ids, token counts, a bounded excerpt). Each step so adds a bounded amount to the
workflow's history, however long the conversation gets.

Temporal owns retries: the OpenAI client is built with ``max_retries=0``. A rate
limit or a server error is retryable (after the ``retry-after`` the endpoint gives);
a bad key, a bad request or an unknown model is not, and says what to fix.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, Field
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.failures import application_error
from activities.heartbeat import heartbeating
from activities.proposals import CURRENT_CALL, ChatCall
from activities.skillfiles import script_skills, script_tool
from adapters.mcp.toolsets import SkillToolsets
from adapters.skill_folders import file_skill
from adapters.store import Store
from config.secrets import redact
from config.settings import LLM_SETTINGS, OPENAI_API_URL, Settings
from skills.agent import ChatMessage, ToolCallMessage, for_the_model, opening_messages, tool_result_text
from skills.catalog import ToolInfo, ToolResult, ToolsetGrant, granted
from skills.context import DEFAULT_CONTEXT, OPENAI_CONTEXT, context_from_model_entry, fit_request
from skills.errors import (
    ConversationError,
    LlmModelNotFoundError,
    LlmNotConfiguredError,
    LlmOverloadedError,
    LlmRefusedError,
    LlmTimeoutError,
    LlmUnavailableError,
    ToolCallError,
    ToolsetRefusedError,
)
from skills.events import EventInfo
from skills.limits import MAX_CONTEXT_FROM
from skills.messages import FINAL_EXCERPT
from skills.models import Skill
from skills.naming import AGENT_TOOL, LLM_TURN, MANAGEMENT_TOOLS, is_chat_conversation
from skills.recall import context_block
from skills.rehearsal import rehearsed
from skills.scripts import RUN_SCRIPT
from skills.skillmd.disclosure import render_instructions
from skills.structured import ACTIONS, answer_schema, instruction, structured_calls
from skills.textcalls import TextCall, read_text_calls

TOOL_EXCERPT = 300
MAX_PREFLIGHT_CONTEXT = 5
"""Pre-flight results given to a run's first turn (a skill declares a few checks at most)."""
HEALTH_TIMEOUT = 3.0
ENDPOINT_STATE = "llm_endpoint"
RETRYABLE_STATUSES = frozenset({408, 409, 429})


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


if TYPE_CHECKING:
    import openai

class Send(Protocol):
    """Call a tool by name (the worker's hub, or a management tool), with the call's idempotency key."""

    def __call__(self, name: str, arguments: dict[str, Any], *, idempotency_key: str = "") -> Awaitable[ToolResult]: ...


class Rehearse(Protocol):
    """A rehearsal's call (``ToolHub.rehearse``): made only for a read-only tool, else recorded."""

    def __call__(self, name: str, arguments: dict[str, Any], *, idempotency_key: str = "",
                 record_only: bool = False, closed_world: bool = False) -> Awaitable[ToolResult]: ...


class AgentActivities:
    def __init__(self, store: Store, settings: Settings, catalog: Callable[[], list[ToolInfo]], send: Send,
                 client: openai.AsyncOpenAI | None = None,
                 settle: Callable[[float], Awaitable[bool]] | None = None,
                 toolsets: SkillToolsets | None = None, rehearse: Rehearse | None = None) -> None:
        """``settle(seconds)`` waits for MCP servers still on their first connect (the hub's): a turn
        whose sandbox names a tool the catalog lacks waits for them, so the model is offered it.
        ``toolsets`` holds the sessions of skills' own servers (the tool activities' too). ``rehearse``
        makes a rehearsal's calls (none without it: every call of a rehearsal is then recorded)."""
        self.store = store
        self.settings = settings
        self.catalog = catalog
        self.send = send
        self.rehearse = rehearse
        self.settle = settle
        self.toolsets = toolsets or SkillToolsets()
        self.endpoint = settings.llm_base_url or OPENAI_API_URL
        self._client = client
        self._contexts: dict[str, int] = {}
        self._unstreamed = False
        """The endpoint refused ``stream: true``: its answers are asked for whole."""

    @property
    def client(self) -> openai.AsyncOpenAI:
        """The LLM endpoint's client, made at the first LLM call: the openai package (14 MB resident)
        is not imported by a worker that runs no Agent-tier skill."""
        if self._client is None:
            import openai

            # Temporal retries the activity; retries inside the SDK as well would multiply them.
            self._client = openai.AsyncOpenAI(
                base_url=self.settings.llm_base_url, api_key=self.settings.llm_api_key or "none", max_retries=0,
                timeout=self.settings.llm_timeout.total_seconds(),
            )
        return self._client

    @client.setter
    def client(self, client: openai.AsyncOpenAI) -> None:
        self._client = client

    @activity.defn
    def start_agent(self, request: AgentStart) -> AgentSession:
        """Open the run's conversation: the system prompt and the task (idempotent)."""
        skill = request.skill or self.store.skills.get_skill(request.skill_id)
        # The normalizer refuses management tools; a row stored before it did (or written around it)
        # still never offers them to a skill's run.
        tools = [t for t in dict.fromkeys([*skill.required_tools, *request.toolset_tools]) if t not in MANAGEMENT_TOOLS]
        scripts = script_skills(self.settings, [skill.name, *request.dependencies]) \
            if skill.agent_id == self.settings.file_skills_agent else []
        if scripts and RUN_SCRIPT not in tools:
            tools.append(RUN_SCRIPT)
        if self.store.conversations.get_message(request.conversation_id, 1) is None:
            brought = [render_instructions(found) for name in request.dependencies
                       if (found := file_skill(self.settings, name)) is not None]
            self.store.conversations.append_messages(
                request.conversation_id, opening_messages(skill, request.now, tools, request.event, brought,
                                                          self._given(skill, request)),
                request.now)
        model = skill.model or self.settings.llm_model
        return AgentSession(model=model, tools=tools, script_skills=scripts,
                            fallback_models=[m for m in skill.fallback_models if m != model])

    def _given(self, skill: Skill, request: AgentStart) -> str:
        """What the run is given as data (``skills.recall``): the last delivered result of each skill its
        ``context_from`` names, read from the store now (never from a payload), and its pre-flight results;
        each redacted and bounded."""
        remembered = [item.model_copy(update={"text": redact(item.text)}) if item.text is not None else item
                      for item in self.store.runs.remembered(skill, skill.context_from[:MAX_CONTEXT_FROM])]
        checks = [(check.tool, redact(check.result)) for check in request.preflight[:MAX_PREFLIGHT_CONTEXT]]
        return context_block(remembered, checks)

    @activity.defn(name=LLM_TURN)
    async def llm_turn(self, request: LlmTurn) -> LlmTurnResult:
        """One chat completion over the stored conversation, offering only the sandbox's tools."""
        import openai

        messages = await asyncio.to_thread(self.store.conversations.load_messages, request.conversation_id)
        if messages and messages[-1].role == "assistant":
            # A retry after the answer was stored: do not ask (and pay) twice.
            return _result(messages[-1], len(messages), request.answer_chars,
                           structured=request.tool_mode == "structured")
        if not self.settings.llm_configured:
            # Without an endpoint or a key the SDK would try the OpenAI API keyless, and every retry
            # would say "Connection error." a minute later: say what to set, now.
            raise application_error(LlmNotConfiguredError(f"no LLM is configured: {LLM_SETTINGS}"))
        catalog = await self._catalog(request)
        if self.settle is not None and not set(request.tools) <= {tool.name for tool in catalog}:
            async with heartbeating(f"turn {request.step}", "waiting for MCP servers"):
                await self.settle(self.settings.tool_call_timeout.total_seconds())
            catalog = await self._catalog(request)
        offered = request.tools if is_chat_conversation(request.conversation_id) else \
            [t for t in request.tools if t not in MANAGEMENT_TOOLS]
        structured = request.tool_mode == "structured" and is_chat_conversation(request.conversation_id)
        tools = [] if structured else _tool_schemas(catalog, offered)
        asked = for_the_model(messages, self.settings.chat_history_turns)
        if structured:  # the answer's shape, said in the prompt: no tool schemas are sent
            asked = _with_instruction(asked, instruction(offered, _plan_tools(catalog)))
        context = await self._context(request.model)
        fitted = fit_request(asked, tools, context)
        if fitted.left_out:
            activity.logger.warning("LLM turn %d: left out to fit the context of %d tokens: %s", request.step,
                                    context, "; ".join(fitted.left_out))
        turn_limit = self.settings.llm_turn_timeout
        try:
            async with asyncio.timeout(turn_limit.total_seconds()):
                message = await self._complete(request, fitted.messages, tools,
                                               answer_schema(offered) if structured else None)
        except TimeoutError as e:
            raise application_error(LlmTimeoutError(
                f"the LLM turn for the model '{request.model}' took longer than {_seconds(turn_limit)} "
                "(SKILLS_LLM_TURN_TIMEOUT), its answer still coming")) from e
        except openai.APIStatusError as e:
            raise _status_error(e, request.model, self.endpoint) from e
        except openai.APITimeoutError as e:  # before its base class: reached, and working, but slow
            raise application_error(LlmTimeoutError(
                f"the LLM endpoint {self.endpoint} timed out after {_seconds(self.settings.llm_timeout)} "
                f"without a word for the model '{request.model}' (SKILLS_LLM_TIMEOUT: how long it may stay "
                "silent, before its first token or between two); a slow model (a local one on CPU) may need "
                "a longer one, or a shorter prompt")) from e
        except openai.APIConnectionError as e:
            # Not chained: the message says the cause, and the chain's stack traces (openai, httpx, httpcore,
            # anyio) outgrew the server's failure size limit: a retry's progress line read "after Failure
            # exceeds size limit".
            raise application_error(LlmUnavailableError(
                f"the LLM endpoint {self.endpoint} could not be reached ({_sentence(_connection(e))}); is it running? "
                "(SKILLS_LLM_BASE_URL)")) from None
        activity.logger.info("LLM turn %d (%s): %d prompt tokens estimated, %d counted by the endpoint",
                             request.step, request.model, fitted.tokens, message.prompt_tokens)
        message, read_from_text = _calls_read(message, offered, structured)
        if read_from_text:
            activity.logger.info("LLM turn %d (%s): tool calls written as text, read as calls: %s", request.step,
                                 request.model, ", ".join(c.name for c in message.tool_calls))
        seq = await asyncio.to_thread(self.store.conversations.append_messages, request.conversation_id, [message],
                                      datetime.now(UTC))
        return _result(message, seq, request.answer_chars, fitted.left_out, structured=structured,
                       read_from_text=read_from_text)

    async def _complete(self, request: LlmTurn, messages: list[ChatMessage], tools: list[dict[str, Any]],
                        response_format: dict[str, Any] | None = None) -> ChatMessage:
        """One chat completion, streamed where the endpoint can (``SKILLS_LLM_STREAM``): the HTTP client's
        timeout is then how long the endpoint may stay silent, and the activity heartbeats with what
        has come, so a slow model that is answering is not taken for a dead one."""
        import openai

        arguments: dict[str, Any] = {"model": request.model, "messages": [m.to_openai() for m in messages],
                                     **({"tools": tools} if tools else {}),
                                     **({"response_format": response_format} if response_format else {})}
        if self.settings.llm_stream and not self._unstreamed:
            try:
                return await self._streamed(request, arguments)
            except openai.BadRequestError as e:
                if "stream" not in str(e).lower():
                    raise
                # An endpoint that cannot stream says so in a 400: ask it whole, now and from now on.
                activity.logger.warning("the LLM endpoint %s refused to stream (%s): asking for whole answers; "
                                        "SKILLS_LLM_STREAM=false says so from the start", self.endpoint,
                                        _sentence(_error_detail(e)))
                self._unstreamed = True
        async with heartbeating(f"turn {request.step}", "waiting for the answer"):
            completion = await self.client.chat.completions.create(**arguments)
        choice = completion.choices[0].message
        usage = completion.usage
        return ChatMessage(
            role="assistant", content=choice.content,
            tool_calls=[ToolCallMessage(id=c.id, name=c.function.name, arguments=c.function.arguments or "")
                        for c in choice.tool_calls or [] if getattr(c, "function", None) is not None],
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
        )

    async def _streamed(self, request: LlmTurn, arguments: dict[str, Any]) -> ChatMessage:
        """The answer streamed: the HTTP client's timeout is between two chunks, the heartbeat says how much came."""
        answer = StreamedAnswer()
        async with heartbeating(f"turn {request.step}", answer.progress):
            stream = await self.client.chat.completions.create(
                **arguments, stream=True, stream_options={"include_usage": True})
            async for chunk in stream:
                answer.add(chunk)
        return answer.message()

    async def _context(self, model: str) -> int:
        """The model's context in tokens: ``SKILLS_LLM_CONTEXT``, else what the endpoint's model list says
        of it (asked once per model), else ``skills.context.DEFAULT_CONTEXT``."""
        if self.settings.llm_context is not None:
            return self.settings.llm_context
        if model not in self._contexts:
            found = None
            try:
                listed = await self.client.models.list(timeout=HEALTH_TIMEOUT)
                entry = next((m for m in listed.data if m.id == model), None)
                found = context_from_model_entry(entry.model_dump()) if entry is not None else None
            except Exception as e:  # noqa: BLE001 - any failure to say leaves the default
                activity.logger.info("the LLM endpoint's model list does not say the context of %s: %s", model, e)
            # The OpenAI API states no context in its model list; its models hold 128k and more.
            self._contexts[model] = found or (OPENAI_CONTEXT if self.endpoint == OPENAI_API_URL else DEFAULT_CONTEXT)
        return self._contexts[model]

    async def _catalog(self, request: LlmTurn) -> list[ToolInfo]:
        """The tools the turn can describe: the catalog, ``run_script`` with the sandbox's scripts, and
        the granted toolsets' tools (from their servers, connected again if they were idle-closed)."""
        catalog = self.catalog()
        if RUN_SCRIPT in request.tools:
            tool = await asyncio.to_thread(script_tool, self.settings, request.script_skills)
            catalog = [t for t in catalog if t.name != RUN_SCRIPT] + ([tool] if tool else [])
        if request.toolsets:
            try:
                own = [tool for grant in request.toolsets for tool in await self.toolsets.tools(grant)]
            except ToolCallError as e:
                raise application_error(e) from e
            names = {tool.name for tool in own}
            catalog = [t for t in catalog if t.name not in names] + own  # a skill's own server comes first
        return catalog

    @activity.defn
    async def check_llm_endpoint(self) -> EndpointChange | None:
        """Ask the endpoint for its models (short timeout); report a change from the stored state.

        The state is kept in the store, so a restart neither repeats an alert nor forgets one.
        """
        import openai

        if not self.settings.llm_configured:
            return None  # no endpoint configured: nothing to watch
        up, reason = True, None
        try:
            await self.client.models.list(timeout=HEALTH_TIMEOUT)
        except (openai.APIConnectionError, openai.APITimeoutError) as e:
            up, reason = False, f"unreachable: {e}"
        except openai.APIStatusError as e:
            # An answer, even a refusal (a key without the right to list models), means it is there;
            # a server error means it is not serving.
            up, reason = (False, f"answering {e.status_code}") if e.status_code >= 500 else (True, None)
        now = datetime.now(UTC)
        previous = await asyncio.to_thread(self.store.conversations.get_state, ENDPOINT_STATE)
        if previous is not None and previous.get("up") == up:
            return None
        await asyncio.to_thread(self.store.conversations.set_state, ENDPOINT_STATE,
                                {"up": up, "reason": reason, "since": now.isoformat()}, now)
        # The first check only records a healthy endpoint; an unhealthy one is worth saying at once.
        return None if previous is None and up else EndpointChange(up=up, reason=reason)

    @activity.defn(name=AGENT_TOOL)
    async def agent_tool(self, request: AgentToolCall) -> AgentToolResult:
        """Run one tool call of the model's (from the stored message) and store its result."""
        message = await asyncio.to_thread(self.store.conversations.get_message, request.conversation_id, request.message_seq)
        call = next((c for c in (message.tool_calls if message else []) if c.id == request.call_id), None)
        if call is None:
            raise application_error(ConversationError(
                f"no tool call {request.call_id} in message {request.message_seq}"))
        if await asyncio.to_thread(self.store.conversations.has_tool_result, request.conversation_id, call.id):
            return AgentToolResult(tool=call.name, ok=True, excerpt="(already answered)")
        started = time.monotonic()
        # Which conversation's call this is: a chat's management tool records its proposal under it.
        CURRENT_CALL.set(ChatCall(request.conversation_id, request.message_seq, call.id))
        result = await self._run(request, call)
        result.duration_ms = round((time.monotonic() - started) * 1000)
        return result

    async def _run(self, request: AgentToolCall, call: ToolCallMessage) -> AgentToolResult:
        conversation_id, allowed, key = request.conversation_id, request.allowed, request.idempotency_key
        if call.name not in allowed or (call.name in MANAGEMENT_TOOLS and not is_chat_conversation(conversation_id)):
            text = (f"Error: the tool '{call.name}' is not available to this skill. "
                    f"Use only: {', '.join(allowed) or 'no tools'}.")
            await self._answer(conversation_id, call, text)
            return AgentToolResult(tool=call.name, ok=False, refused=True, excerpt=text[:TOOL_EXCERPT])
        try:
            arguments = json.loads(call.arguments or "{}")
            if not isinstance(arguments, dict):
                raise ValueError("the arguments must be a JSON object")
        except (ValueError, RecursionError) as e:  # RecursionError: nested past what the parser takes
            text = f"Error: the arguments were not valid JSON ({e}); call the tool again with a JSON object."
            await self._answer(conversation_id, call, text)
            return AgentToolResult(tool=call.name, ok=False, malformed=True, excerpt=text[:TOOL_EXCERPT])
        change = None
        try:
            grant = granted(request.toolsets, call.name)
            if request.rehearsal:  # a skill's own toolset tool, a script, or no way to tell read-only ones: recorded
                result = (rehearsed(arguments) if grant is not None or self.rehearse is None or call.name == RUN_SCRIPT
                          else await self.rehearse(call.name, arguments, idempotency_key=key,
                                                   record_only=request.record_only, closed_world=request.closed_world))
            else:
                result = await (self.send(call.name, arguments, idempotency_key=key) if grant is None
                                else self.toolsets.call(grant, call.name, arguments, idempotency_key=key))
            ok, text, adjusted, change = result.ok, result.text, result.adjusted, result.change
        except ToolsetRefusedError as e:  # the grant is not the skill's file's: the run fails, saying why
            raise application_error(e) from e
        except ToolCallError as e:
            # The model can often fix its own call (a missing or mistyped argument): tell it.
            ok, text, adjusted = False, f"Error: {e}", []
        await self._answer(conversation_id, call, text if ok or text.startswith("Error") else f"Error: {text}")
        done = ok and request.rehearsal and result.rehearsed
        return AgentToolResult(tool=call.name, ok=ok, excerpt=text[:TOOL_EXCERPT], adjusted=adjusted, change=change,
                               rehearsed=done, arguments=result.arguments if done else None)

    async def _answer(self, conversation_id: str, call: ToolCallMessage, text: str) -> None:
        message = ChatMessage(role="tool", tool_call_id=call.id, content=tool_result_text(redact(text)))
        await asyncio.to_thread(self.store.conversations.append_messages, conversation_id, [message], datetime.now(UTC))


def _result(message: ChatMessage, seq: int, answer_chars: int, left_out: list[str] | None = None, *,
            structured: bool = False, read_from_text: bool = False) -> LlmTurnResult:
    # A structured answer's change comes with its reply: the loop ends on it once the change is made.
    ends = structured and bool(message.tool_calls) and all(c.name in CHANGE_ACTIONS for c in message.tool_calls)
    return LlmTurnResult(
        message_seq=seq,
        tool_calls=[ToolCallRef(id=c.id, name=c.name) for c in message.tool_calls],
        final=(message.content or "")[:answer_chars] if ends or not message.tool_calls else "",
        prompt_tokens=message.prompt_tokens,
        completion_tokens=message.completion_tokens,
        left_out=left_out or [],
        ends_turn=ends,
        read_from_text=read_from_text,
    )


CHANGE_ACTIONS = frozenset(tool for action, tool in ACTIONS.items() if action in ("create", "update", "delete"))


def _calls_read(message: ChatMessage, offered: list[str], structured: bool) -> tuple[ChatMessage, bool]:
    """The answer with the calls it wrote as text made calls: a structured answer's action
    (``skills.structured``), or, from a model offered tools, a call written as its reply
    (``skills.textcalls``). Only offered tools; anything else stays the text it is."""
    if message.tool_calls:
        return message, False
    read = structured_calls(message.content, offered) if structured else None
    if read is None:
        read = read_text_calls(message.content, offered)
    if read is None:
        return message, False
    calls, text = read
    return message.model_copy(update={"content": text or None, "tool_calls": [_made(c) for c in calls]}), bool(calls)


def _made(call: TextCall) -> ToolCallMessage:
    # A fresh id: a chat's conversation spans turns, and a tool result is found by its call's id.
    return ToolCallMessage(id=f"call_{uuid.uuid4().hex[:24]}", name=call.name, arguments=call.arguments)


def _with_instruction(messages: list[ChatMessage], said: str) -> list[ChatMessage]:
    """The request's system prompt with ``said`` at its end (only in the request: the store keeps its own)."""
    if messages and messages[0].role == "system":
        first = messages[0].model_copy(update={"content": f"{messages[0].content or ''}\n\n{said}"})
        return [first, *messages[1:]]
    return [ChatMessage(role="system", content=said), *messages]


def _plan_tools(catalog: list[ToolInfo]) -> list[str]:
    """The tools a skill may call (a plan's or an Agent run's): the catalog's, not the chat's own."""
    return [tool.name for tool in catalog if tool.name not in MANAGEMENT_TOOLS and tool.server != "skills"
            and tool.name != RUN_SCRIPT]


class StreamedAnswer:
    """The chunks of a streamed chat completion, put back together: the text, the tool calls (their
    id and name come in the first delta of each, the arguments in pieces), the usage (last chunk)."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.chars = 0

    def add(self, chunk: Any) -> None:
        if chunk.usage is not None:
            self.prompt_tokens = chunk.usage.prompt_tokens or 0
            self.completion_tokens = chunk.usage.completion_tokens or 0
        for choice in chunk.choices or []:
            delta = choice.delta
            if delta is None:
                continue
            if delta.content:
                self.text.append(delta.content)
                self.chars += len(delta.content)
            for part in delta.tool_calls or []:
                call = self.calls.setdefault(part.index, {"id": "", "name": "", "arguments": []})
                call["id"] = part.id or call["id"]
                if part.function is not None:
                    call["name"] = part.function.name or call["name"]
                    if part.function.arguments:
                        call["arguments"].append(part.function.arguments)
                        self.chars += len(part.function.arguments)

    def progress(self) -> str:
        """What has come so far, as the turn's heartbeat says it."""
        return f"{self.chars} characters received" if self.chars else "waiting for the first token"

    def message(self) -> ChatMessage:
        calls = [ToolCallMessage(id=c["id"] or f"call_{index}", name=c["name"], arguments="".join(c["arguments"]))
                 for index, c in sorted(self.calls.items()) if c["name"]]
        return ChatMessage(role="assistant", content="".join(self.text) or None, tool_calls=calls,
                           prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens)


def _tool_schemas(catalog: list[ToolInfo], names: list[str]) -> list[dict[str, Any]]:
    """The sandbox's tools in the chat-completions shape, with their schemas as their servers wrote them.
    A model's loose answers (numbers and booleans as strings, optional fields as null) are taken all
    the same: the argument pipeline turns them into the strict types. The system prompt says so once
    (``skills.agent.LOOSE_ARGUMENTS``) instead of every schema widening every field, which tripled a
    schema's tokens."""
    known = {tool.name: tool for tool in catalog}
    return [
        {"type": "function", "function": {
            "name": name,
            "description": known[name].description[:1024],
            "parameters": known[name].input_schema or {"type": "object", "properties": {}},
        }}
        for name in names if name in known
    ]


def _status_error(error: openai.APIStatusError, model: str, endpoint: str) -> ApplicationError:
    status = error.status_code
    detail = _error_detail(error)
    # The statuses the OpenAI SDK itself would retry: timeout, conflict (lock), rate limit, server error.
    if status in RETRYABLE_STATUSES or status >= 500:
        return application_error(LlmOverloadedError(f"the LLM endpoint {endpoint} answered {status} for the "
                                                    f"model '{model}': {detail}"),
                                 next_retry_delay=_retry_after(error))
    hint = {
        401: "the endpoint refused the API key: set SKILLS_LLM_API_KEY",
        403: "the API key may not use this endpoint or model",
        404: f"the endpoint does not know the model '{model}': set the skill's model or SKILLS_LLM_MODEL",
    }.get(status, "the request was refused")
    kind = LlmModelNotFoundError if status == 404 else LlmRefusedError
    return application_error(kind(f"{hint} ({status}: {detail})"))


def _seconds(span: timedelta) -> str:
    return f"{span.total_seconds():g} s"


def _connection(error: Exception) -> str:
    """A connection error with what lies under it: the SDK's says only "Connection error."."""
    cause = error.__cause__
    return f"{_sentence(str(error))}: {cause}" if cause is not None and str(cause) else str(error)


def _sentence(text: str) -> str:
    """A message to embed in another sentence: without its final period."""
    return text.rstrip().rstrip(".")


def _error_detail(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:300]
    return str(error.message)[:300]


def _retry_after(error: openai.APIStatusError) -> timedelta | None:
    headers = error.response.headers if error.response is not None else {}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        try:
            return timedelta(seconds=float(value) * scale) if value is not None else None
        except ValueError:
            continue
    return None
