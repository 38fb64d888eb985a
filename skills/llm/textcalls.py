"""Tool calls a model wrote as text: read as the calls they are.

A small model offered tools often answers with the call itself as its reply's text (Qwen2.5-Coder 1.5B
on llama.cpp did, 3 times out of 3): a bare ``{"name": "memory_store_skill", "arguments": {...}}``, or
Qwen's own ``<tool_call>{...}</tool_call>`` block that the server did not parse. Read only as text, the
call would reach the user as the reply and nothing would be done.

What is read, and nothing else:
- a whole reply that is one JSON object (or a short list of them), fenced in ```json or not, each
  ``{"name": ..., "arguments": {...}}``, ``{"name": ..., "parameters": {...}}``,
  ``{"function": "name", "parameters"|"arguments": {...}}`` or ``{"function": {"name": ..., "arguments": ...}}``;
- ``<tool_call>...</tool_call>`` blocks, each holding one such object; text around them stays the reply.

Bounded: a reply past ``MAX_CHARS`` and more than ``MAX_CALLS`` calls are text. Every name must be one of
the tools offered to this turn (the sandbox still decides what runs); one that is not leaves the whole
reply as text. Pure code, no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from skills import linear

MAX_CHARS = 16_000
"""A reply longer than this is text, whatever it holds."""
MAX_CALLS = 3
"""At most this many calls read from one reply."""

# On RE2 (``skills.linear``): a reply is the model's, and the model may be led by what a tool returned. With
# Python's re, "```" and 15,000 newlines took _FENCE 8 CPU s, and unclosed <tool_call>s were quadratic.
MAX_NAME = 80
"""Characters of a made-up tool's name the engine repeats to the owner."""
_BLOCK = linear.compile(r"<tool_call>(.*?)</tool_call>", linear.DOTALL)
_FENCE = linear.compile(r"\A```[a-zA-Z]*\s*\n?(.*?)\n?```\Z", linear.DOTALL)


@dataclass(frozen=True)
class TextCall:
    name: str
    arguments: str
    """JSON text of an object, as a tool call's arguments travel."""


def read_text_calls(text: str | None, offered: Collection[str]) -> tuple[list[TextCall], str] | None:
    """The calls ``text`` writes, and the text left around them (``<tool_call>`` blocks only); None when
    it is no call of an offered tool, or more than this reads."""
    if not text or len(text) > MAX_CHARS or not offered:
        return None
    blocks = _BLOCK.findall(text)
    if blocks:
        if len(blocks) > MAX_CALLS:
            return None
        found = [_call(_json(block.strip()), offered) for block in blocks]
        if any(call is None for call in found):
            return None
        return [call for call in found if call is not None], _BLOCK.sub("", text).strip()
    body = unfenced(text)
    if not body.startswith(("{", "[")):
        return None
    value = _json(body)
    items = value if isinstance(value, list) else [value]
    if not items or len(items) > MAX_CALLS:
        return None
    calls = [_call(item, offered) for item in items]
    if any(call is None for call in calls):
        return None
    return [call for call in calls if call is not None], ""


def imagined_calls(text: str | None, known: Collection[str]) -> list[str]:
    """The tools ``text`` calls, written as a call (a ``<tool_call>`` block, or the whole text a call object or a
    list of them), that are none of ``known``: a small model's call of a tool it made up (``pay_electricity_bill``
    for "pay the electricity bill"). Empty when the text is anything else, or any call in it names a known tool."""
    if not text or len(text) > MAX_CHARS:
        return []
    blocks = _BLOCK.findall(text)
    values = [_json(block.strip()) for block in blocks] if blocks else None
    if values is None:
        body = unfenced(text)
        if not body.startswith(("{", "[")):
            return []
        value = _json(body)
        values = value if isinstance(value, list) else [value]
    if not values or len(values) > MAX_CALLS:
        return []
    names = [_call_name(value) for value in values]
    if any(name is None or name in known for name in names):
        return []
    return list(dict.fromkeys(name for name in names if name is not None))


def _call_name(value: Any) -> str | None:
    """The name a call object gives, whatever tool it names; None for an object that is no call."""
    if not isinstance(value, dict) or set(value) - {"name", "arguments", "parameters", "function", "type", "id"}:
        return None
    name = value.get("name")
    function = value.get("function")
    if isinstance(function, dict):
        name = function.get("name")
    elif isinstance(function, str) and name is None:
        name = function
    arguments = value.get("arguments", value.get("parameters", {}))
    if not isinstance(name, str) or not name.strip() or not isinstance(arguments, dict | str):
        return None
    return name.strip()[:MAX_NAME]


def unfenced(text: str) -> str:
    """``text`` without the ```json fence a model (or llama.cpp's grammar for a schema) may put around JSON."""
    body = text.strip()
    fenced = _FENCE.match(body)
    return fenced.group(1).strip() if fenced else body


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _call(value: Any, offered: Collection[str]) -> TextCall | None:
    """One call object, in any of the shapes models write, naming an offered tool; None otherwise."""
    if not isinstance(value, dict):
        return None
    name, arguments = value.get("name"), value.get("arguments", value.get("parameters"))
    function = value.get("function")
    if isinstance(function, dict):  # the OpenAI wire shape, written out
        name, arguments = function.get("name"), function.get("arguments", function.get("parameters"))
    elif isinstance(function, str) and name is None:
        name = function
    if not isinstance(name, str) or name not in offered:
        return None
    if isinstance(arguments, str):  # arguments as JSON text, as the wire carries them
        arguments = _json(arguments) if arguments.strip() else {}
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return None
    extra = set(value) - {"name", "arguments", "parameters", "function", "type", "id"}
    if extra:  # an object with other fields is data the model answered with, not a call
        return None
    return TextCall(name=name, arguments=json.dumps(arguments, ensure_ascii=False))
