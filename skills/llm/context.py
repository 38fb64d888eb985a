"""Fitting a request into the model's context: what is left out, and said so.

A local server commonly keeps 2,048 to 8,192 tokens of context and cuts a longer prompt
silently, from wherever its template puts the overflow: the model then answers without
the playbook's end, or without the user's message. So before a request is sent, its
tokens are estimated (``skills.llm.tokens``) and, when it would not leave room for the answer,
the engine itself drops, in this order:

1. the oldest exchanges of the conversation (whole: a cut falls before a user message,
   so no tool result loses the call it answers), never the current message and what
   followed it;
2. the disclosed skills of the system prompt, lowest ranked first (the last block:
   disclosure puts the best match first), ``<available_skills>`` before instructions.

The system prompt's core (who the model is, the time, the tools) is never dropped. What
was left out comes back as sentences the chat shows the user.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from skills import linear
from skills.llm.agent import ChatMessage, questions
from skills.llm.tokens import request_tokens

DEFAULT_CONTEXT = 8_192
"""The context assumed when neither ``SKILLS_LLM_CONTEXT`` nor the endpoint's model list says."""
OPENAI_CONTEXT = 128_000
"""The same for the OpenAI API itself (no ``SKILLS_LLM_BASE_URL``), whose models hold 128k tokens or more."""

# The system prompt holds SKILL.md text: on RE2 (``skills.linear``), since with Python's re 20,000 blank lines took
# this pattern 3.4 CPU s, and as many unclosed <skill_instructions> 2.6 s.
_BLOCK = linear.compile(r"\n*(<skill_instructions name=\"([^\"]*)\">.*?</skill_instructions>|"
                        r"<available_skills>.*?</available_skills>|\[\d+ more skills not listed[^\]]*\])", linear.DOTALL)


def answer_reserve(context: int) -> int:
    """Tokens kept free for the answer: an eighth of the context, from 256 to 1,024."""
    return max(256, min(1_024, context // 8))


class Fitted(BaseModel):
    messages: list[ChatMessage]
    tokens: int
    """The estimate of the request as it will be sent."""
    left_out: list[str] = Field(default_factory=list)
    """What was dropped to fit, as sentences for the user (empty: nothing)."""


def fit_request(messages: Sequence[ChatMessage], tools: Sequence[Mapping[str, Any]], context: int) -> Fitted:
    """``messages`` (the system prompt first, as ``skills.llm.agent.for_the_model`` gives them) made to fit
    ``context`` tokens with room for the answer."""
    budget = context - answer_reserve(context)
    system = [m for m in messages[:1] if m.role == "system"]
    conversation = list(messages[len(system):])

    def size() -> int:
        return request_tokens([m.to_openai() for m in (*system, *conversation)], tools)

    tokens = size()
    if tokens <= budget:
        return Fitted(messages=[*system, *conversation], tokens=tokens)
    left_out: list[str] = []
    asked = questions(conversation)
    dropped = 0
    while tokens > budget and len(asked) > 1:
        cut = asked[1] - asked[0]
        dropped += cut
        conversation = conversation[cut:]
        asked = [i - cut for i in asked[1:]]
        tokens = size()
    if dropped:
        left_out.append(f"{dropped} earlier message{'s' if dropped != 1 else ''} of this conversation")
    if tokens > budget and system and system[0].content:
        text = system[0].content
        for block in reversed(list(_BLOCK.finditer(text))):
            text = text.replace(block.group(0), "", 1)
            system = [system[0].model_copy(update={"content": text})]
            name = block.group(2)
            if not block.group(1).startswith("["):  # the count of unlisted skills goes with their list
                left_out.append(f"the instructions of the skill {name}" if name is not None
                                else "the list of other skills")
            tokens = size()
            if tokens <= budget:
                break
    if tokens > budget:
        left_out.append(f"nothing more could go: the request is still about {tokens:,} tokens, over the "
                        f"{budget:,} that leave room for an answer")
    return Fitted(messages=[*system, *conversation], tokens=tokens, left_out=left_out)


def context_from_model_entry(entry: Mapping[str, Any]) -> int | None:
    """A model's context as an endpoint's ``/v1/models`` entry states it, under the names servers use:
    ``context_length`` (LM Studio, OpenRouter), ``max_model_len`` (vLLM), ``context_window``,
    ``max_context_length``, ``meta.n_ctx``. Not llama.cpp's ``meta.n_ctx_train``: that is what the model
    was trained for, not the ``-c`` the server runs it with, and a request fitted to it would be cut."""
    meta = entry.get("meta") if isinstance(entry.get("meta"), Mapping) else {}
    for value in (entry.get("context_length"), entry.get("max_model_len"), entry.get("context_window"),
                  entry.get("max_context_length"), meta.get("n_ctx")):
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None
