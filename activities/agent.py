"""The Agent tier's activities: one LLM turn, one tool call the model asked for.

The conversation lives in the store (by run id); these activities read and append
to it, and give the workflow back only what it needs to decide (tool names and call
ids, token counts, a bounded excerpt). Each step so adds a bounded amount to the
workflow's history, however long the conversation gets.

The endpoint is the adapter's (``adapters.llm``): its failures come out as the engine's
errors, which become the activity's failures here. A rate limit or a server error is
retryable (after the ``retry-after`` the endpoint gives); a bad key, a bad request or an
unknown model is not, and says what to fix.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from temporalio import activity

from activities.failures import application_error
from activities.heartbeat import Stage, heartbeating, stages
from activities.ports import AgentTools, ServerStates
from activities.proposals import CURRENT_CALL, ChatCall, proposed_by
from activities.skillfiles import script_skills, script_tool
from adapters.llm.endpoint import LlmEndpoint
from adapters.mcp.toolsets import SkillToolsets
from adapters.skill_folders import FOLDERS, file_skill
from adapters.store import Store
from config.secrets import redact
from config.settings import LLM_SETTINGS, Settings
from skills.chat.account import proposal_claimed, unfounded_proposal
from skills.chat.needs import (
    CatalogTool,
    Need,
    NeedsCatalog,
    derived_needs,
    imagined_reply,
    reminded,
    to_someone,
    unmet,
    unmet_reply,
)
from skills.chat.reply import BLOCK
from skills.errors import (
    ConversationError,
    LlmNotConfiguredError,
    LlmOverloadedError,
    LlmRefusedError,
    LlmUnavailableError,
    ToolCallError,
    ToolsetRefusedError,
)
from skills.llm.agent import (
    ChatMessage,
    ToolCallMessage,
    for_the_model,
    opening_messages,
    questions,
    structured_prompt,
    tool_result_text,
)
from skills.llm.context import fit_request
from skills.llm.structured import (
    ACTIONS,
    NATIVE_CHANGES,
    actions,
    answer_schema,
    instruction,
    known_skills,
    native_read,
    stated_needs,
    structured_read,
)
from skills.llm.textcalls import TextCall, imagined_calls, read_text_calls
from skills.management.answers import listed
from skills.messages.agent import (
    AgentSession,
    AgentStart,
    AgentToolCall,
    AgentToolResult,
    EndpointChange,
    LlmTurn,
    LlmTurnResult,
    ToolCallRef,
)
from skills.naming import AGENT_TOOL, LLM_TURN, MANAGEMENT_TOOLS, is_chat_conversation
from skills.run.catalog import PENDING, ToolInfo, granted
from skills.run.recall import context_block
from skills.run.rehearsal import rehearsed
from skills.run.scripts import RUN_SCRIPT
from skills.skillmd.disclosure import render_instructions
from skills.skillmd.matching import Vectors
from skills.spec.limits import MAX_CONTEXT_FROM
from skills.spec.models import Skill

TOOL_EXCERPT = 300
MAX_PREFLIGHT_CONTEXT = 5
"""Pre-flight results given to a run's first turn (a skill declares a few checks at most)."""
ENDPOINT_STATE = "llm_endpoint"

