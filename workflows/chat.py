"""ChatTurn: one message of a conversation with the assistant, as a workflow.

The message is matched to the SKILL.md playbooks (the cron-scheduling one teaches the
model to turn "remind me in 5 minutes" into a skill), and the Agent loop runs with
the management tools: what the model sends takes the registration road of every
other client, so its slips are normalized and its mistakes come back to it as errors
it can fix in its next step. The conversation is kept in the store, by session.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ChildWorkflowError

from skills.naming import CHAT_TURN

with workflow.unsafe.imports_passed_through():
    from activities.chat import ChatActivities, ChatAnswer, ChatPrepare, ChatProposals, ChatSession
    from skills.approvals import ApprovalDecision
    from skills.messages import AgentLoopState, ChatInput, ChatReply, LoopLimits
    from skills.naming import chat_conversation_id
    from skills.proposals import ChangeDecided, DecideChangeInput, answered_text
    from workflows.agent_loop import agent_loop, open_toolsets
    from workflows.failures import activity_cause
    from workflows.options import FAIL_ON_BUG, STORE
    from workflows.proposals import DecideChange

REPLY_CHARS = 16_000
"""A chat's reply is the model's whole answer, up to four Telegram messages."""


@workflow.defn(name=CHAT_TURN, failure_exception_types=FAIL_ON_BUG)
class ChatTurn:
    @workflow.run
    async def run(self, request: ChatInput) -> ChatReply:
        conversation = chat_conversation_id(request.session_id)
        session = await workflow.execute_activity_method(
            ChatActivities.prepare_chat, ChatPrepare(conversation_id=conversation, message=request.message,
                                                now=workflow.now(), reply_to=request.reply_to,
                                                reply_to_notice=request.reply_to_notice,
                                                agent_id=request.agent_id), **STORE,
        )
        if session.answer is not None:
            return await _answer(request, conversation, session)
        # The matched skills' own toolsets join this turn's sandbox; one that cannot start is left out.
        toolset_tools, grants, unavailable = await open_toolsets(session.toolsets, session.tool_timeout_seconds)
        for reason in unavailable:
            workflow.logger.warning("chat turn without a matched skill's toolsets: %s", reason)
        end = await agent_loop(
            AgentLoopState(conversation_id=conversation, model=session.model,
                           tools=list(dict.fromkeys([*session.tools, *toolset_tools])),
                           script_skills=session.script_skills, toolsets=grants),
            LoopLimits(max_steps=session.max_steps, token_cap=session.token_cap,
                       malformed_limit=session.malformed_limit, llm_timeout_seconds=session.llm_timeout_seconds,
                       tool_timeout_seconds=session.tool_timeout_seconds,
                       script_timeout_seconds=session.script_timeout_seconds, answer_chars=REPLY_CHARS),
        )
        proposed = [c["approval_id"] for c in end.state.changes if c.get("action") == "proposed"]
        proposals = []
        if proposed:  # the approvals as recorded: exactly what would be stored, for the reply to show
            proposals = await workflow.execute_activity_method(ChatActivities.chat_proposals,
                                                               ChatProposals(ids=proposed), **STORE)
        return ChatReply(session_id=request.session_id, ok=end.status == "success", reply=end.summary,
                         changes=[c for c in end.state.changes if c.get("action") != "proposed"],
                         matched=session.matched, unavailable=[*session.untrusted, *unavailable],
                         proposals=[p for p in proposals if p.pending],
                         prompt_tokens=end.state.prompt_tokens, completion_tokens=end.state.completion_tokens,
                         left_out=end.state.left_out)


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
    return ChatReply(session_id=request.session_id, ok=True, reply=text,
                     changes=[r.change for r in results if r.change is not None])
