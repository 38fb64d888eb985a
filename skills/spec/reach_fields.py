"""The normalizer's *reach* fields: the Direct plan and its parameters, pre-flight checks, the tools a skill
may call, the approvals and their exemptions, and the skills a plan recalls (``skills.spec.normalize`` calls
them; ``docs/security.md`` classifies them as *reach*)."""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping
from typing import Any

import re2
from pydantic import ValidationError

from skills.naming import MANAGEMENT_TOOLS, management_tool_problem
from skills.run.arguments import argument_problems
from skills.run.plans import recall_names
from skills.run.preflight import PreflightCheck
from skills.run.recall import SELF
from skills.spec.context import NormalizeContext
from skills.spec.fields import (
    Problems,
    boolean,
    integer,
    parse_json,
    string_list,
)
from skills.spec.limits import (
    APPROVAL_TIMEOUT_MINUTES,
    MAX_CONTEXT_FROM,
    MAX_EXEMPT_TOOLS,
)
from skills.spec.models import (
    PlanStep,
)


def check_recalled(fields: dict[str, Any], plan_positions: list[int], plan: list[PlanStep], ctx: NormalizeContext,
                   notes: list[str], problems: Problems) -> None:
    """The skills ``context_from`` and ``{{skill:NAME.last}}`` name are the agent's (the skill's own name is
    ``self``); an unknown one is refused, naming where it was given."""
    own = (fields.get("name") or "").strip().lower()
    agent = fields["agent_id"]
    known: set[str] | None = None  # the agent's names, read only for a skill that names another (most name none)

    def unknown(name: str) -> bool:
        nonlocal known
        if ctx.skill_names is None or name == SELF or name.lower() == own:
            return False
        if known is None:
            known = {n.lower() for n in ctx.skill_names(agent)}
        return name.lower() not in known

    remembered = fields.get("context_from") or []
    for i, name in enumerate(remembered):
        if unknown(name):
            problems.add(f"context_from[{i}]", f"no skill {name[:100]!r} for agent '{agent}': name a skill of "
                                               "the same agent, or 'self' for this one")
    fields["context_from"] = list(dict.fromkeys(SELF if n.lower() == own else n for n in remembered))
    if remembered and plan:
        notes.append("context_from gives the Agent tier its context; a Direct plan reads a result with "
                     "{{last.result}} or {{skill:NAME.last}} in a step's parameters")
    read = {name.lower() for step in plan for name in recall_names(step.parameters)}
    if len(read) > MAX_CONTEXT_FROM:
        problems.add("execution_plan", f"reads the results of {len(read)} skills ({{{{last.result}}}}, "
                                       f"{{{{skill:NAME.last}}}}); at most {MAX_CONTEXT_FROM} are allowed")
    for i, step in zip(plan_positions, plan, strict=False):
        for name in recall_names(step.parameters):
            if unknown(name):
                problems.add(f"execution_plan[{i}].parameters",
                             f"'{{{{skill:{name[:100]}.last}}}}': no skill {name[:100]!r} for agent '{agent}'")


def exempt_list(data: Mapping[str, Any], problems: Problems) -> list[str]:
    exempt = string_list(data.get("approval_exempt_tools"), "approval_exempt_tools", problems)
    if len(exempt) > MAX_EXEMPT_TOOLS:
        problems.add("approval_exempt_tools", f"at most {MAX_EXEMPT_TOOLS} tools (got {len(exempt)})")
        return []
    return exempt


def check_exempt(exempt: list[str], tools: list[str], approval_tools: list[str], ctx: NormalizeContext,
                 problems: Problems) -> None:
    """``approval_exempt_tools``: each one of the skill's tools, not also asked for, and (when the catalog
    knows the tool) one its server marks destructive: an exemption of anything else would exempt nothing."""
    for tool in exempt:
        if tool not in tools:
            problems.add("approval_exempt_tools", f"'{tool}' is not one of the skill's tools (required_tools or "
                                                  "the plan's toolName): drop it here")
        elif tool in approval_tools:
            problems.add("approval_exempt_tools", f"'{tool}' is in approval_required_tools too: a tool either "
                                                  "waits for approval or runs unattended, not both")
        elif ctx.destructive_tools is not None and tool in ctx.destructive_tools[0] \
                and tool not in ctx.destructive_tools[1]:
            problems.add("approval_exempt_tools", f"'{tool}' is not marked destructive by its server "
                                                  "(destructiveHint: true): its calls do not wait, nothing to exempt")


def approval_timeout(data: Mapping[str, Any], problems: Problems) -> int | None:
    return integer(data.get("approval_timeout_minutes"), "approval_timeout_minutes", None, problems,
                   bound=APPROVAL_TIMEOUT_MINUTES)


STEP_TOOL_ALIASES = ("toolName", "tool_name", "tool", "name")

STEP_PARAM_ALIASES = ("parameters", "params", "arguments", "args", "input")


CHECK_ALIASES = {"toolName": "tool", "tool_name": "tool", "name": "tool", "args": "arguments", "params": "arguments",
                 "parameters": "arguments", "skipIf": "skip_if", "skip_when": "skip_if", "condition": "skip_if"}


