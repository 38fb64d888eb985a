"""The script activities: run one of a skill's declared scripts in the sandbox.

- ``run_script``: a Direct plan's step (``toolName: run_script``, ``parameters: {script, args}``).
- ``agent_script``: an Agent-tier run's or a chat's ``run_script`` tool call, read from the
  stored conversation and answered there, as ``agent_tool`` does for MCP tools.

Both heartbeat while the script runs. A script that ran is never run again by a retry: its
failure (an exit status, a timeout, a limit) is the result. Only a start that failed for a
passing reason (:class:`ScriptStartError`) is retried (``workflows.options.script_options``).
Refusals (scripts disabled, a script the skill does not declare, arguments over the limits,
no sandbox) are non-retryable and say why.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from datetime import UTC, datetime

from temporalio import activity

from activities.agent import TOOL_EXCERPT
from activities.failures import application_error
from activities.trust import untrusted
from adapters.sandbox import Sandbox
from adapters.skill_folders import file_skill
from adapters.store import Store
from config.secrets import redact
from config.settings import Settings
from skills.errors import ConversationError, SandboxUnavailableError, ScriptError
from skills.llm.agent import ChatMessage, tool_result_text
from skills.messages.agent import AgentScriptCall, AgentToolResult
from skills.messages.run import SandboxState, ScriptRun
from skills.naming import AGENT_SCRIPT, RUN_SCRIPT_ACTIVITY, SANDBOX_STATE
from skills.run.catalog import ToolCallOutput
from skills.run.scripts import ScriptResult, check_arguments, script_call
from skills.skillmd.scripts import DeclaredScript, declared_scripts

DISABLED = ("scripts are disabled on this worker (set SKILLS_SCRIPTS_ENABLED=true to let skills run the scripts "
            "they declare, in the bubblewrap sandbox)")
SANDBOX_DOCS = "docs/skill-files.md#scripts says what the sandbox needs, docs/deploy.md how to give it in a cluster"

logger = logging.getLogger(__name__)


class ScriptActivities:
    def __init__(self, settings: Settings, store: Store | None = None, sandbox: Sandbox | None = None) -> None:
        self.settings = settings
        self.store = store
        self.sandbox = sandbox or Sandbox.from_settings(settings)

    @activity.defn(name=RUN_SCRIPT_ACTIVITY)
    async def run_script(self, request: ScriptRun) -> ToolCallOutput:
        """Run a declared script of the skill in the sandbox. A script that failed is a result with ``ok``
        False (its output, then how it ended); a refusal is a non-retryable failure saying why. The text is
        the output (cut at the limit with a marker); printed JSON can be piped on (``{{step.field}}``)."""
        try:
            skill, script, args = script_call(request.arguments, self.sandbox.limits)
            result = await self._run(skill or request.skill, [request.skill], script, args)
        except ScriptError as e:
            activity.logger.warning("script step %s of %s refused: %s", request.step_id, request.skill, e)
            raise application_error(e) from e
        return ToolCallOutput(ok=result.ok, text=result.text(), duration_ms=result.duration_ms)

    @activity.defn(name=AGENT_SCRIPT)
    async def agent_script(self, request: AgentScriptCall) -> AgentToolResult:
        """The model's ``run_script`` call: run it, store the output as the call's answer."""
        store = self._store()
        message = await asyncio.to_thread(store.conversations.get_message, request.conversation_id, request.message_seq)
        call = next((c for c in (message.tool_calls if message else []) if c.id == request.call_id), None)
        if call is None:
            raise application_error(ConversationError(f"no tool call {request.call_id} in message "
                                                      f"{request.message_seq}"))
        if await asyncio.to_thread(store.conversations.has_tool_result, request.conversation_id, call.id):
            return AgentToolResult(tool=call.name, ok=True, excerpt="(already answered)")
        started = time.monotonic()
        malformed = False
        try:
            arguments = json.loads(call.arguments or "{}")
            if not isinstance(arguments, dict):
                raise ValueError("the arguments must be a JSON object")
        except (ValueError, RecursionError) as e:  # RecursionError: nested past what the parser takes
            ok, text, malformed = False, f"Error: the arguments were not valid JSON ({e}); call run_script again " \
                                         "with a JSON object.", True
        else:
            try:
                skill, script, args = script_call(arguments, self.sandbox.limits)
                if skill is None and len(request.skills) == 1:
                    skill = request.skills[0]
                if skill is None:
                    raise ScriptError(f"skill: say whose script it is: one of {', '.join(request.skills) or 'none'}")
                result = await self._run(skill, request.skills, script, args)
                ok, text = result.ok, result.text()
            except SandboxUnavailableError as e:
                ok, text = False, f"Error: {e}"
            except ScriptError as e:  # the model can often fix its own call
                ok, text = False, f"Error: {e}"
        answer = ChatMessage(role="tool", tool_call_id=call.id, content=tool_result_text(redact(text)))
        await asyncio.to_thread(store.conversations.append_messages, request.conversation_id, [answer], datetime.now(UTC))
        return AgentToolResult(tool=call.name, ok=ok, malformed=malformed, excerpt=text[:TOOL_EXCERPT],
                               duration_ms=round((time.monotonic() - started) * 1000))

    async def _run(self, skill_name: str, allowed: list[str], script: str, args: list[str]) -> ScriptResult:
        if not self.settings.scripts_enabled:
            raise ScriptError(DISABLED)
        if skill_name not in allowed:
            raise ScriptError(f"skill: '{skill_name}' is not a skill of this run (its scripts: "
                              f"{', '.join(allowed) or 'none'})")
        args = check_arguments(args, self.sandbox.limits)
        found = await asyncio.to_thread(file_skill, self.settings, skill_name)
        if found is None:
            raise ScriptError(f"skill: no SKILL.md skill '{skill_name}' in the worker's skill folders, so it has no "
                              "scripts")
        declared, _ = declared_scripts(list(found.manifest.scripts))
        wanted = next((d for d in declared if d.name == script or d.relative_path == script), None)
        if wanted is None:
            names = ", ".join(d.name for d in declared) or "none"
            raise ScriptError(f"script: '{script}' is not a script skill '{skill_name}' declares (it declares: {names})")
        # Checked here too, as the script is read: whatever plan or conversation names it, only the bytes the
        # owner trusted run (an edit since the run began untrusts them).
        refusal = await asyncio.to_thread(untrusted, self._store(), self.settings, [found])
        if refusal is not None:
            raise ScriptError(str(refusal))
        info = activity.info()
        if info.attempt > 1 and info.heartbeat_details:
            # An earlier attempt started it and then its worker stopped (or the attempt timed out): a script
            # may have side effects in its output's consumer, and is never run twice.
            return ScriptResult(script=wanted.name, ok=False, reason="an earlier attempt started it and did not "
                                "finish (its worker stopped); a script is not run twice")
        activity.logger.info("script %s of %s (attempt %d): %d argument(s)", wanted.name, skill_name, info.attempt,
                             len(args))
        await self.sandbox.check()  # before the start is recorded: an unusable sandbox means it never ran
        activity.heartbeat("started", wanted.name)
        return await self.sandbox.run(found.folder, DeclaredScript(name=wanted.name), args,
                                      beat=lambda: activity.heartbeat(wanted.name))

    @activity.defn(name=SANDBOX_STATE)
    async def sandbox_state(self, request: None = None) -> SandboxState:
        """Whether scripts can run here, probed now unless a probe already passed (``skills doctor``)."""
        return await self.state()

    async def state(self) -> SandboxState:
        if not self.settings.scripts_enabled:
            return SandboxState(summary="scripts are off (SKILLS_SCRIPTS_ENABLED=false)")
        ok, summary, fix = await self.sandbox.state()
        return SandboxState(scripts_enabled=True, ok=ok, summary=summary, fix=fix if ok or fix else SANDBOX_DOCS)

    async def announce(self) -> None:
        """The worker's start line about its script sandbox, when scripts are on: how they run, or why they cannot
        and what to do (the worker serves on: each script is refused with the same reason until it is fixed)."""
        state = await self.state()
        if not state.scripts_enabled:
            return
        if state.ok:
            logger.info("script sandbox: %s", state.summary)
        else:
            logger.warning("script sandbox: scripts cannot run here: %s; fix: %s", state.summary, state.fix)

    def _store(self) -> Store:
        if self.store is None:
            raise ConversationError("this worker's script activities have no store")
        return self.store
