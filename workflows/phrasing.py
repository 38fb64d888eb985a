"""A chat turn that needs no model: a plain reminder, read from the message and proposed (``skills.when.phrasing``).

ChatTurn asks here before its Agent loop. Only a message that may be a reminder reaches the activity (the
test is pure and clock-free, so the workflow can make it); the activity reads the schedule in the owner's
zone and records the proposal as a model's would be, or answers that the message is the model's.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities.chat import ChatActivities
    from activities.phrasing import PhrasingActivities
    from skills.messages.chat import ChatAnswer, ChatInput, ChatReply, ReminderRequest
    from workflows.options import STORE


async def no_model_reply(request: ChatInput, conversation: str, matched: list[str]) -> ChatReply | None:
    """The turn's reply when the message is a plain reminder (proposed, not made), else None."""
    # Imported with a chat's first turn, not with the worker: ``skills`` passes through the sandbox, so this is
    # the worker's own module, imported once (docs/performance.md, "Worker RSS").
    from skills.when.phrasing import looks_like_reminder

    if not looks_like_reminder(request.message):
        return None
    read = await workflow.execute_activity_method(
        PhrasingActivities.propose_reminder,
        ReminderRequest(conversation_id=conversation, message=request.message, now=workflow.now()), **STORE)
    if read.proposal is None:
        return None
    await workflow.execute_activity_method(
        ChatActivities.chat_answer, ChatAnswer(conversation_id=conversation, text=read.reply, now=workflow.now()),
        **STORE)
    return ChatReply(session_id=request.session_id, ok=True, reply=read.reply, said_by="engine", matched=matched,
                     proposals=[read.proposal])