class AgentActivities:
    def __init__(self, store: Store, settings: Settings, tools: AgentTools, servers: ServerStates | None = None,
                 toolsets: SkillToolsets | None = None, meaning: Vectors | None = None) -> None:
        """``tools``: what a turn is offered and its calls (the chat's router). ``servers``: the hub's MCP
        servers: a turn whose sandbox names a tool the catalog lacks waits for those still on their first
        connect, so the model is offered it; a rehearsal's calls go through it (without it every call of a
        rehearsal is recorded); one not connected yet (not started or connecting) counts as there when a chat's
        needs are checked. ``toolsets`` holds the sessions of skills' own servers (the tool activities' too);
        ``meaning``: the catalog's ranker by meaning, which that check uses too."""
        self.store = store
        self.settings = settings
        self.tools = tools
        self.servers = servers
        self.meaning = meaning
        self.toolsets = toolsets or SkillToolsets()
        self.llm = LlmEndpoint(settings, log=activity.logger)

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
            brought = [render_instructions(found, FOLDERS) for name in request.dependencies
                       if (found := file_skill(self.settings, name)) is not None]
            self.store.conversations.append_messages(
                request.conversation_id, opening_messages(skill, request.now, tools, request.event, brought,
                                                          self._given(skill, request)),
                request.now)
        model = skill.model or self.settings.llm_model
        return AgentSession(model=model, tools=tools, script_skills=scripts,
                            fallback_models=[m for m in skill.fallback_models if m != model])

    def _given(self, skill: Skill, request: AgentStart) -> str:
        """What the run is given as data (``skills.run.recall``): the last delivered result of each skill its
        ``context_from`` names, read from the store now (never from a payload), and its pre-flight results;
        each redacted and bounded."""
        remembered = [item.model_copy(update={"text": redact(item.text)}) if item.text is not None else item
                      for item in self.store.runs.remembered(skill, skill.context_from[:MAX_CONTEXT_FROM])]
        checks = [(check.tool, redact(check.result)) for check in request.preflight[:MAX_PREFLIGHT_CONTEXT]]
        return context_block(remembered, checks)

    @activity.defn(name=LLM_TURN)
    async def llm_turn(self, request: LlmTurn) -> LlmTurnResult:
        """One chat completion over the stored conversation, offering only the sandbox's tools.

        It heartbeats from its start, not only once the endpoint is asked: what comes first (the stored
        conversation, the catalog, a worker's first turn importing the OpenAI SDK and asking for the model list)
        took a loaded worker past the 10 s heartbeat timeout, and the retry found the model's answer spent."""
        async with stages(f"turn {request.step}", "preparing the request") as stage:
            return await self._turn(request, stage)

    async def _turn(self, request: LlmTurn, stage: Stage) -> LlmTurnResult:
        messages = await asyncio.to_thread(self.store.conversations.load_messages, request.conversation_id)
        if messages and messages[-1].role == "assistant":
            # A retry after the answer was stored: do not ask (and pay) twice. Whose answer it is was stored with
            # it (an engine's answer stays the engine's); whether the model wrote its calls as text was not: it is
            # logged, and nothing the owner is told depends on it.
            return _result(messages[-1], len(messages), request.answer_chars,
                           structured=request.tool_mode == "structured")
        if not self.settings.llm_configured:
            # Without an endpoint or a key the SDK would try the OpenAI API keyless, and every retry
            # would say "Connection error." a minute later: say what to set, now.
            raise application_error(LlmNotConfiguredError(f"no LLM is configured: {LLM_SETTINGS}"))
        catalog = await self._catalog(request)
        if self.servers is not None and not set(request.tools) <= {tool.name for tool in catalog}:
            async with stage.waiting("waiting for MCP servers"):
                await self.servers.settle(self.settings.tool_call_timeout.total_seconds())
            catalog = await self._catalog(request)
        offered = request.tools if is_chat_conversation(request.conversation_id) else \
            [t for t in request.tools if t not in MANAGEMENT_TOOLS]
        structured = request.tool_mode == "structured" and is_chat_conversation(request.conversation_id)
        tools = [] if structured else _tool_schemas(catalog, offered)
        asked = for_the_model(messages, self.settings.chat_history_turns)
        plan_tools = _plan_tools(catalog)
        said = [messages[i].content or "" for i in questions(messages)][-2:]  # the user's own, no engine note
        only, skills = None, None
        # Reading the words (the user's, the model's, SKILL.md's in the prompt, the catalog's) and counting the
        # request's tokens is CPU work: in a thread, so the worker's event loop (every other activity's
        # heartbeats, Temporal's polls) is not held by it. Cutting a 90,000-character request to fit an 8k
        # context took 0.5 CPU s in a measurement.
        if structured:  # the answer's shape, said in the prompt: no tool schemas are sent
            # The owner's words are read with the first structured turn, not imported with the worker.
            from skills.chat.intent import allowed_actions

            if {"memory_update_skill", "memory_delete_skill"} & set(offered):
                skills = await asyncio.to_thread(self.store.skills.list_skills)
            only = await asyncio.to_thread(allowed_actions, said, actions(offered, plan_tools),
                                           [skill.name for skill in skills or []])
            asked = _with_instruction(asked, instruction(offered, plan_tools),
                                      known_skills(offered, [_skill_line(skill) for skill in skills or []]))
        context = await self.llm.context(request.model)
        fitted = await asyncio.to_thread(fit_request, asked, tools, context)
        if fitted.left_out:
            activity.logger.warning("LLM turn %d: left out to fit the context of %d tokens: %s", request.step,
                                    context, "; ".join(fitted.left_out))
        try:
            message = await self.llm.complete(
                request.model, fitted.messages, tools, answer_schema(offered, plan_tools, only) if structured else None,
                stage.waiting, idempotency_key=_attempts_key(request))
        # The adapter's error says it all; the SDK's error under it (or none) stays the failure's cause.
        except LlmOverloadedError as e:
            raise application_error(e, next_retry_delay=e.retry_after) from e.__cause__
        except (LlmUnavailableError, LlmRefusedError) as e:
            raise application_error(e) from e.__cause__
        activity.logger.info("LLM turn %d (%s): %d prompt tokens estimated, %d counted by the endpoint",
                             request.step, request.model, fitted.tokens, message.prompt_tokens)
        answered = message.content
        if skills is None and {c.name for c in message.tool_calls} & set(NATIVE_CHANGES):
            skills = await asyncio.to_thread(self.store.skills.list_skills)  # the words name one of them
        message, read_from_text = await asyncio.to_thread(_calls_read, message, offered, structured, only, skills or [],
                                                          said[-1] if said else "")
        if is_chat_conversation(request.conversation_id):
            pending = [s.name for s in self.servers.server_states() if s.status in PENDING] if self.servers else []
            # The owner's words, this turn's: a result they reply to is data, not what they ask.
            asking = said[-1].rsplit(f"</{BLOCK}>", 1)[-1] if said and messages[-1].role == "user" else ""
            imagined = [] if message.tool_calls else [
                name for name in imagined_calls(message.content, {*offered, *(t.name for t in catalog), *MANAGEMENT_TOOLS})
                if not any(name.startswith(f"{server}_") for server in pending)]  # a server not connected yet may have it
            if imagined:
                # A call of a tool no server has, written as the reply (a 1.5B model's ``pay_electricity_bill``):
                # the engine says nothing was done, and why, rather than show the owner the call.
                message = message.model_copy(update={
                    "content": imagined_reply(imagined, [*plan_tools, *pending]), "by_engine": True})
                return await self._stored(request, message, fitted.left_out)
            checked = await asyncio.to_thread(needs_checked, answered, message, structured, catalog, plan_tools,
                                              pending, self.meaning, asking)
            if said and _owner_message(message, catalog) is not None:
                # "remind me to email my boss": a fixed message to the owner is what they asked.
                checked = [need if need.met or not reminded(said[-1], need) else Need(need.text, "a reminder")
                           for need in checked]
            if unmet(checked):
                # What the task needs, no tool here does: the engine says so, and proposes only what can be done.
                kept = _kept(message, checked, catalog) if structured else None
                text = unmet_reply(checked, [*plan_tools, *pending], kept)
                # The model was asked: its tokens stay the turn's.
                message = message.model_copy(update={"content": text, "by_engine": True} if kept is not None else
                                             {"content": text, "tool_calls": [], "by_engine": True})
                if kept is None:
                    return await self._stored(request, message, fitted.left_out)
            acted = any(c.name in CHANGE_ACTIONS
                        for m in messages[(questions(messages) or [0])[-1]:] for c in m.tool_calls)
            if not (message.tool_calls or message.by_engine or acted) and proposal_claimed(message.content or ""):
                # "Proposed, NOT made" with nothing proposed (a small model repeats the account's words).
                message = message.model_copy(update={"content": unfounded_proposal(), "by_engine": True})
        if structured and [call.name for call in message.tool_calls] == [ACTIONS["list"]]:
            # The list is the engine's, not the model's account of it, and costs no second request to word it.
            found = skills if skills is not None else await asyncio.to_thread(self.store.skills.list_skills)
            message = message.model_copy(update={"tool_calls": [], "content": listed(found), "by_engine": True})
            return await self._stored(request, message, fitted.left_out)
        if read_from_text:
            activity.logger.info("LLM turn %d (%s): tool calls written as text, read as calls: %s", request.step,
                                 request.model, ", ".join(c.name for c in message.tool_calls))
        return await self._stored(request, message, fitted.left_out, structured=structured,
                                  read_from_text=read_from_text)

    async def _stored(self, request: LlmTurn, message: ChatMessage, left_out: list[str] | None = None, *,
                      structured: bool = False, read_from_text: bool = False) -> LlmTurnResult:
        """The turn's answer, stored as the conversation's next message, as the workflow gets it."""
        seq = await asyncio.to_thread(self.store.conversations.append_messages, request.conversation_id, [message],
                                      datetime.now(UTC))
        return _result(message, seq, request.answer_chars, left_out, structured=structured,
                       read_from_text=read_from_text)

    async def _catalog(self, request: LlmTurn) -> list[ToolInfo]:
        """The tools the turn can describe: the catalog, ``run_script`` with the sandbox's scripts, and
        the granted toolsets' tools (from their servers, connected again if they were idle-closed)."""
        catalog = self.tools.catalog()
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
        if not self.settings.llm_configured:
            return None  # no endpoint configured: nothing to watch
        reason = await self.llm.down()
        up = reason is None
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
        # Which conversation's call this is: a chat's management tool records its proposal under it.
        chat_call = ChatCall(request.conversation_id, request.message_seq, call.id)
        if await asyncio.to_thread(self.store.conversations.has_tool_result, request.conversation_id, call.id):
            # An earlier attempt answered it and its result was lost (timed out after its answer was stored):
            # what it proposed is recorded under the call's key, and the turn's reply must still show it.
            proposed = await asyncio.to_thread(proposed_by, self.store, chat_call, call.name)
            if proposed is None:  # a change made, not proposed: kept beside the answer, for this retry
                proposed = await asyncio.to_thread(self.store.conversations.get_state, _change_key(chat_call))
            return AgentToolResult(tool=call.name, ok=True, excerpt="(already answered)", change=proposed)
        started = time.monotonic()
        CURRENT_CALL.set(chat_call)
        # As call_tool: a call past the heartbeat timeout (a slow tool, a chat's proposal on a loaded
        # machine) would be timed out and made again, and cancellation would never reach it.
        async with heartbeating(call.name):
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
                result = (rehearsed(arguments) if grant is not None or self.servers is None or call.name == RUN_SCRIPT
                          else await self.servers.rehearse(call.name, arguments, idempotency_key=key,
                                                   record_only=request.record_only, closed_world=request.closed_world))
            else:
                result = await (self.tools.send(call.name, arguments, idempotency_key=key) if grant is None
                                else self.toolsets.call(grant, call.name, arguments, idempotency_key=key))
            ok, text, adjusted, change = result.ok, result.text, result.adjusted, result.change
        except ToolsetRefusedError as e:  # the grant is not the skill's file's: the run fails, saying why
            raise application_error(e) from e
        except ToolCallError as e:
            # The model can often fix its own call (a missing or mistyped argument): tell it.
            ok, text, adjusted = False, f"Error: {e}", []
        if change is not None and change.get("action") != "proposed" and is_chat_conversation(conversation_id):
            # Before the answer: a retry that finds the call answered finds what it changed too (the account
            # would otherwise say nothing was stored when something was).
            await asyncio.to_thread(self.store.conversations.set_state, _change_key(ChatCall(
                conversation_id, request.message_seq, call.id)), change, datetime.now(UTC))
        await self._answer(conversation_id, call, text if ok or text.startswith("Error") else f"Error: {text}")
        done = ok and request.rehearsal and result.rehearsed
        return AgentToolResult(tool=call.name, ok=ok, excerpt=text[:TOOL_EXCERPT], adjusted=adjusted, change=change,
                               rehearsed=done, arguments=result.arguments if done else None)

    async def _answer(self, conversation_id: str, call: ToolCallMessage, text: str) -> None:
        message = ChatMessage(role="tool", tool_call_id=call.id, content=tool_result_text(redact(text)))
        await asyncio.to_thread(self.store.conversations.append_messages, conversation_id, [message], datetime.now(UTC))


