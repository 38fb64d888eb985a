"""Conversations and the engine's state in the store, on SQLite and PostgreSQL."""

from __future__ import annotations

from adapters.store import Store
from skills.llm.agent import ChatMessage
from tests.adapters.store.helpers import T0, create, spec


def test_conversations_and_state(store: Store) -> None:
    assert store.conversations.append_messages("c1", [ChatMessage(role="user", content="hi")], T0) == 1
    last = store.conversations.append_messages("c1", [
        ChatMessage(role="assistant", content=None, tool_calls=[{"id": "t1", "name": "x.y", "arguments": "{}"}]),
        ChatMessage(role="tool", content="ok", tool_call_id="t1")], T0)
    assert last == 3 and [m.role for m in store.conversations.load_messages("c1")] == ["user", "assistant", "tool"]
    assert store.conversations.get_message("c1", 2).tool_calls[0].name == "x.y"  # type: ignore[union-attr]
    assert store.conversations.has_tool_result("c1", "t1") and not store.conversations.has_tool_result("c2", "t1")
    assert store.conversations.get_state("llm") is None
    store.conversations.set_state("llm", {"ok": False}, T0)
    store.conversations.set_state("llm", {"ok": True}, T0)
    assert store.conversations.get_state("llm") == {"ok": True}
    store.skills.mark_notified(create(store, spec()), T0)
