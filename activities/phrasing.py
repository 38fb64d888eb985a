"""The schedule read from the user's words (``skills.when.phrasing``), at the two points a chat uses it.

- ``activities.phrase_check.checked_summary``: a proposal's summary, with a line for each way its schedule
  contradicts the message it answers ("check: you said weekdays; this fires every day");
- :class:`PhrasingActivities.propose_reminder`: a plain reminder proposed with no model. The skill takes
  the same road as one a model proposes (``Proposals``: normalized, validated against the live catalog,
  recorded for the owner's yes), so the owner confirms it exactly as any other.
"""

from __future__ import annotations

import asyncio
import logging

from temporalio import activity

from activities.proposals import ChatCall, Proposals
from adapters.store import Store
from config.settings import Settings
from skills.display import shown
from skills.errors import SkillNotFoundError, SkillsError
from skills.messages.chat import ReminderProposed, ReminderRequest

logger = logging.getLogger(__name__)

NO_MODEL = "Read without the model (0 tokens): "
"""How the reply of a reminder proposed with no model begins: the owner knows which path was taken."""


class PhrasingActivities:
    def __init__(self, store: Store, settings: Settings, proposals: Proposals | None) -> None:
        """``proposals`` None: changes are made without the owner's yes (``SKILLS_CHAT_CONFIRM_CHANGES=false``);
        then no reminder is read here, and the model makes it as it would."""
        self.store = store
        self.settings = settings
        self.proposals = proposals

    @activity.defn
    async def propose_reminder(self, request: ReminderRequest) -> ReminderProposed:
        """Propose the plain reminder ``message`` asks for, with no model; nothing when it is not one, or
        when the proposal cannot be made as read (a name taken, a tool missing): the model takes it then."""
        if self.proposals is None or not self.settings.chat_plain_reminders:
            return ReminderProposed()
        from skills.when.phrasing import plain_reminder  # with the first reminder, not the worker's start

        # Off the event loop: the reader is linear (RE2) and reads at most MAX_MESSAGE characters, but it is CPU
        # work on anyone's words, and the loop runs every other activity's heartbeats.
        reminder = await asyncio.to_thread(plain_reminder, request.message, request.now, self.settings.timezone)
        if reminder is None:
            return ReminderProposed()
        skill = reminder.skill(self.settings.notifier_tool)
        seq = await asyncio.to_thread(self._free, skill["name"], request.conversation_id)
        if seq is None:
            return ReminderProposed()  # one of that name exists: the model asks whether to change it
        call = ChatCall(request.conversation_id, seq, "plain-reminder")
        try:
            result = await self.proposals.propose("memory_store_skill", skill, call)
        except SkillsError as e:
            logger.info("plain reminder left to the model: %s", e)
            return ReminderProposed()
        approval_id = (result.structured_content or {}).get("approval_id") if result is not None else None
        if approval_id is None:
            return ReminderProposed()
        proposal = await asyncio.to_thread(self.store.approvals.get_approval, int(approval_id))
        reply = (f"{NO_MODEL}a reminder {reminder.reading.said}: \"{shown(reminder.text)}\". Proposed, NOT made "
                 f"(proposal #{proposal.id}): reply yes to make it, or no to cancel.")
        return ReminderProposed(proposal=proposal, reply=reply)

    def _free(self, name: str, conversation_id: str) -> int | None:
        """The conversation's length (the proposal's key: the same on a retry, nothing is appended between),
        or None when a skill of ``name`` exists."""
        try:
            self.store.skills.find_skill(name, self.settings.default_agent_id)
            return None
        except SkillNotFoundError:
            return len(self.store.conversations.load_messages(conversation_id))
