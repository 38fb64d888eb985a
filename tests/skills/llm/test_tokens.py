"""The token estimate a request is fitted by: close to a real count, and erring high."""

from __future__ import annotations

import json

from skills.llm.tokens import MESSAGE_OVERHEAD, REQUEST_OVERHEAD, estimate_tokens, request_tokens

PROSE = "Remind the user to drink a glass of water every hour, in the first two minutes of the hour."


def test_prose_is_about_one_token_a_word() -> None:
    words = len(PROSE.split())
    assert words <= estimate_tokens(PROSE) <= words + 6


def test_json_costs_more_per_character_than_prose() -> None:
    schema = json.dumps({"type": "object", "properties": {"in_minutes": {"type": "number"},
                                                          "schedule": {"type": "string"}}})
    assert len(schema) / estimate_tokens(schema) < len(PROSE) / estimate_tokens(PROSE)


def test_long_words_numbers_and_empty_text() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("internationalization") == 4  # a long word: several pieces
    assert estimate_tokens("2026") == 2  # digits go by three
    assert estimate_tokens("Ünïcödé wörds") == 2


def test_a_request_counts_its_messages_tool_calls_and_tools() -> None:
    messages = [{"role": "system", "content": "You help."}, {"role": "user", "content": "hi"},
                {"role": "assistant", "content": None,
                 "tool_calls": [{"id": "1", "type": "function",
                                 "function": {"name": "memory_list_skills", "arguments": "{}"}}]}]
    tool = {"type": "function", "function": {"name": "memory_list_skills", "parameters": {"type": "object"}}}
    bare = request_tokens(messages)
    assert bare > REQUEST_OVERHEAD + 3 * MESSAGE_OVERHEAD
    assert request_tokens(messages, [tool]) > bare
