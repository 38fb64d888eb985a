"""Conversations (the Agent's and the chats' messages), the notices a chat delivered (for replies to
them) and the engine's key/value state.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func
from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from adapters.store.base import Repository
from adapters.store.tables import MessageRow, NoticeRow, StateRow
from skills.llm.agent import ChatMessage

_MESSAGE_FIELDS = set(ChatMessage.model_fields)


class ConversationRepository(Repository):
    """Messages, delivered notices and engine state."""

    def append_messages(self, conversation_id: str, messages: list[ChatMessage], now: datetime) -> int:
        """Append messages in order; return the sequence number of the last one."""
        with self.session() as session:
            last = session.exec(select(func.max(MessageRow.seq))
                                .where(MessageRow.conversation_id == conversation_id)).one()
            seq = last or 0
            for message in messages:
                seq += 1
                session.add(MessageRow(conversation_id=conversation_id, seq=seq, created_at=now,
                                       **message.model_dump(mode="json")))
            session.commit()
            return seq

    def load_messages(self, conversation_id: str) -> list[ChatMessage]:
        with self.session() as session:
            rows = session.exec(select(MessageRow).where(MessageRow.conversation_id == conversation_id)
                                .order_by(MessageRow.seq))  # type: ignore[arg-type]
            return [ChatMessage.model_validate(row.model_dump(include=_MESSAGE_FIELDS)) for row in rows]

    def get_message(self, conversation_id: str, seq: int) -> ChatMessage | None:
        with self.session() as session:
            row = session.exec(select(MessageRow).where(MessageRow.conversation_id == conversation_id,
                                                        MessageRow.seq == seq)).first()
            return ChatMessage.model_validate(row.model_dump(include=_MESSAGE_FIELDS)) if row else None

    def has_tool_result(self, conversation_id: str, tool_call_id: str) -> bool:
        """Whether a tool call was already answered (a retried activity must not answer twice)."""
        with self.session() as session:
            query = select(MessageRow.id).where(MessageRow.conversation_id == conversation_id,
                                                MessageRow.tool_call_id == tool_call_id)
            return session.exec(query).first() is not None

    def get_state(self, key: str) -> dict[str, Any] | None:
        with self.session() as session:
            row = session.get(StateRow, key)
            return dict(row.value) if row else None

    def set_state(self, key: str, value: dict[str, Any], now: datetime) -> None:
        with self.session() as session:
            row = session.get(StateRow, key) or StateRow(key=key, updated_at=now)
            row.value, row.updated_at = value, now
            session.add(row)
            session.commit()

    def record_notice(self, chat_id: str, message_ids: list[int], run_id: str, now: datetime) -> None:
        """Remember that these messages of ``chat_id`` told of ``run_id`` (again: unchanged)."""
        with self.session() as session:
            for message_id in message_ids:
                if session.get(NoticeRow, (chat_id, message_id)) is None:
                    session.add(NoticeRow(chat_id=chat_id, message_id=message_id, run_id=run_id, sent_at=now))
            try:
                session.commit()
            except IntegrityError:  # another worker recorded it first: the same fact
                session.rollback()

    def notice_run(self, chat_id: str, message_id: int) -> str | None:
        """The run a delivered notice told of, or None (not a notice, or its run was pruned)."""
        with self.session() as session:
            row = session.get(NoticeRow, (chat_id, message_id))
            return row.run_id if row is not None else None
