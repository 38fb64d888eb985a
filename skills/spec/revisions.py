"""A skill's revisions: every change to its definition keeps one (who made it, when, what changed), so
``skills history`` can list them and ``skills revert`` restore one.

Pure: the store writes a revision in the transaction of its change (``adapters.store``); this module
says what a revision holds and what changed between two specs.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

RevisionAction = Literal["created", "updated", "deleted", "reverted"]

BY_CLIENT = "client"
"""Who made a change when the road it came by did not say: attribution only, never a privilege."""
BY_ENGINE = "engine"
"""A change the engine made on its own (a skill paused over its token budget)."""

MAX_BY_CHARS = 100
"""The ``by`` of a revision is cut to this many characters."""
MAX_VALUE_CHARS = 500
"""A changed field's value longer than this (as JSON) is kept as its first characters and its length."""
DEFAULT_MAX_REVISIONS = 50
"""Revisions kept a skill unless the settings say otherwise: the oldest go first."""


class FieldChange(BaseModel):
    """One field of a skill that a change altered: its value before and after (None: absent)."""

    field: str
    before: Any = None
    after: Any = None


class Revision(BaseModel):
    """One change to a skill, as ``skills history`` shows it."""

    id: int
    skill_id: int
    skill_name: str
    agent_id: str
    rev: int
    """1, 2, ... per skill: what ``skills revert REF REV`` names."""
    at: datetime
    by: str
    action: RevisionAction
    spec: dict[str, Any] = Field(default_factory=dict)
    """The skill's spec after the change (a delete: before it), as JSON: what a revert restores."""
    diff: list[FieldChange] = Field(default_factory=list)


def diff_specs(before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[FieldChange]:
    """The fields whose values differ between two specs (as JSON), in the order of the later one; each
    value bounded (``MAX_VALUE_CHARS``). A creation lists every field it set, a deletion every field it had."""
    before, after = before or {}, after or {}
    keys = [*after, *(key for key in before if key not in after)]
    return [FieldChange(field=key, before=bounded(before.get(key)), after=bounded(after.get(key)))
            for key in keys if before.get(key) != after.get(key)]


def bounded(value: Any) -> Any:
    """``value`` itself when its JSON is short, else a string of its first characters and its length."""
    text = json.dumps(value, default=str, ensure_ascii=False)
    if len(text) <= MAX_VALUE_CHARS:
        return value
    return f"{text[:MAX_VALUE_CHARS]}… ({len(text)} characters)"


def by_of(by: str | None) -> str:
    """A revision's ``by``: the road's word, trimmed and bounded; ``client`` when none was said."""
    by = " ".join((by or "").split())[:MAX_BY_CHARS]
    return by or BY_CLIENT


def revert_data(revision: Revision) -> dict[str, Any]:
    """What a revert registers: the revision's whole spec, every field said (a field it left unset, None,
    is unset again)."""
    return dict(revision.spec)


def changed_fields(revision: Revision) -> list[str]:
    """The names of the fields a revision changed (a creation: none, it set them all)."""
    return [] if revision.action == "created" else [change.field for change in revision.diff]
