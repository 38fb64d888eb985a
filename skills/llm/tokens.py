"""How many tokens a request will be, estimated without the model's tokenizer.

No tokenizer can be loaded offline for every model an endpoint may serve (``tiktoken``
downloads its tables; a local model's vocabulary is the endpoint's), so the estimate
counts the pieces a byte-pair tokenizer starts from: a word (with its leading space), up
to three digits, a run of punctuation, a run of whitespace. A short word is one token, a
long one one per five letters, punctuation one per two characters (JSON's ``": {"``
is rarely one token). Its calibration: llama.cpp's server with Qwen2.5-Coder 1.5B counted
the engine's old first chat request for "every weekday at 9 remind me to stand up" as about
8,100 prompt tokens (a measurement reported with the issue that asked for this); that request,
29,199 characters, is estimated at 8,303, 2.5 % over. The endpoint's own count is recorded
with every turn (``ChatMessage.prompt_tokens``) and logged beside the estimate
(``llm_turn``), so it can be checked on any model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

_PIECE = re.compile(r"""'(?:s|t|re|ve|m|ll|d)\b| ?[^\W\d_]+| ?\d{1,3}| ?[^\s\w]+|\s+""")

MESSAGE_OVERHEAD = 4
"""The chat template's tokens around each message (role markers, separators)."""

REQUEST_OVERHEAD = 12
"""The template's tokens around the whole request (the tools block's framing, the reply's opening)."""


def estimate_tokens(text: str) -> int:
    """The tokens ``text`` is likely to be (see the module's note on how close that is)."""
    count = 0
    for match in _PIECE.finditer(text):
        piece = match.group().lstrip(" ")
        if not piece or piece.isspace() or piece[0].isdigit():
            count += 1
        elif piece[0].isalpha():
            count += 1 if len(piece) <= 8 else -(-len(piece) // 5)
        else:
            count += -(-len(piece) // 2)
    return count


def message_tokens(message: Mapping[str, Any]) -> int:
    """One chat-completions message: its text, its tool calls, and the template around it."""
    count = MESSAGE_OVERHEAD + estimate_tokens(message.get("content") or "")
    for call in message.get("tool_calls") or []:
        function = call.get("function", {})
        count += estimate_tokens(function.get("name", "")) + estimate_tokens(function.get("arguments", "")) + 3
    return count


def tool_tokens(tool: Mapping[str, Any]) -> int:
    """One tool definition, as templates put it in the prompt: its JSON."""
    return estimate_tokens(json.dumps(tool, ensure_ascii=False))


def request_tokens(messages: Iterable[Mapping[str, Any]], tools: Iterable[Mapping[str, Any]] = ()) -> int:
    """A whole chat-completions request: messages and tool definitions."""
    return (REQUEST_OVERHEAD + sum(message_tokens(m) for m in messages)
            + sum(tool_tokens(t) for t in tools))
