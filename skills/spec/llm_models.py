"""A skill's ``model`` and ``fallback_models``: their shape, and their check against the LLM endpoint's
model list. Pure code: the list is handed in by the registration activity, which asks the endpoint.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from skills.spec.fields import Problems
from skills.suggest import did_you_mean

MAX_MODEL_NAME = 200
MAX_FALLBACK_MODELS = 5
"""Each fallback may cost a turn's whole retry budget (``skills.run.deadline`` counts them into a run's
timeout): a few are a safety net, more are a run that takes an hour to fail."""
MODEL_NAME = re.compile(r"[^\s\x00-\x1f\x7f]{1,200}")
"""A model's name as endpoints spell them (``gpt-4o-mini``, ``meta-llama/Llama-3-8B``, ``qwen2.5:7b``):
no spaces or control characters."""


@dataclass(frozen=True)
class ModelList:
    """The endpoint's models (``GET /v1/models``), or why it gave none (``names`` None)."""

    names: frozenset[str] | None
    reason: str = ""


def model_name(value: Any, field: str, problems: Problems) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        problems.add(field, f"must be a string (a model's name), got {type(value).__name__}")
        return None
    if not MODEL_NAME.fullmatch(value.strip()):
        problems.add(field, f"'{value[:80]}' is not a model name: at most {MAX_MODEL_NAME} characters, "
                            "no spaces or control characters")
        return None
    return value.strip()


def fallback_models(value: Any, model: str | None, notes: list[str], problems: Problems) -> list[str]:
    """The ordered fallback list: a list of names, or one string of comma-separated names."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        value = [part for part in value.split(",") if part.strip()]
    if not isinstance(value, list):
        problems.add("fallback_models", f"must be a list of model names, got {type(value).__name__}")
        return []
    if len(value) > MAX_FALLBACK_MODELS:
        problems.add("fallback_models", f"has {len(value)} models; at most {MAX_FALLBACK_MODELS}")
        return []
    names: list[str] = []
    for i, item in enumerate(value):
        name = model_name(item, f"fallback_models[{i}]", problems)
        if name is None:
            if item is None or isinstance(item, str):
                problems.add(f"fallback_models[{i}]", "is empty: give a model's name")
            continue
        if name == model or name in names:
            notes.append(f"fallback_models: '{name}' listed twice; tried once")
            continue
        names.append(name)
    return names


def check_models(fields: dict[str, Any], direct: bool, models: Callable[[bool], ModelList] | None,
                 notes: list[str], problems: Problems) -> None:
    """Check an Agent-tier skill's named models against the endpoint's list; a note when there is none."""
    named = [("model", fields.get("model"))] + [(f"fallback_models[{i}]", name)
                                                for i, name in enumerate(fields.get("fallback_models") or [])]
    named = [(field, name) for field, name in named if name]
    if not named:
        return
    if direct:
        notes.append("model and fallback_models are used by the Agent tier only: this Direct-tier skill "
                     "makes no LLM call")
        return
    if models is None:
        return
    known = models(False)
    if known.names is not None and any(name not in known.names for _, name in named):
        known = models(True)  # a kept list may predate a model just added: ask again before refusing
    if known.names is None:
        notes.append(f"not checked against the LLM endpoint's models ({known.reason}): "
                     f"{', '.join(repr(name) for _, name in named)} accepted as given")
        return
    for field, name in named:
        if name not in known.names:
            problems.add(field, f"the LLM endpoint does not list the model '{name}'"
                                + did_you_mean(name, known.names, known.names if len(known.names) <= 10 else ()))
