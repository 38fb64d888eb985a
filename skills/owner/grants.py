"""Standing grants: the owner's rule that approves matching calls without asking.

A grant names a tool, optionally a skill, and optionally exact values for some of the call's arguments
(``where``: each argument, as a string, must equal the value). While it is live (not revoked, not expired),
a call that needs approval and matches it is recorded as already approved, ``decided_by`` ``grant:<id>``,
and made without waiting. Management tools are never grantable: a run cannot approve its own changes.

Pure: models, parsing and matching; the store keeps grants in the ``grants`` table.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, Field

from skills import linear
from skills.errors import FieldError
from skills.naming import MANAGEMENT_TOOLS
from skills.spec.limits import GRANT_MINUTES, MAX_GRANT_VALUE_BYTES, MAX_GRANT_WHERE

GRANT_PREFIX = "grant:"
"""How ``decided_by`` begins on an approval a grant gave."""

_DURATION = linear.compile(r"^\s*(\d{1,9})\s*([mhd])\s*$")
_UNIT_MINUTES = {"m": 1, "h": 60, "d": 24 * 60}
_ARGUMENT = linear.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,127}$")


class GrantRequest(BaseModel):
    """What the owner asks for (``skills grant``); checked by :func:`grant_problems` and by the worker."""

    tool: str
    skill: str | None = None
    """A skill's name or id; None: any skill's call of the tool."""
    agent_id: str | None = None
    where: dict[str, str] = Field(default_factory=dict)
    minutes: int | None = None
    """How long it lasts; None: until revoked."""
    by: str = "client"


class Grant(BaseModel):
    id: int
    tool: str
    skill_id: int | None = None
    skill_name: str = ""
    where: dict[str, str] = Field(default_factory=dict)
    created_at: datetime
    expires_at: datetime | None = None
    created_by: str = ""
    revoked_at: datetime | None = None

    def live(self, now: datetime) -> bool:
        return self.revoked_at is None and (self.expires_at is None or now < self.expires_at)

    def state(self, now: datetime) -> str:
        if self.revoked_at is not None:
            return "revoked"
        return "live" if self.live(now) else "expired"


class GrantChange(BaseModel):
    """The ``ChangeGrant`` workflow's input: create one, or revoke one."""

    action: Literal["grant", "revoke"]
    grant: GrantRequest | None = None
    grant_id: int | None = None


class GrantResult(BaseModel):
    ok: bool
    grant: Grant | None = None
    errors: list[FieldError] = Field(default_factory=list)


class GrantsQuery(BaseModel):
    all: bool = False
    """Revoked and expired ones too."""
    limit: int = Field(default=100, ge=1, le=1000)


def as_text(value: Any) -> str:
    """An argument as a ``where`` compares it: a string as it is, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)


def matches(grant: Grant, tool: str, skill_id: int | None, arguments: dict[str, Any], now: datetime) -> bool:
    """Whether ``grant`` approves this call now: live, the same tool, its skill (if it names one), and every
    ``where`` argument present with exactly that value."""
    if not grant.live(now) or grant.tool != tool or tool in MANAGEMENT_TOOLS:
        return False
    if grant.skill_id is not None and grant.skill_id != skill_id:
        return False
    return all(key in arguments and as_text(arguments[key]) == value for key, value in grant.where.items())


def parse_duration(text: str) -> int:
    """``30d``, ``12h``, ``90m`` as minutes; raises ValueError naming the field."""
    found = _DURATION.match(text or "")
    if found is None:
        raise ValueError(f"for: '{text}' is not a duration: give a number and a unit, m, h or d (30d, 12h, 90m)")
    minutes = int(found.group(1)) * _UNIT_MINUTES[found.group(2)]
    problem = GRANT_MINUTES.problem(minutes)
    if problem:
        raise ValueError(f"for: {problem} minutes (at most 365d)")
    return minutes


def parse_where(items: list[str]) -> dict[str, str]:
    """``ARG=VALUE`` items as a dict; raises ValueError naming the field and the item."""
    if len(items) > MAX_GRANT_WHERE:
        raise ValueError(f"where: at most {MAX_GRANT_WHERE} conditions (got {len(items)})")
    where: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not _ARGUMENT.match(key):
            raise ValueError(f"where: '{item}' is not ARG=VALUE with ARG an argument's name")
        if key in where:
            raise ValueError(f"where: argument '{key}' is given twice")
        where[key] = value
    return where


def grant_problems(request: GrantRequest) -> list[FieldError]:
    """What is wrong with a grant request on its face (the tool's existence is the worker's to check)."""
    errors: list[FieldError] = []
    if not request.tool or not request.tool.strip():
        errors.append(FieldError(field="tool", message="name the tool whose calls the grant approves"))
    elif request.tool in MANAGEMENT_TOOLS:
        errors.append(FieldError(field="tool", message=(
            f"'{request.tool}' is a management tool: its calls change skills or answer approvals, and are "
            "never approved by a standing grant")))
    if len(request.where) > MAX_GRANT_WHERE:
        errors.append(FieldError(field="where", message=f"at most {MAX_GRANT_WHERE} conditions"))
    for key, value in request.where.items():
        if not _ARGUMENT.match(key):
            errors.append(FieldError(field="where", message=f"'{key}' is not an argument's name"))
        elif len(value.encode()) > MAX_GRANT_VALUE_BYTES:
            errors.append(FieldError(field="where", message=f"the value of '{key}' is over {MAX_GRANT_VALUE_BYTES} bytes"))
    if request.minutes is not None and (problem := GRANT_MINUTES.problem(request.minutes)):
        errors.append(FieldError(field="for", message=f"{problem} minutes"))
    return errors


def expiry(created_at: datetime, minutes: int | None) -> datetime | None:
    return created_at + timedelta(minutes=minutes) if minutes is not None else None


def describe_grant(grant: Grant) -> str:
    scope = f"skill '{grant.skill_name}'" if grant.skill_id is not None else "any skill"
    where = ", ".join(f"{k}={v}" for k, v in grant.where.items())
    return f"grant {grant.id}: {grant.tool} for {scope}" + (f" where {where}" if where else "")
