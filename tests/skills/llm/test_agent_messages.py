"""What the model is sent of a conversation: the latest system prompt, then a bounded window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from skills.llm.agent import (
    NATIVE_RULES,
    ChatMessage,
    ToolCallMessage,
    chat_opening,
    for_the_model,
    structured_prompt,
)

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


def test_the_time_comes_last_so_turns_share_the_prompt_before_it() -> None:
    """An endpoint that keeps what it has read (llama.cpp's prompt cache) reads again only what differs: on 2
    cores, about 60 tokens a second, so a time in the second line cost every turn its whole prompt."""
    disclosure = "<skill_instructions name=\"cron-scheduling\">...</skill_instructions>"
    first, later = (chat_opening("hi", now, "Europe/Berlin", disclosure, ["memory_store_skill"])[0].content or ""
                    for now in (NOW, NOW + timedelta(minutes=7)))
    shared = len(first) - len(first.rpartition("\n\n")[2])
    assert first[:shared] == later[:shared] and first != later
    assert first.rpartition("\n\n")[2] == "The current time is Sunday 2026-11-22 10:00 (Europe/Berlin), the user's time zone."


def test_a_structured_turn_is_not_told_to_call_tools() -> None:
    disclosure = "<skill_instructions name=\"cron-scheduling\">...</skill_instructions>"
    system = chat_opening("hi", NOW, "UTC", disclosure, ["get_tool_catalog", "memory_store_skill"],
                          untrusted=["mail"])[0].content or ""
    said, known = "Answer with ONE JSON object.", "The user's skills now:\n- stand up"
    prompt = structured_prompt(system, said, known)
    assert "Your tools:" not in prompt and NATIVE_RULES not in prompt and "\n\n\n" not in prompt
    assert "The skill mail is not trusted" in prompt  # what the turn must know stays
    # The playbooks, written for tool calls and changing with every message, are left out: the answer's shape
    # says what they said, and the prompt holds from one turn to the next but for the skills and the time.
    assert disclosure not in prompt and "Skills that apply" not in prompt
    order = [prompt.index(part) for part in ("You are the user's assistant", said, known, "The current")]
    assert order == sorted(order) and prompt.endswith("(UTC), the user's time zone.")
    assert structured_prompt(system, said) == prompt.replace(f"\n\n{known}", "")
