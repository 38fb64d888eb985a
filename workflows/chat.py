"""ChatTurn: one message of a conversation with the assistant, as a workflow.

The message is matched to the SKILL.md playbooks (the cron-scheduling one teaches the
model to turn "remind me in 5 minutes" into a skill), and the Agent loop runs with
the management tools: what the model sends takes the registration road of every
other client, so its slips are normalized and its mistakes come back to it as errors
it can fix in its next step. The conversation is kept in the store, by session.
"""

from __future__ import annotations

import asyncio

from temporalio import workflow
from temporalio.exceptions import ChildWorkflowError

from skills.naming import CHAT_TURN

with workflow.unsafe.imports_passed_through():
    from activities.chat import ChatActivities
    from skills.chat.account import acted, asks_for_change, claimed_act
    from skills.chat.proposals import ChangeDecided, DecideChangeInput, answered_text
    from skills.llm.structured import ASK_AGAIN
    from skills.messages.agent import AgentLoopState, LoopEnd, LoopLimits
    from skills.messages.chat import ChatAnswer, ChatInput, ChatPrepare, ChatProposals, ChatReply, ChatSession
    from skills.messages.manage import SkillRef
    from skills.messages.run import Rehearse, SkillRunInput
    from skills.naming import chat_conversation_id
    from skills.owner.approvals import Approval, ApprovalDecision
    from skills.run.rehearsal import REHEARSAL_TIMEOUT
    from skills.spec.models import REHEARSAL, RunRecord
    from workflows.agent_loop import agent_loop, open_toolsets
    from workflows.failures import activity_cause
    from workflows.options import FAIL_ON_BUG, STORE
    from workflows.phrasing import no_model_reply
    from workflows.proposals import DecideChange
    from workflows.run import SkillRun

REPLY_CHARS = 16_000
"""A chat's reply is the model's whole answer, up to four Telegram messages."""
MIN_REHEARSAL_WAIT = 2.0
"""Seconds a turn waits for its rehearsals however late it is: what their start takes."""
ASKED_AGAIN = ("the model answered without a call; it was asked again for one JSON answer (SKILLS_LLM_TOOLS=auto)")


@workflow.defn(name=CHAT_TURN, failure_exception_types=FAIL_ON_BUG)
class ChatTurn:
    @workflow.run
    async def run(self, request: ChatInput) -> ChatReply:
        began = workflow.now()
        conversation = chat_conversation_id(request.session_id)
        session = await workflow.execute_activity_method(
            ChatActivities.prepare_chat, ChatPrepare(conversation_id=conversation, message=request.message,
                                                now=workflow.now(), reply_to=request.reply_to,
                                                reply_to_notice=request.reply_to_notice,
                                                agent_id=request.agent_id), **STORE,
        )
        if session.answer is not None:
            return await _answer(request, conversation, session)
        if workflow.patched("plain-reminder") and (read := await no_model_reply(request, conversation,
                                                                                  session.matched)) is not None:
            return read
        # The matched skills' own toolsets join this turn's sandbox; one that cannot start is left out.
        toolset_tools, grants, unavailable = await open_toolsets(session.toolsets, session.tool_timeout_seconds)
        for reason in unavailable:
            workflow.logger.warning("chat turn without a matched skill's toolsets: %s", reason)
        start = AgentLoopState(conversation_id=conversation, model=session.model,
                               tools=list(dict.fromkeys([*session.tools, *toolset_tools])),
                               script_skills=session.script_skills, toolsets=grants,
                               tool_mode="structured" if session.tool_mode == "structured" else "native")
        limits = LoopLimits(max_steps=session.max_steps, token_cap=session.token_cap,
                            malformed_limit=session.malformed_limit, llm_timeout_seconds=session.llm_timeout_seconds,
                            tool_timeout_seconds=session.tool_timeout_seconds,
                            script_timeout_seconds=session.script_timeout_seconds, answer_chars=REPLY_CHARS)
        end = await agent_loop(start, limits)
        asked_again = None
        if session.tool_mode == "auto" and _without_a_call(request.message, end) \
                and workflow.patched("chat-asks-again-structured"):
            await workflow.execute_activity_method(
                ChatActivities.chat_answer,
                ChatAnswer(conversation_id=conversation, text=ASK_AGAIN, now=workflow.now(), role="user"), **STORE)
            first = end.state
            end = await agent_loop(start.model_copy(update={"tool_mode": "structured"}), limits)
            end = end.model_copy(update={"state": end.state.model_copy(update={
                "prompt_tokens": first.prompt_tokens + end.state.prompt_tokens,
                "completion_tokens": first.completion_tokens + end.state.completion_tokens,
                "left_out": list(dict.fromkeys([*first.left_out, *end.state.left_out]))})})
            asked_again = ASKED_AGAIN
        proposed = [c["approval_id"] for c in end.state.changes if c.get("action") == "proposed"]
        proposals = []
        if proposed:  # the approvals as recorded: exactly what would be stored, for the reply to show
            proposals = await workflow.execute_activity_method(ChatActivities.chat_proposals,
                                                               ChatProposals(ids=proposed), **STORE)
        pending = [p for p in proposals if p.pending]
        rehearsals: dict[int, RunRecord] = {}
        rehearsing: dict[int, str] = {}
        if session.rehearsal_wait_seconds > 0 and pending and workflow.patched("rehearse-proposals"):
            wait = session.rehearsal_wait_seconds
            if workflow.patched("rehearsal-wait-from-turn-start"):
                # The user waits from their message, not from the proposal: a small local model's turn that took
                # 50 s of a 60-s wait leaves 10 s for its rehearsals (never less than their start needs).
                wait = max(MIN_REHEARSAL_WAIT, wait - (workflow.now() - began).total_seconds())
            rehearsals, rehearsing = await _rehearse(pending, wait)
        # The reply of a turn that did not end is the engine's reason, not the model's words; so is an answer
        # the engine wrote itself in the model's place.
        return ChatReply(session_id=request.session_id, ok=end.status == "success", reply=end.summary,
                         said_by="model" if end.status == "success" and not end.by_engine else "engine",
                         changes=[c for c in end.state.changes if c.get("action") != "proposed"],
                         matched=session.matched, unavailable=[*session.untrusted, *unavailable],
                         proposals=pending,
                         prompt_tokens=end.state.prompt_tokens, completion_tokens=end.state.completion_tokens,
                         left_out=end.state.left_out, rehearsals=rehearsals, rehearsing=rehearsing,
                         called=acted([(call.tool, call.ok) for call in end.state.calls]), asked_again=asked_again)


