"""The chat's activities: a turn opens with the message matched to SKILL.md playbooks, and
the Agent loop may call the management tools as well as the MCP servers' tools.

The management tools are the same ones ``skills mcp`` serves (client.management):
calls of the Temporal client that start RegisterSkill or ChangeSkill, so what a model
sends in a chat takes the registration road of every other client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from temporalio import activity

from activities.failures import application_error
from activities.ports import OfferedTools
from activities.proposals import CURRENT_CALL, Proposals, proposed_change
from activities.skillfiles import script_skills, toolset_grant
from activities.trust import trust_states
from adapters.skill_folders import FOLDERS, discover
from adapters.store import Store
from client.management import Handler, ManagementTools, answering
from client.skills_client import ATTRIBUTION
from config.secrets import redact
from config.settings import Settings
from skills.chat.proposals import CONFIRMED_TOOLS, plain_answer
from skills.chat.reply import reply_block, run_ref_problem, with_reply
from skills.errors import RunNotFoundError, SkillNotFoundError
from skills.llm.agent import ChatMessage, chat_opening
from skills.llm.structured import tool_mode
from skills.management.manual import CHAT_DESCRIPTIONS, CHAT_SCHEMAS, TOOLS
from skills.messages.chat import ChatAnswer, ChatPrepare, ChatProposals, ChatSession
from skills.naming import CHAT_CONVERSATION, GET_TOOL_CATALOG, MANAGEMENT_TOOLS
from skills.owner.approvals import Approval
from skills.run.catalog import ToolInfo, ToolResult
from skills.run.scripts import RUN_SCRIPT
from skills.skillmd import SKILL_TOOL, Catalog, disclose, run_skill_tool, skill_file_tool
from skills.skillmd.matching import Vectors
from skills.spec.models import RunRecord, Skill

CHANGING_TOOLS = {"memory_store_skill": "created", "memory_update_skill": "updated", "memory_delete_skill": "deleted"}


class ToolRouter:
    """The tools an Agent loop can be given: every MCP server's, and the management tools.

    Which of them a run may use is its sandbox (a skill's required_tools; a chat's
    management tools), enforced by the agent_tool activity."""

    def __init__(self, tools: OfferedTools, management: ManagementTools,
                 proposals: Proposals | None = None, skill_files: Callable[[], Catalog] | None = None) -> None:
        """``tools``: the MCP tools (the hub). ``proposals``: a chat's widening changes are proposed for the
        owner's yes, not made (None: made). ``skill_files`` reads the SKILL.md folders, for the ``skill`` tool
        (None: no such tool)."""
        self._tools = tools
        self._management = management
        self._proposals = proposals
        self._skill_files = skill_files
        # As a chat's model reads them: compact (``skills.management.manual.CHAT_SCHEMAS``).
        self._own = [ToolInfo(name=name, server="skills", tool=name, description=CHAT_DESCRIPTIONS[name],
                              input_schema=CHAT_SCHEMAS[name]) for name in TOOLS]
        reader = skill_file_tool(None)  # any skill: a wrong name is answered with the names
        if skill_files is not None and reader is not None:
            self._own.append(ToolInfo(name=SKILL_TOOL, server="skills", tool=SKILL_TOOL,
                                      description=reader["function"]["description"],
                                      input_schema=reader["function"]["parameters"]))

    def catalog(self) -> list[ToolInfo]:
        return [*self._tools.catalog(), *self._own]

    async def send(self, name: str, arguments: dict[str, Any], *, idempotency_key: str = "") -> ToolResult:
        if name == SKILL_TOOL and self._skill_files is not None:
            return await asyncio.to_thread(self._read_skill, arguments)
        if name not in TOOLS:
            return await self._tools.call(name, arguments, idempotency_key=idempotency_key)
        handler: Handler = getattr(self._management, name)
        chat_call = CURRENT_CALL.get()
        if self._proposals is not None and chat_call is not None and name in CONFIRMED_TOOLS:
            handler = _proposing(self._proposals, name, handler, chat_call)
        session = chat_call.session_id if chat_call is not None else None
        attributed = ATTRIBUTION.set(f"chat:{session}" if session else "agent")  # the skills' revisions say who
        try:
            result = await answering(name, handler)(arguments)
        finally:
            ATTRIBUTION.reset(attributed)
        text = "\n".join(block.text for block in result.content if getattr(block, "text", None))
        structured = result.structured_content
        return ToolResult(ok=not result.is_error, text=text, structured=structured,
                          change=_change(name, structured) if not result.is_error else None)


    def _read_skill(self, arguments: dict[str, Any]) -> ToolResult:
        """The ``skill`` tool: a skill's instructions, or one of its files (read-only, from the worker's folders)."""
        assert self._skill_files is not None
        file = arguments.get("file") or arguments.get("path")
        text = run_skill_tool(self._skill_files(), str(arguments.get("skill_name") or arguments.get("name") or ""), FOLDERS,
                              file=str(file) if file else None)
        return ToolResult(ok=not text.startswith("Error"), text=text)


def _block(run: RunRecord, skill: Skill | None) -> str:
    """The run's data block, its result redacted again (stored redacted; a secret configured since is blotted too)."""
    return reply_block(run.model_copy(update={"summary": redact(run.summary)}), skill)


