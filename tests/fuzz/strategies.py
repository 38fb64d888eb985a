"""What the fuzz suite feeds the engine: registrations and SKILL.md frontmatters built from the real
fields, with hostile values mixed in (huge and negative numbers, NaN and infinities, deep nesting,
long strings, control characters, odd Unicode, regex and placeholder bombs).

A generated input starts from a valid skill and has a few of its fields replaced, so that a good
share of the examples pass the front door and reach a real fire: a fuzzer whose every input is
refused at the first field tests only the first field."""

from __future__ import annotations

import json
from typing import Any

import yaml
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

# --- the schedule's shape, approvals and models (issues 21 and 22) ------------------------------

LONG_LISTS = st.sampled_from([
    ["outbox_send_message"] * 5_000,
    [f"tool_{i}" for i in range(10_000)],
    [["outbox_send_message"]] * 50,
    ["fuzz", "fuzz-b", "fuzz-c", "fuzz-d", "fuzz-e", "fuzz-f"],   # one past the fallback limit
])

DATES = st.one_of(
    st.sampled_from([
        "2099-06-01T09:00:00", "2030-01-01T00:00:00Z", "2100-12-31T23:59:59",
        "2100-12-31T23:59:59-12:00",    # inside 2100 where it is written, 2101 in UTC
        "2101-01-01T00:00:00+14:00",    # 2100 in UTC, 2101 where it is written
        "9999-12-31T23:59:59", "9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00", "0001-01-01T00:00:00+23:59",
        "1970-01-01T00:00:00Z", "2026-02-30T09:00:00", "+275760-09-13T00:00:00Z", "2099-06-01", "tomorrow",
        "2099-06-01T09:00:00[Europe/Paris]", "2099-06-01T09:00:00 " + "x" * 10_000,
    ]),
    st.datetimes().map(lambda moment: moment.isoformat()),
)

FIELD_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "timeout_minutes": st.one_of(
        st.floats(0.05, 10080), st.sampled_from([0.05, 1, 2.5, 10080, 1e-300, 5e-324, 0.0499, 10080.0001, "2.5"]),
        NUMBERS),
    "end_at": DATES,
    "max_runs": st.one_of(st.integers(1, 1_000_000), st.sampled_from([0, 1_000_001, "5", 5.0, 5.5]), NUMBERS),
    "jitter_seconds": st.one_of(st.integers(0, 3600), st.sampled_from([-1, 3601, "90"]), NUMBERS),
    "overlap": st.one_of(st.sampled_from(["skip", "buffer_one", "allow", "Buffer-One", " ALLOW ", "buffer_all"]),
                         TEXT),
    "catch_up": st.one_of(st.sampled_from(["once", "none", "all", "ALL", "never", "all " * 10_000]), TEXT),
    "approval_required_tools": st.one_of(
        st.sampled_from([["outbox_send_message"], "outbox_send_message", "outbox_send_message, outbox_send_message",
                         ["notes_read"], '["outbox_send_message"]', "[" * 5_000]),
        LONG_LISTS, st.lists(TEXT, max_size=5)),
    "approval_exempt_tools": st.one_of(
        st.sampled_from([["outbox_send_message"], "outbox_send_message", ["notes_read"], "[" * 5_000]),
        LONG_LISTS, st.lists(TEXT, max_size=5)),
    "approval_timeout_minutes": st.one_of(st.integers(1, 10080), st.sampled_from([0, 10081, "60", 1e22]), NUMBERS),
    "fallback_models": st.one_of(
        st.sampled_from([["fuzz"], "fuzz, fuzz-b", ["unknown-model"], ["fuzz", "fuzz"], ["a b"], "x" * 10_000]),
        LONG_LISTS, st.lists(TEXT, max_size=6)),
    "skip_holidays": st.one_of(st.sampled_from(["US", "us-ca", "GB-SCT", "XX", "US-ZZ", "", True]), TEXT),
    "business_days_only": st.one_of(st.booleans(), st.sampled_from(["yes", "no", "maybe", 2])),
    "spread": st.one_of(st.booleans(), st.sampled_from(["yes", "no", "maybe", 2, "true", None])),
    "deliver": st.one_of(st.sampled_from(["always", "on_change", "never", "On-Change", " NEVER ", "daily", "",
                                          "on_change " * 10_000, None, False]), TEXT),
    "remind_after_minutes": st.one_of(st.integers(0, 525_600), st.sampled_from([-1, 525_601, "90", 90.5, True]),
                                      NUMBERS),
    "context_from": st.one_of(
        st.sampled_from([["self"], "self", "SELF, self", ["fuzz-unknown"], [""], [3], {"self": 1}, ["x" * 300],
                         ["self"] * 6, "[" * 5_000]),
        LONG_LISTS, st.lists(TEXT, max_size=6)),
}
"""Each new field's own values: valid ones, so the skill reaches a fire with it, and hostile ones (out of
range, NaN and infinities, the wrong type, dates off the calendar, long lists); the HOSTILE values are
drawn for these fields too."""

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
    "notify_interval_minutes", *FIELD_VALUES,
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
        value = draw(st.one_of(FIELD_VALUES[field], HOSTILE) if field in FIELD_VALUES else HOSTILE)
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
    # what a scheduled file passes on to its registration (checked when metadata has a trigger_config)
    *(f"metadata.{field}" for field in FIELD_VALUES),
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
    if draw(st.booleans()):
        data["metadata"] = {"trigger_config": dict(draw(st.sampled_from(TRIGGERS[:-1])))}
    for field in draw(st.lists(st.sampled_from(FRONTMATTER_FIELDS), max_size=3, unique=True)):
        head, _, tail = field.partition(".")
        if field == "triggers.patterns":
            value: Any = draw(st.lists(st.one_of(PATTERN_BOMBS, TEXT), min_size=1, max_size=3))
        elif head == "metadata" and tail in FIELD_VALUES:
            value = draw(st.one_of(FIELD_VALUES[tail], HOSTILE))
        else:
            value = draw(HOSTILE)
        if tail:
            data[head] = {**(data.get(head) if isinstance(data.get(head), dict) else {}), tail: value}
        else:
            data[head] = value
    # JSON is YAML (flow style): any generated value can be written, nested as deep as it is. YAML's own
    # writer, where it can, gives what JSON cannot: .nan, .inf, and 1.0e-300 read as a number.
    try:
        front = yaml.dump(data, Dumper=yaml.CSafeDumper) if draw(st.booleans()) \
            else json.dumps(data, ensure_ascii=draw(st.booleans()))
    except (ValueError, RecursionError, yaml.YAMLError):
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