def normalize_plan(value: Any, problems: Problems) -> tuple[list[PlanStep] | None, list[int]]:
    """The steps, and the position of each in the list as given (for messages)."""
    if value is None or value == "" or value == []:
        return None, []
    if isinstance(value, str):
        value = parse_json(value, "execution_plan", problems)
        if value is None:
            return None, []
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list):
        problems.add("execution_plan", "must be a list of steps {id, toolName, parameters}")
        return None, []
    steps: list[PlanStep] = []
    positions: list[int] = []
    for i, raw in enumerate(value):
        where = f"execution_plan[{i}]"
        if not isinstance(raw, Mapping):
            problems.add(where, "each step must be an object {id, toolName, parameters}")
            continue
        tool = next((raw[k] for k in STEP_TOOL_ALIASES if raw.get(k)), None)
        if not isinstance(tool, str) or not tool.strip():
            problems.add(f"{where}.toolName", "is required: the exact name of the tool to call")
            continue
        params = next((raw[k] for k in STEP_PARAM_ALIASES if k in raw), {})
        if isinstance(params, str):
            before = len(problems.errors)
            params = parse_json(params, f"{where}.parameters", problems)
            if len(problems.errors) > before:
                continue  # unreadable: reported; judging the step as if it had no parameters would add noise
        if params is None:
            params = {}
        if not isinstance(params, Mapping):
            problems.add(f"{where}.parameters", "must be an object of tool arguments")
            continue
        step_id = raw.get("id")
        positions.append(i)
        steps.append(
            PlanStep(id=str(step_id) if step_id not in (None, "") else f"step{i + 1}", tool_name=tool.strip(),
                     parameters=dict(params), approval=boolean(raw.get("approval"), f"{where}.approval", False,
                                                               problems))
        )
    ids = [s.id for s in steps]
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        problems.add("execution_plan", f"step id '{dup}' is used more than once")
    return steps or None, positions


def normalize_preflight(value: Any, problems: Problems) -> tuple[list[PreflightCheck], list[int]]:
    """The checks, and the position of each in the list as given (for messages)."""
    if value is None or value == "" or value == []:
        return [], []
    if isinstance(value, str):
        value = parse_json(value, "preflight", problems)
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list):
        problems.add("preflight", "must be a list of checks {tool, arguments, skip_if, path}")
        return [], []
    checks: list[PreflightCheck] = []
    positions: list[int] = []
    for i, raw in enumerate(value):
        where = f"preflight[{i}]"
        if not isinstance(raw, Mapping):
            problems.add(where, "each check must be an object {tool, arguments, skip_if, path}")
            continue
        fields = {CHECK_ALIASES.get(k, k): v for k, v in raw.items()}
        if isinstance(fields.get("arguments"), str):
            fields["arguments"] = parse_json(fields["arguments"], f"{where}.arguments", problems) or {}
        if isinstance(fields.get("skip_if"), str):
            fields["skip_if"] = {"nonempty": "not_empty", "not empty": "not_empty"}.get(
                fields["skip_if"].strip().lower(), fields["skip_if"].strip().lower())
        fields.pop("automatic", None)
        try:
            checks.append(PreflightCheck.model_validate(fields))
            positions.append(i)
        except ValidationError as e:
            for err in e.errors():
                field = ".".join(str(p) for p in err["loc"])
                problems.add(f"{where}.{field}" if field else where, pydantic_message(err))
    return checks, positions


def check_parameters(where: str, key: str, tool: str, arguments: dict[str, Any], ctx: NormalizeContext,
                     problems: Problems) -> None:
    """A step's (or a check's) arguments against its tool's schema, as the call would judge them.

    A tool missing from the catalog is the tool check's to report (or to wait for, disabled)."""
    schema = (ctx.tool_schemas or {}).get(tool)
    if schema is None:
        return
    for problem in argument_problems(tool, arguments, schema, ctx.argument_rules, any_value=has_placeholder):
        if problem.parameter:
            problems.add(f"{where} ({tool}).{key}.{problem.parameter}", problem.message)
        else:
            problems.add(f"{where} ({tool})", problem.message)


PLACEHOLDER = re2.compile(r"\{\{.*?\}\}")
"""Searched in every string of a plan's parameters: RE2 runs in linear time (Python's re took minutes
on 256 KiB of ``{{``, trying every opening against the rest of the text)."""


def has_placeholder(value: Any) -> bool:
    """Text holding a placeholder (``{{fetch.result}}``, ``{{now}}``): filled at run time, so of any type then."""
    return isinstance(value, str) and PLACEHOLDER.search(value) is not None


def pydantic_message(error: Any) -> str:
    if error["type"] == "extra_forbidden":
        return "unknown field (expected tool, arguments, skip_if, path, description)"
    if error["type"] == "literal_error":
        return "must be 'empty' or 'not_empty'"
    return str(error["msg"]).removeprefix("Value error, ")


def reserved_tools(tools: list[str], preflight: list[PreflightCheck], problems: Problems) -> set[str]:
    """Refuse the management tools in required_tools (the plan's among them) and the pre-flight checks."""
    found = set()
    for tool in tools:
        if tool in MANAGEMENT_TOOLS:
            found.add(tool)
            problems.add("required_tools", management_tool_problem(tool))
    for i, check in enumerate(preflight):
        if check.tool in MANAGEMENT_TOOLS:
            found.add(check.tool)
            problems.add(f"preflight[{i}].tool", management_tool_problem(check.tool))
    return found


def check_tools(
    tools: list[str], catalog: Collection[str] | None, enabled: bool, problems: Problems
) -> list[str]:
    """Check tools against the live catalog; a disabled skill may wait for missing tools."""
    if catalog is None:
        return []
    missing = [t for t in tools if t not in catalog]
    if missing and enabled:
        for tool in missing:
            close = difflib.get_close_matches(tool, list(catalog), n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else \
                "; call get_tool_catalog (or `skills catalog`) for the available tools"
            problems.add("required_tools", f"unknown tool '{tool}'{hint}")
        return []
    return missing
