"""A model's choice among the candidates the ranker found: one of their names, or none.

The ranker (``skills.skillmd.matching``) finds candidates; it does not judge them. When the first is not
sure (:attr:`SkillMatch.sure`), someone able to judge chooses: a model shown the message and at most
:data:`MAX_CANDIDATES` candidates' names and descriptions answers one JSON object whose ``skill`` is one of
those names or ``"none"``, held to it by a schema (an enum: the grammar of llama.cpp, vLLM or Ollama
cannot write another name). Its answer is read by :func:`read_choice`, which accepts only a name offered.

Pure code: the caller sends :func:`choice_request`'s messages and ``response_format`` to its endpoint.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MAX_CANDIDATES = 5
"""Candidates shown at most: the top few, as the design hands a model (a 1.5B model reads five
descriptions in about 300 tokens)."""
DESCRIPTION_CHARS = 240
"""Characters of each description shown: the first sentence or two, where a description says what it is for."""
NONE = "none"


@dataclass(frozen=True)
class Candidate:
    name: str
    description: str


def choice_request(message: str, candidates: Sequence[Candidate]) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """The chat messages and the ``response_format`` that ask a model to choose for ``message`` among the
    first :data:`MAX_CANDIDATES` ``candidates`` (the ranker's order), or none. The system prompt is the
    same for every message (an endpoint's prompt cache holds it); the candidates go in the user's turn."""
    shown = list(candidates)[:MAX_CANDIDATES]
    names = [c.name for c in shown]
    system = ("You pick the skill that helps with the user's message. You are shown the message and a few "
              "skills, each with its name and what it is for. Answer with ONE JSON object: "
              '{"skill": "<name>"} naming the one skill made for what the message asks, or {"skill": "none"} '
              "when none of them is: ordinary conversation, or a task none of them does. Do not pick a skill "
              "only because it shares a word with the message.")
    listing = "\n".join(f"- {c.name}: {_short(c.description)}" for c in shown)
    user = f"Message: {message.strip()}\n\nSkills:\n{listing}\n\nWhich skill, or none?"
    schema = {"type": "object", "properties": {"skill": {"type": "string", "enum": [*names, NONE]}},
              "required": ["skill"], "additionalProperties": False}
    response_format = {"type": "json_schema", "json_schema": {"name": "skill_choice", "strict": True,
                                                              "schema": schema}}
    return [{"role": "system", "content": system}, {"role": "user", "content": user}], response_format


def read_choice(answer: str, candidates: Sequence[Candidate]) -> str | None:
    """The candidate's name the answer chose, or None for "none" and for anything that names no candidate
    shown (an endpoint that ignored the schema may write anything: nothing offered is never chosen)."""
    names = {c.name for c in list(candidates)[:MAX_CANDIDATES]}
    text = answer.strip()
    try:
        value = json.loads(text)
    except ValueError:
        value = text.strip('"')
    if isinstance(value, dict):
        value = value.get("skill")
    return value if isinstance(value, str) and value in names else None


def _short(description: str) -> str:
    text = " ".join(description.split())
    return text if len(text) <= DESCRIPTION_CHARS else text[:DESCRIPTION_CHARS - 1].rsplit(" ", 1)[0] + "…"
