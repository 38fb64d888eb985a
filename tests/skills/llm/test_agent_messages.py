"""What the model is sent of a conversation: the latest system prompt, then a bounded window."""

from __future__ import annotations

from datetime import UTC, datetime

from skills.llm.agent import ChatMessage, ToolCallMessage, chat_opening, for_the_model

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)


def turn(n: int) -> list[ChatMessage]:
    """One chat turn as the store keeps it: system prompt, question, a tool call, its result, the answer."""
    return [
        *chat_opening(f"question {n}", NOW, "UTC", "", ["memory_list_skills"]),
        ChatMessage(role="assistant", tool_calls=[ToolCallMessage(id=f"c{n}", name="memory_list_skills",
                                                                  arguments="{}")]),
        ChatMessage(role="tool", tool_call_id=f"c{n}", content="no skills"),
        ChatMessage(role="assistant", content=f"answer {n}"),
    ]


def test_only_the_latest_system_prompt_goes_first() -> None:
    messages = [*turn(1), *turn(2)]
    sent = for_the_model(messages)
    assert [m.role for m in sent].count("system") == 1
    assert sent[0] is messages[5]  # turn 2's system prompt
    assert [m.content for m in sent if m.role == "user"] == ["question 1", "question 2"]


def test_a_long_session_is_cut_before_a_question_never_between_a_call_and_its_result() -> None:
    messages = [message for n in range(1, 31) for message in turn(n)]
    sent = for_the_model(messages, turns=3)
    assert [m.content for m in sent if m.role == "user"] == ["question 28", "question 29", "question 30"]
    assert sent[1].role == "user"
    called = {c.id for m in sent for c in m.tool_calls}
    answered = {m.tool_call_id for m in sent if m.role == "tool"}
    assert called == answered == {"c28", "c29", "c30"}


def test_a_short_session_and_a_skill_run_are_sent_whole() -> None:
    messages = turn(1)
    assert for_the_model(messages, turns=20) == for_the_model(messages) == messages
