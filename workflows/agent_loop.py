"""The Agent loop, shared by SkillRun (a skill's fire) and ChatTurn (one message of a chat).

LLM turns and the tool calls they ask for, each an activity, until the model answers
without a tool call, ``max_steps`` turns have passed, the token cap is crossed, or the
model keeps sending malformed calls. The conversation stays in the store; the loop
carries only references and counters, so its state fits a continue-as-new.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import NoReturn

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities.agent import AgentActivities
    from activities.scripts import ScriptActivities
    from activities.tools import ToolActivities
    from skills.errors import FALLBACK_FAILURES
    from skills.messages.agent import (
        AgentLoopState,
        AgentScriptCall,
        AgentToolCall,
        LlmTurn,
        LoopEnd,
        LoopLimits,
        ToolCallRef,
    )
    from skills.run.catalog import ToolsetGrant
    from skills.run.idempotency import loop_call_key
    from skills.run.scripts import RUN_SCRIPT
    from skills.spec.models import ToolCallRecord
    from workflows.failures import activity_cause
    from workflows.options import llm_options, script_options, tool_options


async def open_toolsets(grants: list[ToolsetGrant], timeout_seconds: float
                        ) -> tuple[list[str], list[ToolsetGrant], list[str]]:
    """Connect each grant's servers (the ``open_toolsets`` activity, one per skill): the names of their
    tools, which join a loop's sandbox, the grants opened, and why each of the others could not be."""
    tools: list[str] = []
    opened: list[ToolsetGrant] = []
    failures: list[str] = []
    for grant in grants:
        try:
            tools += await workflow.execute_activity_method(
                ToolActivities.open_toolsets, grant, **tool_options(timeout_seconds),
                summary=f"toolsets of {grant.skill}: {', '.join(grant.servers)}",
            )
            opened.append(grant)
        except ActivityError as e:
            failures.append(activity_cause(e))
    return tools, opened, failures


Approve = Callable[[int, int, ToolCallRef], Awaitable[ToolCallRecord | None]]
"""``approve(step, message_seq, call)`` waits for the owner's answer to a call of a tool in the loop's
``approval_tools``: None to make the call, or the record of the call not made (its denial, which the
model reads as the call's result)."""


