"""The normalizer's *delivery* fields: when a result is delivered (``deliver``), where (``deliver_to``, each
destination checked against the owner's allowlists), what earlier results it reads (``context_from``), and the
reminder of an unanswered approval (``skills.spec.normalize`` calls them)."""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping
from typing import Any

from skills.naming import MANAGEMENT_TOOLS, management_tool_problem
from skills.run.recall import SELF
from skills.spec.context import NormalizeContext
from skills.spec.fields import (
    Problems,
    integer,
    number,
    parse_json,
)
from skills.spec.limits import (
    DIGEST_MINUTES,
    MAX_CONTEXT_FROM,
    MAX_DESTINATION_BYTES,
    MAX_DESTINATIONS,
    MAX_NAME_LENGTH,
    MAX_RECALL_CHARS,
    REMIND_AFTER_MINUTES,
    json_size,
    too_large,
)
from skills.spec.models import (
    DELIVERIES,
    Destination,
)
from skills.spec.reach_fields import check_parameters
from skills.spec.when_fields import choice


def deliver(data: Mapping[str, Any], given: Collection[str], notes: list[str], problems: Problems) -> str:
    """``deliver``: always, on_change or never (``skills.run.notify``); ``given``: the fields of this input."""
    deliver = choice(data.get("deliver"), "deliver", DELIVERIES, problems)
    if deliver != "always" and data.get("notify_on_completion") is False and "deliver" in given:
        notes.append(f"deliver '{deliver}': no effect, notify_on_completion false sends no completion notice")
    return deliver


def context_from(value: Any, problems: Problems) -> list[str]:
    """``context_from``: ``self`` or skill names (``skills.run.recall``), a list (or one name, or a comma-separated
    text), at most ``MAX_CONTEXT_FROM``, each once."""
    field = "context_from"
    if value is None or value == "" or value == []:
        return []
    if isinstance(value, str):
        text = value.strip()
        value = parse_json(text, field, problems) if text.startswith("[") else [p for p in text.split(",")]
        if value is None:
            return []
    if not isinstance(value, list):
        problems.add(field, f"must be a list of skill names or 'self' (got {type(value).__name__})")
        return []
    if len(value) > MAX_CONTEXT_FROM:
        problems.add(field, f"names {len(value)} skills; at most {MAX_CONTEXT_FROM} are allowed (each brings up "
                            f"to {MAX_RECALL_CHARS:,} characters to every run's first turn)")
        return []
    names: list[str] = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            problems.add(f"{field}[{i}]", "must be a skill name or 'self'")
            continue
        name = item.strip()
        if len(name) > MAX_NAME_LENGTH:
            problems.add(f"{field}[{i}]", f"is {len(name)} characters; a skill name is at most {MAX_NAME_LENGTH}")
            continue
        name = SELF if name.lower() == SELF else name
        if name.lower() not in {n.lower() for n in names}:
            names.append(name)
    return names


DESTINATION_TOOL_KEYS = ("tool", "toolName", "tool_name", "name")


def deliver_to(value: Any, problems: Problems) -> list[Destination]:
    """``deliver_to``: a list of destinations, each ``{tool: NAME, ...its fixed arguments}`` (a tool name
    alone is a destination without arguments; one object is a list of one)."""
    if value is None or value == []:
        return []
    if isinstance(value, str):
        value = parse_json(value, "deliver_to", problems) if value.strip()[:1] in "[{" else [value]
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list):
        problems.add("deliver_to", "must be a list of destinations, each {tool: NAME, ...its fixed arguments}")
        return []
    if len(value) > MAX_DESTINATIONS:
        problems.add("deliver_to", f"at most {MAX_DESTINATIONS} destinations, got {len(value)}")
        return []
    destinations: list[Destination] = []
    for i, raw in enumerate(value):
        where = f"deliver_to[{i}]"
        if isinstance(raw, str):
            raw = {"tool": raw}
        if not isinstance(raw, Mapping):
            problems.add(where, "each destination is {tool: NAME, ...its fixed arguments}")
            continue
        key = next((k for k in DESTINATION_TOOL_KEYS if k in raw), None)
        tool = raw.get(key) if key else None
        if not isinstance(tool, str) or not tool.strip():
            problems.add(f"{where}.tool", "give the send tool (from get_tool_catalog), e.g. outbox_send_message")
            continue
        arguments = {k: v for k, v in raw.items() if k != key}
        digest = arguments.pop("digest_minutes", arguments.pop("digestMinutes", None))
        if isinstance(arguments.get("arguments"), Mapping) and len(arguments) == 1:
            arguments = dict(arguments["arguments"])  # {tool, arguments: {...}}, as it is stored
        if digest is not None:
            digest = number(digest, f"{where}.digest_minutes", problems, bound=DIGEST_MINUTES)
            if digest is None:
                continue
        if "message" in arguments:
            problems.add(f"{where}.message", "the message is the run's result: give only the fixed arguments "
                                             "(who it goes to)")
            continue
        oversize = too_large(where, json_size(arguments), MAX_DESTINATION_BYTES)
        if oversize is not None:
            problems.errors.append(oversize)
            continue
        destinations.append(Destination(tool=tool.strip(), arguments=arguments, digest_minutes=digest))
    return destinations


def check_destinations(destinations: list[Destination], ctx: NormalizeContext, problems: Problems) -> None:
    """Each destination as a call of its tool would be judged: a tool of the catalog that takes a
    ``message``, and its fixed arguments within the tool's schema and the argument rules' allowlists."""
    for i, destination in enumerate(destinations):
        where, tool = f"deliver_to[{i}]", destination.tool
        if tool in MANAGEMENT_TOOLS:
            problems.add(f"{where}.tool", management_tool_problem(tool))
            continue
        if ctx.tool_catalog is not None and tool not in ctx.tool_catalog:
            close = difflib.get_close_matches(tool, list(ctx.tool_catalog), n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else \
                "; call get_tool_catalog (or `skills catalog`) for the available tools"
            problems.add(f"{where}.tool", f"unknown tool '{tool}'{hint}")
            continue
        schema = (ctx.tool_schemas or {}).get(tool)
        if schema is not None and "message" not in (schema.get("properties") or {}):
            problems.add(f"{where}.tool", f"'{tool}' takes no `message`: a destination is a tool that sends one "
                                          "(outbox_send_message, telegram_send_message, ...)")
            continue
        for parameter, allowed in ctx.destination_allowlists.get(tool, {}).items():
            value = destination.arguments.get(parameter)
            if value is not None and str(value) not in allowed:
                problems.add(f"{where}.{parameter}", f"'{value}' is not an allowed destination of {tool}: the owner "
                                                     f"allows {', '.join(sorted(allowed)) or 'none'}")
        check_parameters(where, "arguments", tool, {**destination.arguments, "message": "(the result)"}, ctx,
                         problems)


def remind_after(data: Mapping[str, Any], problems: Problems) -> int:
    return integer(data.get("remind_after_minutes"), "remind_after_minutes", 0, problems, bound=REMIND_AFTER_MINUTES)