def _change_key(call: ChatCall) -> str:
    """Where a chat's management call keeps the change it made (``engine_state``), for a retry of the call."""
    return f"{call.request_key}:made"


def _attempts_key(request: LlmTurn) -> str:
    """One key for every attempt of this activity: a retry after a lost answer (a heartbeat the server
    timed out, a worker that died) asks with the key the lost attempt used. The activity's identity and the
    turn's, as a digest: the workflow's id, which may name the skill, is not told to the endpoint."""
    info = activity.info()
    turn = f"{info.workflow_id}/{info.workflow_run_id}/{info.activity_id}/{request.conversation_id}/{request.step}"
    return hashlib.sha256(turn.encode()).hexdigest()[:32]


def _result(message: ChatMessage, seq: int, answer_chars: int, left_out: list[str] | None = None, *,
            structured: bool = False, read_from_text: bool = False) -> LlmTurnResult:
    # A structured answer's change comes with its reply: the loop ends on it once the change is made.
    # So does a native change the engine rewrote: its sentence, not the model's next words, says what was done.
    ends = (structured or message.by_engine) and bool(message.tool_calls) and \
        all(c.name in CHANGE_ACTIONS for c in message.tool_calls)
    return LlmTurnResult(
        message_seq=seq,
        tool_calls=[ToolCallRef(id=c.id, name=c.name) for c in message.tool_calls],
        final=(message.content or "")[:answer_chars] if ends or not message.tool_calls else "",
        prompt_tokens=message.prompt_tokens,
        completion_tokens=message.completion_tokens,
        left_out=left_out or [],
        ends_turn=ends,
        read_from_text=read_from_text,
        by_engine=message.by_engine,
    )