def _without_a_call(message: str, end: LoopEnd) -> bool:
    """The turn ended with no change where one was needed: its reply claims an act, or the message asks for
    a skill and the model called no tool at all (``skills.chat.account``). A tool outside the skills that answered
    (a matched skill's own) may be what the reply speaks of."""
    if end.status != "success" or end.state.changes or acted([(call.tool, call.ok) for call in end.state.calls]):
        return False
    if claimed_act(end.summary, promises=False) is not None or (asks_for_change(message) and not end.state.calls):
        return True
    return workflow.patched("chat-promises-claim") and claimed_act(end.summary) is not None


def proposed_definition(proposal: Approval) -> Rehearse | None:
    """What a proposal would register, as a rehearsal takes it (DecideChange applies the same arguments)."""
    arguments = proposal.arguments
    if proposal.tool == "memory_store_skill" and isinstance(arguments.get("data"), dict):
        return Rehearse(data=arguments["data"], closed_world=True)
    if proposal.tool == "memory_update_skill" and isinstance(arguments.get("patch"), dict):
        return Rehearse(data=arguments["patch"], target=SkillRef(ref=str(arguments["skill_id"])), closed_world=True)
    return None


async def _rehearse(proposals: list[Approval], wait: float) -> tuple[dict[int, RunRecord], dict[int, str]]:
    """Rehearse each proposed skill (a new one, or one changed), as a child SkillRun of the rehearsal kind,
    and wait for them at most ``wait`` seconds: those done are shown with the proposal; the others go on
    (abandoned, not cancelled) and are named by workflow id. Only the owner reads what a rehearsal
    found: the model's turn is over."""
    started: dict[int, asyncio.Task[RunRecord]] = {}
    ids: dict[int, str] = {}
    for proposal in proposals:
        rehearse = proposed_definition(proposal)
        if rehearse is None:
            continue
        ids[proposal.id] = f"{workflow.info().workflow_id}-rehearsal-{proposal.id}"
        started[proposal.id] = asyncio.create_task(workflow.execute_child_workflow(
            SkillRun.run, SkillRunInput(skill_id=int(proposal.skill_id or 0), trigger=REHEARSAL, rehearse=rehearse),
            id=ids[proposal.id], parent_close_policy=workflow.ParentClosePolicy.ABANDON,
            execution_timeout=REHEARSAL_TIMEOUT, static_summary=f"rehearsal of proposal {proposal.id}"))
    if not started:
        return {}, {}
    try:
        await workflow.wait_condition(lambda: all(task.done() for task in started.values()), timeout=wait)
    except TimeoutError:
        pass  # what is not done by now is named, and goes on
    done: dict[int, RunRecord] = {}
    running: dict[int, str] = {}
    for proposal_id, task in started.items():
        if not task.done():
            running[proposal_id] = f"still running after {round(wait)} s: workflow {ids[proposal_id]} (`skills runs`)"
        elif task.exception() is not None:
            running[proposal_id] = f"could not run: {activity_cause(task.exception())}"  # type: ignore[arg-type]
        else:
            done[proposal_id] = task.result()
    return done, running


async def _answer(request: ChatInput, conversation: str, session: ChatSession) -> ChatReply:
    """The user's plain yes or no to the session's pending proposals: each answered through DecideChange
    (recorded once, made once), no LLM asked; the reply says what was made, and joins the conversation."""
    assert session.answer is not None
    results = []
    for approval_id in session.answering:
        decision = ApprovalDecision(approval_id=approval_id, approve=session.answer, by=f"chat:{request.session_id}")
        try:
            results.append(await workflow.execute_child_workflow(
                DecideChange.run, DecideChangeInput(decision=decision, session_id=request.session_id),
                id=f"{workflow.info().workflow_id}-decide-{approval_id}"))
        except ChildWorkflowError as e:
            results.append(ChangeDecided(problem=f"#{approval_id} could not be answered: {activity_cause(e)}"))
    text = answered_text(results)
    await workflow.execute_activity_method(
        ChatActivities.chat_answer, ChatAnswer(conversation_id=conversation, text=text, now=workflow.now()), **STORE)
    return ChatReply(session_id=request.session_id, ok=True, reply=text, said_by="engine",
                     changes=[r.change for r in results if r.change is not None])