async def agent_loop(state: AgentLoopState, limits: LoopLimits,
                     carry_over: Callable[[AgentLoopState], NoReturn] | None = None,
                     approve: Approve | None = None) -> LoopEnd:
    """Run the loop from ``state`` (step 0 for a new conversation); ``carry_over`` continues the
    workflow as new with the state when Temporal suggests the history is getting long; ``approve``
    asks the owner before a call that needs it."""
    while state.step < limits.max_steps:
        if carry_over is not None and workflow.info().is_continue_as_new_suggested():
            carry_over(state)
        step = state.step + 1
        try:
            turn = await workflow.execute_activity_method(
                AgentActivities.llm_turn,
                LlmTurn(conversation_id=state.conversation_id, model=state.model, tools=state.tools, step=step,
                        answer_chars=limits.answer_chars, script_skills=state.script_skills,
                        toolsets=state.toolsets, tool_mode=state.tool_mode),
                **llm_options(limits.llm_timeout_seconds),
                summary=f"LLM turn {step} ({state.model})",
            )
        except ActivityError as e:
            if state.fallback_models and _fails_over(e):
                # Another model may answer where this one is unknown, overloaded or rate-limited: the
                # same step again on the next, which the rest of the run keeps.
                workflow.logger.warning("LLM turn %d failed on %s (%s); trying %s", step, state.model,
                                        activity_cause(e), state.fallback_models[0])
                state = state.model_copy(update={"model": state.fallback_models[0],
                                                 "fallback_models": state.fallback_models[1:]})
                continue
            return _end(state, f"LLM turn {step} failed: {activity_cause(e)}")
        state = state.model_copy(update={
            "answered_by": state.model,
            "step": step,
            "prompt_tokens": state.prompt_tokens + turn.prompt_tokens,
            "completion_tokens": state.completion_tokens + turn.completion_tokens,
            "left_out": list(dict.fromkeys([*state.left_out, *turn.left_out])),
        })
        used = state.prompt_tokens + state.completion_tokens
        if used > limits.token_cap:
            return _end(state, f"stopped: the run used {used:,} tokens, over its cap of {limits.token_cap:,}")
        if not turn.tool_calls:
            return LoopEnd(status="success", summary=turn.final or "(the model gave no answer)", state=state,
                           by_engine=turn.by_engine)
        calls, changes, malformed, failed = list(state.calls), list(state.changes), False, False
        for index, ref in enumerate(turn.tool_calls, start=1):
            key = "" if ref.name == RUN_SCRIPT else \
                loop_call_key(state.key_prefix, state.conversation_id, step, turn.message_seq, index)
            if approve is not None and ref.name in state.approval_tools and ref.name in state.tools:
                denied = await approve(step, turn.message_seq, ref)
                if denied is not None:
                    calls.append(denied)
                    continue
            # The sandbox: the activity executes nothing outside `allowed`, on every attempt.
            try:
                if ref.name == RUN_SCRIPT and ref.name in state.tools and not state.rehearsal:
                    # A script of the run's skill, in the sandbox (a rehearsal records it instead, below):
                    done = await workflow.execute_activity_method(
                        ScriptActivities.agent_script,
                        AgentScriptCall(conversation_id=state.conversation_id, message_seq=turn.message_seq,
                                        call_id=ref.id, skills=state.script_skills),
                        **script_options(limits.script_timeout_seconds), summary=ref.name,
                    )
                else:
                    done = await workflow.execute_activity_method(
                        AgentActivities.agent_tool,
                        AgentToolCall(conversation_id=state.conversation_id, message_seq=turn.message_seq,
                                      call_id=ref.id, allowed=state.tools, toolsets=state.toolsets,
                                      idempotency_key=key, rehearsal=state.rehearsal,
                                      record_only=state.rehearsal and ref.name in state.approval_tools,
                                      closed_world=state.closed_world),
                        **tool_options(limits.tool_timeout_seconds),
                        summary=ref.name if ref.name in state.tools else f"refused: {ref.name}",
                    )
            except ActivityError as e:
                return _end(state.model_copy(update={"calls": calls, "changes": changes}),
                            f"{ref.name} failed: {activity_cause(e)}")
            calls.append(ToolCallRecord(step_id=f"turn-{step}", tool=ref.name, ok=done.ok,
                                        duration_ms=done.duration_ms, result=done.excerpt,
                                        adjusted=done.adjusted, refused=done.refused, idempotency_key=key,
                                        rehearsed=done.rehearsed, arguments=done.arguments))
            if done.change is not None:
                changes.append(done.change)
            malformed |= done.malformed
            failed |= not done.ok
        streak = state.malformed_streak + 1 if malformed else 0
        state = state.model_copy(update={"calls": calls, "changes": changes, "malformed_streak": streak})
        if streak >= limits.malformed_limit:
            return _end(state, f"stopped: the model sent malformed tool calls {streak} turns in a row")
        if turn.ends_turn and not failed:  # a structured answer's change, made: its reply was written with it
            return LoopEnd(status="success", summary=turn.final or "(the model gave no answer)", state=state,
                           by_engine=turn.by_engine)
    return _end(state, f"stopped: max_steps ({limits.max_steps}) reached without a final answer")


def _fails_over(error: ActivityError) -> bool:
    cause = error.cause
    return isinstance(cause, ApplicationError) and cause.type in FALLBACK_FAILURES


def _end(state: AgentLoopState, reason: str) -> LoopEnd:
    return LoopEnd(status="error", summary=reason, state=state)