CHANGE_ACTIONS = frozenset(tool for action, tool in ACTIONS.items() if action in ("create", "update", "delete"))


def _calls_read(message: ChatMessage, offered: list[str], structured: bool, only: list[str] | None = None,
                skills: list[Skill] | None = None, said: str = "") -> tuple[ChatMessage, bool]:
    """The answer with the calls it wrote as text made calls: a structured answer's action
    (``skills.llm.structured``: of the actions ``only`` allows, a change on the one of ``skills`` the user's
    words ``said`` name, as they say it), or, from a model offered tools, a call written as its reply (``skills.llm.textcalls``).
    Only offered tools, and in a structured turn only those of the actions ``only`` allows (a question answered
    with a text call to ``memory_update_skill`` pauses nothing); anything else stays the text it is. Where the
    engine dropped or changed the structured answer's call, the reply is the engine's (``by_engine``)."""
    if message.tool_calls:
        # A chat's own calls (a skill's run is offered no management tool): the owner's words decide them too.
        return (_native(message, skills or [], said) if CHANGE_ACTIONS & set(offered) else message), False
    read = structured_read(message.content, offered, only, skills or [], said) if structured else None
    if read is not None:
        calls, text, by_engine = read
    else:
        callable_ = offered if not structured or only is None else \
            [tool for tool in offered if tool not in CHANGE_ACTIONS or _action(tool) in only]
        found = read_text_calls(message.content, callable_)
        if found is None:
            return message, False
        (calls, text), by_engine = found, False
    update: dict[str, Any] = {"content": text or None, "tool_calls": [_made(c) for c in calls]}
    if by_engine:
        update["by_engine"] = True
    return message.model_copy(update=update), bool(calls)