def _proposing(proposals: Proposals, tool: str, make: Handler, call: Any) -> Handler:
    """``make``, unless the change needs the owner's yes: then it is proposed (recorded, not made)."""

    async def handler(fields: dict[str, Any]) -> Any:
        proposed = await proposals.propose(tool, fields, call)
        return proposed if proposed is not None else await make(fields)

    return handler


def _change(tool: str, structured: dict[str, Any] | None) -> dict[str, Any] | None:
    """The key facts of a skill a management tool changed: bounded, for the chat's reply."""
    if structured and structured.get("proposed"):
        return proposed_change(structured.get("approval_id"), tool)
    if tool not in CHANGING_TOOLS or not structured:
        return None
    skill = structured.get("skill") or structured.get("deleted") or {}
    trigger = skill.get("trigger_config") or {}
    return {"action": CHANGING_TOOLS[tool], "id": skill.get("id"), "name": skill.get("name"),
            "tier": skill.get("tier"), "trigger": trigger, "next_fire": structured.get("next_fire"),
            "enabled": skill.get("enabled"), "disabled_reason": skill.get("disabled_reason"),
            "coming": structured.get("coming") or [],
            # An update's fields it changed (its revision's diff), which the account names; absent: not known.
            **({"changed": structured["changed"]} if isinstance(structured.get("changed"), list) else {})}


