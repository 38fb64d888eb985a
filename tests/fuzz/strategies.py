"""What the fuzz suite feeds the engine: registrations and SKILL.md frontmatters built from the real
fields, with hostile values mixed in (huge and negative numbers, NaN and infinities, deep nesting,
long strings, control characters, odd Unicode, regex and placeholder bombs).

A generated input starts from a valid skill and has a few of its fields replaced, so that a good
share of the examples pass the front door and reach a real fire: a fuzzer whose every input is
refused at the first field tests only the first field."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

# --- hostile values ------------------------------------------------------------------------------


def nested_lists(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def nested_dicts(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = {"a": value}
    return value


BOMBS: list[Any] = [
    "{{" * 20_000,                      # the placeholder pattern's quadratic case
    "{{steps." * 5_000,
    "}}{{" * 10_000,
    "{{ " + "a." * 10_000 + " }}",
    "(\\w+\\s?)+$",                     # catastrophic backtracking in a backtracking engine
    "(a+)+b",
    "x" * 300_000,                      # past the plan's 256 KiB limit
    "[" * 40_000,
    "{" * 40_000,
    "\x00\x01\x02\x1b[31m\x7f",
    "\u202e\u200b\ufeff\U0001f4a9\ud7ff",
    "lone \udcff surrogate",
    "*/0 * * * *",
    "0 0 31 2 *",                       # never fires
    "@reboot",
    "9999-12-31T23:59:59",
    "0001-01-01T00:00:00",
    "-1",
    "1e309",
    "NaN",
    "",
]

NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 1, 2**31, 2**63, 2000000000000, 10**18, True, False]),
    st.floats(allow_nan=True, allow_infinity=True),
)

TEXT = st.one_of(
    st.text(max_size=60),
    st.text(st.characters(codec="utf-8", categories=["Cc", "Cf", "Zs", "Mn", "So", "Lo"]), max_size=40),
    st.sampled_from(BOMBS),
)

DEEP = st.sampled_from([nested_lists(200), nested_dicts(200), nested_lists(3_000), nested_dicts(3_000)])

HOSTILE = st.one_of(NUMBERS, TEXT, DEEP, st.none(), st.lists(TEXT, max_size=5),
                    st.dictionaries(TEXT, NUMBERS, max_size=3))

# --- registrations -------------------------------------------------------------------------------

TRIGGERS: list[dict[str, Any]] = [
    {"schedule": "0 9 * * *"},
    {"interval_minutes": 60},
    {"in_minutes": 30},
    {"in_hours": 2},
    {"at": "2099-01-01T09:00:00"},
    {"event": "fuzz.happened"},
    {},
]

DIRECT = [{"toolName": "outbox_send_message", "parameters": {"message": "hello from the fuzzer"}}]

FIELDS = [
    "name", "instructions", "agent_id", "description", "enabled", "trigger_type", "trigger_config",
    "required_tools", "execution_plan", "max_steps", "model", "preflight", "notify_on_completion",
    "notify_interval_minutes",
    "skip_holidays", "business_days_only",
    # the trigger's own fields, given at the root (the normalizer re-nests them) or inside
    "schedule", "timezone", "interval_minutes", "at", "in_minutes", "in_hours", "event",
    # a plan step's parts
    "step.parameters", "step.message", "step.toolName", "step.id",
]


def _plan_step(field: str, value: Any) -> list[dict[str, Any]]:
    step: dict[str, Any] = {"toolName": "outbox_send_message", "parameters": {"message": "hello"}}
    match field:
        case "step.parameters":
            step["parameters"] = value
        case "step.message":
            step["parameters"] = {"message": value}
        case "step.toolName":
            step["toolName"] = value
        case "step.id":
            step["id"] = value
    return [step]


@st.composite
def registrations(draw: st.DrawFn) -> dict[str, Any]:
    """A valid skill (Direct or Agent tier, any trigger) with zero to three fields made hostile."""
    data: dict[str, Any] = {
        "name": "fuzzed skill",
        "instructions": "Say hello",
        "trigger_config": dict(draw(st.sampled_from(TRIGGERS))),
        "notify_on_completion": False,
    }
    if draw(st.booleans()):
        data["execution_plan"] = [dict(step) for step in DIRECT]
    for field in draw(st.lists(st.sampled_from(FIELDS), max_size=3, unique=True)):
        value = draw(HOSTILE)
        if field.startswith("step."):
            data["execution_plan"] = _plan_step(field, value)
        elif field in {"timezone", "interval_minutes", "at", "in_minutes", "in_hours", "event", "schedule"} \
                and draw(st.booleans()):
            given = data["trigger_config"]  # it may have been made hostile (not a mapping) already
            data["trigger_config"] = {**(given if isinstance(given, dict) else {}), field: value}
        else:
            data[field] = value
    return data


# --- SKILL.md frontmatters -----------------------------------------------------------------------

FRONTMATTER_FIELDS = [
    "description", "brief_description", "license", "compatibility", "allowed-tools", "metadata",
    "triggers", "triggers.keywords", "triggers.verbs", "triggers.patterns", "depends", "scripts",
    "toolsets", "schedule", "default_enabled", "metadata.priority",
]

PATTERN_BOMBS = st.sampled_from([
    "(\\w+\\s?)+$", "(a+)+$", "(a|a)+$", "(.*a){20}", "(?:x+x+)+y", "([a-z]+)*=", "(\\1)", "(?<=a)b",
    "[", "(", "a{99999}", "(?i)" + "a?" * 500 + "a" * 500,
])


@st.composite
def frontmatters(draw: st.DrawFn, name: str) -> str:
    """A SKILL.md's text: a valid one with fields made hostile, or raw hostile YAML."""
    if draw(st.integers(0, 4)) == 0:
        raw = draw(st.sampled_from([
            "[" * 20_000, "{" * 20_000, "- " * 10_000, "a: &a [" + "*a, " * 50 + "]",
            # the billion laughs, in YAML aliases
            "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
            "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
            "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n",
            "name: !!python/object/apply:os.system ['touch /tmp/fuzz-pwned']\n",
            "\x00\x01: \x02", ": : :", "name: " + "\\" * 5_000,
        ]))
        return f"---\n{raw}\n---\nBody.\n"
    data: dict[str, Any] = {"name": name, "description": "Does a fuzzed thing when asked to fuzz."}
    for field in draw(st.lists(st.sampled_from(FRONTMATTER_FIELDS), max_size=3, unique=True)):
        if field == "triggers.patterns":
            value: Any = draw(st.lists(st.one_of(PATTERN_BOMBS, TEXT), min_size=1, max_size=3))
        else:
            value = draw(HOSTILE)
        head, _, tail = field.partition(".")
        if tail:
            data[head] = {**(data.get(head) if isinstance(data.get(head), dict) else {}), tail: value}
        else:
            data[head] = value
    # JSON is YAML (flow style): any generated value can be written, nested as deep as it is.
    try:
        front = json.dumps(data, ensure_ascii=draw(st.booleans()))
    except (ValueError, RecursionError):
        front = json.dumps({"name": name, "description": "unencodable"})
    return f"---\n{front}\n---\nBody of the fuzzed skill.\n"


MESSAGES = st.one_of(
    st.text(max_size=200),
    st.sampled_from([
        "remind me in five minutes to drink water please now!",
        "a" * 100_000 + "!",
        "remind " * 20_000,
        "\x00" * 1_000,
        "fuzz " * 5_000 + "!",
    ]),
)