def _native(message: ChatMessage, skills: list[Skill], said: str) -> ChatMessage:
    """The model's own calls as the owner's words ``said`` make them (``skills.llm.structured.native_read``): a
    call dropped or changed keeps its id, and the engine's sentence is the reply (``by_engine``)."""
    read, sentence = native_read([TextCall(c.name, c.arguments or "{}") for c in message.tool_calls], skills, said)
    if sentence is None:
        return message
    calls = [c.model_copy(update={"arguments": made.arguments}) for c, made in zip(message.tool_calls, read, strict=True)
             if made is not None]
    return message.model_copy(update={"content": sentence, "tool_calls": calls, "by_engine": True})


def _action(tool: str) -> str | None:
    return next((action for action, name in ACTIONS.items() if name == tool), None)


def needs_checked(answered: str | None, message: ChatMessage, structured: bool, catalog: list[ToolInfo],
                  plan_tools: list[str], pending: list[str], meaning: Vectors | None = None,
                  asking: str = "") -> list[Need]:
    """What the answer's task needs (``skills.chat.needs``), each checked against the tools a skill may use and
    the servers not connected yet (``pending``: not started or connecting): the needs a structured answer states,
    else those of the skill it proposes (its instructions); and, from the owner's words ``asking``, a message to someone else ("email my landlord",
    "text Jonas"), which the engine knows its senders cannot reach whatever the model wrote. None for a change
    or a delete: they need only the engine (a list whose answer states needs is checked: "what's in the news?"
    is no question about the skills)."""
    creates = [call for call in message.tool_calls if call.name == ACTIONS["create"]]
    if any(call.name in (ACTIONS["update"], ACTIONS["delete"]) for call in message.tool_calls):
        return []
    stated = (stated_needs(answered) if structured else None) or []
    derived: list[str] = []
    for call in creates if not stated else []:
        instructions = _arguments(call).get("instructions")
        derived += derived_needs(instructions) if isinstance(instructions, str) else []
    others = [need for need in derived_needs(asking) if to_someone(need) and not reminded(asking, Need(need, None))]
    if not stated and not derived and not others:
        return []
    tools = [CatalogTool(t.name, t.server, t.description) for t in catalog if t.name in plan_tools]
    tools += [CatalogTool(name, name, pending=True) for name in pending]
    needs = NeedsCatalog(tools, semantic=meaning)
    checked = needs.check(stated) + needs.check(derived, derived=True)
    # The owner's words only where the answer's own needs missed it (one missing part is not said twice).
    return checked if unmet(checked) else checked + needs.check(others, derived=True)