class ChatActivities:
    def __init__(self, store: Store, settings: Settings, *, meaning: Vectors | None = None) -> None:
        """``meaning``: the SKILL.md skills are matched by meaning too (``SKILLS_MATCH_MEANING``)."""
        self.store = store
        self.settings = settings
        self.meaning = meaning

    @activity.defn
    def prepare_chat(self, request: ChatPrepare) -> ChatSession:
        """Match the message to the SKILL.md skills, and open the turn: a fresh system prompt
        (the time, the tools, the matched playbooks) and the user's message, appended to the
        session's conversation (idempotent: a retry does not append twice)."""
        catalog = discover(**self.settings.skill_folders(), semantic=self.meaning)
        disclosure = disclose(request.message, catalog, FOLDERS, registry_tokens=self.settings.disclosure_tokens)
        # Instructions of an untrusted skill still guide the model; its toolsets and scripts stay shut.
        states = trust_states(self.store, self.settings,
                              [catalog.skills[name] for name in disclosure.instructions if name in catalog.skills])
        # Only what a turn would start (toolsets, scripts) is shut: the rest of a skill's reach acts at its fires.
        shut = {state.name: state for state in states if not state.runs and (state.parts.toolsets or state.parts.scripts)}
        allowed = [name for name in disclosure.instructions if name not in shut]
        # The management tools and nothing that answers approvals: a chat's model may propose, never confirm.
        tools = [tool for tool in TOOLS if tool in MANAGEMENT_TOOLS or tool == GET_TOOL_CATALOG]
        if disclosure.candidates or any(FOLDERS.list_resources(catalog.skills[name])
                                        for name in disclosure.instructions if name in catalog.skills):
            tools.append(SKILL_TOOL)  # the close candidates to choose from, or the disclosed playbooks' details
        scripts = script_skills(self.settings, allowed)  # the matches and what they depend on
        if scripts:
            tools.append(RUN_SCRIPT)
        grants = [grant for name in allowed
                  if name in catalog.skills and (grant := toolset_grant(catalog.skills[name])) is not None]
        untrusted = [str(state.error()) for state in shut.values()]
        block = self._replied(request)
        # A reply to a result is about that result: it answers no pending proposal (and moves on past them).
        answer, answering = self._answering(request) if block is None else self._answering(request, moved_on=True)
        content = request.message if block is None else with_reply(request.message, block)
        messages = self.store.conversations.load_messages(request.conversation_id)
        if not (messages and messages[-1].role == "user" and messages[-1].content == content):
            opening = chat_opening(content, request.now, self.settings.timezone, disclosure.text, tools,
                                   {grant.skill: list(grant.servers) for grant in grants}, untrusted=list(shut))
            self.store.conversations.append_messages(request.conversation_id, opening, request.now)
        return ChatSession(
            model=self.settings.llm_model, tools=tools, matched=[m.name for m in disclosure.matches],
            max_steps=self.settings.chat_max_steps, token_cap=self.settings.run_token_cap,
            malformed_limit=self.settings.malformed_call_limit,
            llm_timeout_seconds=self.settings.llm_turn_timeout.total_seconds(),
            tool_timeout_seconds=self.settings.tool_call_timeout.total_seconds(),
            script_skills=scripts, script_timeout_seconds=self.settings.script_timeout.total_seconds(),
            toolsets=grants, untrusted=untrusted, answer=answer if answering else None, answering=answering,
            rehearsal_wait_seconds=self.settings.chat_rehearsal_wait.total_seconds(),
            tool_mode=tool_mode(self.settings.llm_tools, messages, self.settings.chat_history_turns),
        )

    def _replied(self, request: ChatPrepare) -> str | None:
        """The data block of the run the message replies to (``skills.chat.reply``), or None for no reply. A
        ``reply_to`` no run answers to is refused, naming the field; a reply to a message that was no notice
        (or whose run was pruned) is a plain message."""
        ref = request.reply_to
        if ref is None and request.reply_to_notice is not None:
            ref = self.store.conversations.notice_run(request.reply_to_notice.chat_id, request.reply_to_notice.message_id)
            if ref is None:
                return None
        if ref is None:
            return None
        problem = run_ref_problem(ref)
        found = [] if problem else self.store.runs.find_runs(ref)
        skill = None
        if len(found) == 1:
            try:
                skill = self.store.skills.get_skill(found[0].skill_id)
            except SkillNotFoundError:
                skill = None  # deleted since: its run still says what it did
            if request.agent_id is not None and (skill is None or skill.agent_id != request.agent_id):
                found = []  # another agent's run: not even its existence is told
        if request.reply_to is None:
            return _block(found[0], skill) if len(found) == 1 else None
        if problem or not found:
            raise application_error(RunNotFoundError(
                f"reply_to (--reply-to): {problem or f'no run has the id {ref!r}'}; `skills runs --json` lists "
                "the runs kept, with their run_id"), benign=True)
        if len(found) > 1:
            raise application_error(RunNotFoundError(
                f"reply_to (--reply-to): {ref!r} begins the ids of more than one run; give more of it"), benign=True)
        return _block(found[0], skill)

    def _answering(self, request: ChatPrepare, moved_on: bool = False) -> tuple[bool | None, list[int]]:
        """The user's plain yes or no, and the session's pending proposals it answers.

        Only the user's own next message answers: the model has no tool that confirms, and text it
        read never reaches here. Any other message moves the conversation on, and the session's
        pending proposals with it: they are denied, so a later yes cannot make what the user
        did not just see (they stay in ``skills approvals`` as denied)."""
        session = request.conversation_id.removeprefix(CHAT_CONVERSATION)
        if session == request.conversation_id:
            return None, []
        pending = [a for a in self.store.approvals.list_approvals(session_id=session) if a.kind == "change"]
        answer = None if moved_on else plain_answer(request.message)
        if answer is not None:
            return answer, sorted(a.id for a in pending)
        for approval in pending:
            self.store.approvals.decide_approval(approval.id, "denied", now=request.now, by="chat",
                                                 reason="the conversation went on without a yes")
        return None, []

    @activity.defn
    def chat_answer(self, request: ChatAnswer) -> None:
        """Append the engine's reply to the conversation (once), so the model reads what was made."""
        messages = self.store.conversations.load_messages(request.conversation_id)
        if messages and messages[-1].role == request.role and messages[-1].content == request.text:
            return
        self.store.conversations.append_messages(
            request.conversation_id, [ChatMessage(role=request.role, content=request.text, by_engine=True)], request.now)

    @activity.defn
    def chat_proposals(self, request: ChatProposals) -> list[Approval]:
        """The proposals a turn recorded, as its reply carries them."""
        return [self.store.approvals.get_approval(approval_id) for approval_id in request.ids]


