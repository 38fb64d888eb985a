"""Pre-flight checks: a tool call and a condition, run before the tier; a skip costs no tokens.

A skill declares them (``preflight: [{tool, arguments, skip_if, path}]``), and two
automatic checks (meeting skills look at the calendar for the
next two hours, email skills look for new emails) are expressed as the same
declarations, added at registration by the rules in ``AUTOMATIC_CHECKS``: the
workflow knows no special cases.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

import re2
from pydantic import BaseModel, ConfigDict, Field

from skills import linear

SkipCondition = Literal["empty", "not_empty"]

_PLACEHOLDER = re2.compile(r"\{\{\s*(now|today)\s*(?:([+-])\s*(\d+)\s*([mhdw]))?\s*\}\}")
"""RE2, linear in the text: with Python's re the spaces around ``now`` made ``{{now`` and 256 KiB of
spaces take minutes (and this runs in workflow code, at every fire)."""
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
MAX_OFFSET_MINUTES = 10 * 366 * 24 * 60
"""``{{now+N unit}}`` reaches at most ten years away (as ``in_minutes`` does); a larger offset
overflowed ``timedelta`` at the fire."""
_MINUTES_PER = {"m": 1, "h": 60, "d": 24 * 60, "w": 7 * 24 * 60}


class PreflightCheck(BaseModel):
    """Call ``tool`` with ``arguments``; skip the run when the result (or its ``path``) is empty."""

    model_config = ConfigDict(extra="forbid")

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    """May hold ``{{now}}``, ``{{now+2h}}``, ``{{today}}``, ``{{now-1d}}``: the fire's time in the skill's zone."""
    skip_if: SkipCondition = "empty"
    path: str | None = None
    """A dotted path into the result's structured content (or its JSON text), e.g. ``events``."""
    description: str = ""
    """Said in the skipped run's reason, e.g. "no calendar events in the next 2 hours"."""
    automatic: bool = False
    """Added by a rule of AUTOMATIC_CHECKS, not by the user."""

    def reason(self) -> str:
        return self.description or f"{self.tool} returned {'nothing' if self.skip_if == 'empty' else 'something'}"


@dataclass(frozen=True)
class AutomaticRule:
    """Skills whose name matches ``name_pattern`` and that require ``tool`` get ``check``."""

    name_pattern: str
    tool: str
    check: PreflightCheck

    def applies(self, name: str, required_tools: list[str]) -> bool:
        return self.tool in required_tools and \
            linear.search(self.name_pattern, name, linear.IGNORECASE) is not None


AUTOMATIC_CHECKS = (
    AutomaticRule(
        name_pattern=r"meeting|prep",
        tool="gmail_list_events",
        check=PreflightCheck(
            tool="gmail_list_events",
            arguments={"timeMin": "{{now}}", "timeMax": "{{now+2h}}"},
            skip_if="empty",
            description="no calendar events in the next 2 hours",
            automatic=True,
        ),
    ),
    AutomaticRule(
        name_pattern=r"email",
        tool="gmail_get_new_emails",
        check=PreflightCheck(tool="gmail_get_new_emails", skip_if="empty", description="no new emails",
                             automatic=True),
    ),
)


def automatic_checks(name: str, required_tools: list[str], declared: list[PreflightCheck]) -> list[PreflightCheck]:
    """The automatic checks a skill of this shape gets, unless it already declares a check of that tool."""
    declared_tools = {c.tool for c in declared}
    return [r.check for r in AUTOMATIC_CHECKS
            if r.applies(name, required_tools) and r.check.tool not in declared_tools]


def render_arguments(arguments: Any, now: datetime, timezone: str) -> Any:
    """Replace time placeholders with ISO times of ``now`` in ``timezone`` (a whole-string
    placeholder, and placeholders inside longer strings)."""
    local = now.astimezone(ZoneInfo(timezone))

    def value(match: Any) -> str:
        what, sign, amount, unit = match.groups()
        moment = local
        if sign:
            if _offset_problem(amount, unit) is not None:
                # Refused at registration; a skill stored before that bound leaves the text as written.
                return str(match.group(0))
            delta = timedelta(**{_UNITS[unit]: int(amount)})
            try:
                moment = local + delta if sign == "+" else local - delta
            except OverflowError:
                return str(match.group(0))
        return moment.date().isoformat() if what == "today" else moment.isoformat(timespec="seconds")

    if isinstance(arguments, str):
        return _PLACEHOLDER.sub(value, arguments)
    if isinstance(arguments, dict):
        return {k: render_arguments(v, now, timezone) for k, v in arguments.items()}
    if isinstance(arguments, list):
        return [render_arguments(v, now, timezone) for v in arguments]
    return arguments


def time_offset_problems(arguments: Any) -> list[str]:
    """Why each ``{{now±N unit}}`` in ``arguments`` reaches too far, naming the placeholder and the bound."""
    return [problem for text in _strings(arguments) for found in _PLACEHOLDER.finditer(text)
            if (problem := _offset_problem(found.group(3), found.group(4), found.group(0))) is not None]


def _offset_problem(amount: str | None, unit: str | None, placeholder: str = "") -> str | None:
    if amount is None or unit is None:
        return None
    most = MAX_OFFSET_MINUTES // _MINUTES_PER[unit]
    if len(amount) <= len(str(most)) and int(amount) <= most:
        return None
    shown = placeholder if len(placeholder) <= 40 else placeholder[:39] + "…"
    return f"'{shown}': the offset must be between 0 and {most} {_UNITS[unit]} (ten years)"


def _strings(value: Any) -> Iterator[str]:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def should_skip(check: PreflightCheck, text: str, structured: dict[str, Any] | None) -> bool:
    """Whether the check's result means "nothing to do"."""
    value = _result_value(text, structured, check.path)
    empty = is_empty(value)
    return empty if check.skip_if == "empty" else not empty


def is_empty(value: Any) -> bool:
    """Nothing in it: None, "", 0, False, [], {}, or a mapping whose every value is empty.

    The last rule makes ``{"events": []}`` and ``{"count": 0, "items": []}`` empty, the
    shapes MCP servers commonly answer "none" with.
    """
    if value is None or value is False or value == 0 or value == "":
        return True
    if isinstance(value, str):
        return value.strip().lower() in ("", "[]", "{}", "null", "none", "0")
    if isinstance(value, list):
        return len(value) == 0
    if isinstance(value, dict):
        return all(is_empty(v) for v in value.values())
    return False


def _result_value(text: str, structured: dict[str, Any] | None, path: str | None) -> Any:
    value: Any = structured
    if value is None:
        try:
            value = json.loads(text) if text.strip() else None
        except (ValueError, RecursionError):  # not JSON, or JSON no parser should recurse into: its text
            value = text
    # MCP servers wrap non-object results as {"result": ...}.
    if isinstance(value, dict) and set(value) == {"result"} and path != "result":
        value = value["result"]
    for key in (path.split(".") if path else []):
        if isinstance(value, dict):
            value = value.get(key)
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return None
    return value