def _arguments(call: ToolCallMessage) -> dict[str, Any]:
    try:
        arguments = json.loads(call.arguments or "{}")
    except (ValueError, RecursionError):
        return {}
    return arguments if isinstance(arguments, dict) else {}


def _kept(message: ChatMessage, checked: list[Need], catalog: list[ToolInfo]) -> str | None:
    """The part of a task with unmet needs that can be done, in words, when the answer proposes just that: one
    fixed message to the owner (a reminder), beside a need it meets. None: nothing is kept."""
    owner = {t.name for t in catalog if CatalogTool(t.name, t.server, t.description).reaches_owner}
    met = {need.met_by for need in checked if need.met}
    sent = _owner_message(message, catalog)
    if sent is None or not met & owner:
        return None
    arguments, text = sent
    said = f', which sends you "{str(text)[:120]}"' if text else ", a message to you"
    return f"the skill '{str(arguments.get('name') or 'reminder')[:80]}'{said}"


def _owner_message(message: ChatMessage, catalog: list[ToolInfo]) -> tuple[dict[str, Any], Any] | None:
    """The proposal's arguments and text when the answer proposes one fixed message to the owner (a Direct plan of
    one step, on a sender that reaches only them); None otherwise."""
    owner = {t.name for t in catalog if CatalogTool(t.name, t.server, t.description).reaches_owner}
    if len(message.tool_calls) != 1 or message.tool_calls[0].name != ACTIONS["create"]:
        return None
    arguments = _arguments(message.tool_calls[0])
    plan = arguments.get("execution_plan")
    if not isinstance(plan, list) or len(plan) != 1 or not isinstance(plan[0], dict) or plan[0].get("toolName") not in owner:
        return None
    parameters = plan[0].get("parameters") if isinstance(plan[0].get("parameters"), dict) else {}
    return arguments, parameters.get("message") or parameters.get("text")


def _made(call: TextCall) -> ToolCallMessage:
    # A fresh id: a chat's conversation spans turns, and a tool result is found by its call's id.
    return ToolCallMessage(id=f"call_{uuid.uuid4().hex[:24]}", name=call.name, arguments=call.arguments)


def _with_instruction(messages: list[ChatMessage], said: str, known: str) -> list[ChatMessage]:
    """The request's system prompt told the answer's shape, ``said``, and the user's skills, ``known`` (only in
    the request: the store keeps its own)."""
    if messages and messages[0].role == "system":
        first = messages[0].model_copy(update={"content": structured_prompt(messages[0].content or "", said, known)})
        return [first, *messages[1:]]
    return [ChatMessage(role="system", content="\n\n".join(part for part in (said, known) if part)), *messages]


def _skill_line(skill: Skill) -> str:
    """A skill in one line, for a structured turn's list of the user's skills (it cannot call a tool to read them)."""
    return (f"{skill.name}: {skill.trigger_config.describe() if skill.trigger_config else skill.trigger_type}, "
            f"{skill.tier} tier, {'enabled' if skill.enabled else 'paused'}")


def _plan_tools(catalog: list[ToolInfo]) -> list[str]:
    """The tools a skill may call (a plan's or an Agent run's): the catalog's, not the chat's own."""
    return [tool.name for tool in catalog if tool.name not in MANAGEMENT_TOOLS and tool.server != "skills"
            and tool.name != RUN_SCRIPT]


def _tool_schemas(catalog: list[ToolInfo], names: list[str]) -> list[dict[str, Any]]:
    """The sandbox's tools in the chat-completions shape, with their schemas as their servers wrote them.
    A model's loose answers (numbers and booleans as strings, optional fields as null) are taken all
    the same: the argument pipeline turns them into the strict types. The system prompt says so once
    (``skills.llm.agent.LOOSE_ARGUMENTS``) instead of every schema widening every field, which tripled a
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
