"""Piped Direct plans: a step may use what an earlier step returned, at zero tokens.

A parameter may hold placeholders:

- ``{{steps.fetch.result}}`` (or the short ``{{fetch.result}}``): the
  text result of the earlier step ``fetch``;
- ``{{steps.fetch.items.0.title}}`` (or ``{{fetch.structured.items.0.title}}``): a field
  of its structured content;
- ``{{now}}``, ``{{now+2h}}``, ``{{today}}``: the fire's time in the skill's zone;
- ``{{event.data.sender}}`` (or the short ``{{event.sender}}``), ``{{event.name}}``,
  ``{{event.id}}``, ``{{event.time}}``, ``{{event}}``: the event that started the run (an
  event-type skill's; ``{{steps.event.result}}`` reaches a step whose id is ``event``);
- ``{{last.result}}``: this skill's last delivered result; ``{{skill:NAME.last}}``: the last
  delivered result of the skill NAME of the same agent (``skills.run.recall``; empty text when there is
  none yet). The workflow leaves a marker; the tool call activity reads the text from the store.

A parameter that is one placeholder and nothing else takes the value as it is (a
list stays a list); inside longer text a value is written as text (JSON for
structures). At registration ``analyse_plan`` says whether every placeholder can be
resolved by the engine alone; a plan with one that cannot (``{{a summary of the
emails}}``, a step that comes later) needs reasoning, and the safety net hands it
to the Agent tier.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import re2

from skills import linear
from skills.errors import PlanError
from skills.run.preflight import render_arguments
from skills.run.recall import MARKER, recalled_name
from skills.spec.models import PlanStep

_PLACEHOLDER = re2.compile(r"\{\{\s*(.*?)\s*\}\}")
"""RE2 runs in time linear in the text. Python's re tried every ``{{`` against the rest of the text:
12 s on 40 KB of ``{{``, minutes at the plan limit, at registration and again at every fire."""
_TIME = linear.compile(r"(now|today)(\s*[+-]\s*\d+\s*[mhdw])?")
_PATH = linear.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*")
_EVENT = linear.compile(r"event(\.[A-Za-z0-9_-]+)*")
EVENT_FIELDS = ("name", "id", "time", "data")


@dataclass(frozen=True)
class StepOutput:
    text: str
    structured: dict[str, Any] | None


@dataclass(frozen=True)
class Verdict:
    direct: bool
    reason: str


def analyse_plan(steps: list[PlanStep]) -> Verdict:
    """Whether the engine can run ``steps`` alone (Direct) and why."""
    earlier: set[str] = set()
    piped = 0
    for step in steps:
        for expression in _expressions(step.parameters):
            if _TIME.fullmatch(expression) or _EVENT.fullmatch(expression) or recalled_name(expression):
                continue
            reference = _reference(expression, earlier)
            if reference is None:
                shown = expression if len(expression) <= 80 else expression[:79] + "…"
                return Verdict(False, f"step '{step.id}' uses '{{{{{shown}}}}}', which is not the result of "
                                      "an earlier step: it needs reasoning")
            piped += 1
        earlier.add(step.id)
    if len(steps) == 1:
        return Verdict(True, "one step")
    if piped:
        return Verdict(True, f"{piped} placeholder(s) piped from earlier steps' results")
    return Verdict(True, "the steps are independent")


def resolve(parameters: dict[str, Any], outputs: dict[str, StepOutput], now: datetime, timezone: str,
            event: dict[str, Any] | None = None, nonce: str | None = None) -> dict[str, Any]:
    """The step's parameters with every placeholder filled from ``outputs``, the clock and the
    event that started the run (``{name, id, time, data}``; None when no event did). A remembered
    result's placeholder becomes a marker of ``nonce`` (``skills.run.recall.MARKER``), indexed in
    ``recall_names(parameters)``; without a nonce it cannot be filled."""
    timed = render_arguments(parameters, now, timezone)
    return _fill(timed, outputs, event, (nonce, recall_names(parameters)))


def event_placeholders(parameters: Any) -> list[str]:
    """The ``{{event…}}`` placeholders in ``parameters``."""
    return [e for e in _expressions(parameters) if _EVENT.fullmatch(e)]


def recall_names(parameters: Any) -> list[str]:
    """The skills whose last delivered result ``parameters`` use (``self`` for ``{{last.result}}``), each once."""
    return list(dict.fromkeys(name for e in _expressions(parameters) if (name := recalled_name(e))))


Recall = tuple[str | None, list[str]]


def _fill(value: Any, outputs: dict[str, StepOutput], event: dict[str, Any] | None, recall: Recall) -> Any:
    if isinstance(value, dict):
        return {k: _fill(v, outputs, event, recall) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, outputs, event, recall) for v in value]
    if not isinstance(value, str) or "{{" not in value:
        return value
    whole = _PLACEHOLDER.fullmatch(value.strip())
    if whole and "{{" not in whole.group(1):  # "{{a}} and {{b}}" fullmatches too, as "a}} and {{b"
        return _lookup(whole.group(1), outputs, event, recall)
    return _PLACEHOLDER.sub(lambda m: _as_text(_lookup(m.group(1), outputs, event, recall)), value)


def _lookup(expression: str, outputs: dict[str, StepOutput], event: dict[str, Any] | None, recall: Recall) -> Any:
    if _EVENT.fullmatch(expression):
        return _event_value(expression, event)
    name = recalled_name(expression)
    if name is not None:
        nonce, names = recall
        if nonce is None or name not in names:
            raise PlanError(f"'{{{{{expression[:80]}}}}}' is a remembered result, read when the call is made")
        return MARKER.format(nonce=nonce, index=names.index(name))
    reference = _reference(expression, set(outputs))
    if reference is None:
        shown = expression if len(expression) <= 80 else expression[:79] + "…"  # a run's summary, not a dump
        raise PlanError(f"'{{{{{shown}}}}}' is not the result of an earlier step")
    step, path = reference
    output = outputs[step]
    if path in ([], ["result"], ["text"]):
        return output.text
    value: Any = output.structured
    if value is None:
        try:
            value = json.loads(output.text)
        except (ValueError, RecursionError):
            # RecursionError: JSON nested past what the parser can take is no structure to walk either.
            raise PlanError(f"step '{step}' returned text, not structured content: no '{'.'.join(path)}'") from None
    try:
        return _walk(value, path)
    except LookupError:
        raise PlanError(f"the result of step '{step}' has no '{'.'.join(path)}'") from None


def _event_value(expression: str, event: dict[str, Any] | None) -> Any:
    """``event``, ``event.name``, ``event.data.a.0.b``, or the short ``event.a.0.b`` (in the data)."""
    if event is None:
        raise PlanError(f"'{{{{{expression}}}}}' is filled from an event, and this run was not started by one")
    path = expression.split(".")[1:]
    if path and path[0] not in EVENT_FIELDS:
        path = ["data", *path]
    try:
        return _walk(event, path)
    except LookupError:
        raise PlanError(f"the event '{event.get('name')}' has no '{'.'.join(path)}' "
                        f"(for '{{{{{expression}}}}}')") from None


def _walk(value: Any, path: list[str]) -> Any:
    """``value`` followed down ``path`` (dict keys, list indexes); LookupError where it ends."""
    for key in path:
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            raise LookupError(key)
    return value


def _reference(expression: str, known: set[str]) -> tuple[str, list[str]] | None:
    """``steps.<id>.<path>`` or ``<id>.<path>`` with a known step id, as (id, path)."""
    if not _PATH.fullmatch(expression):
        return None
    parts = expression.split(".")
    if parts[0] == "steps" and len(parts) > 1:
        parts = parts[1:]
    if parts[0] not in known:
        return None
    path = parts[1:]
    if path[:1] == ["structured"]:
        path = path[1:]
    return parts[0], path


def _expressions(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [e for v in value.values() for e in _expressions(v)]
    if isinstance(value, list):
        return [e for v in value for e in _expressions(v)]
    if isinstance(value, str):
        return _PLACEHOLDER.findall(value)
    return []


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
