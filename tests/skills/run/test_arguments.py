"""The argument pipeline: each fixing step, schema coercion, relaxed schemas, and properties."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
import referencing.exceptions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema.validators import validator_for

from skills.errors import ToolArgumentsError
from skills.run.arguments import (
    ArgumentRules,
    ParameterDefault,
    PreparedArguments,
    argument_problems,
    prepare_arguments,
)
from skills.spec.schemas import relax_schema

TELEGRAM = {
    "type": "object",
    "properties": {
        "chat_id": {"type": "string", "description": "Chat to send to."},
        "message": {"type": "string"},
        "silent": {"type": "boolean"},
    },
    "required": ["chat_id", "message"],
}
CHAT_RULES = ArgumentRules(
    defaults={"telegram_send_message": {"chat_id": ParameterDefault(value="8675309", max_length=20)}}
)


def prepared(
    arguments: dict[str, Any],
    schema: dict[str, Any] | None = TELEGRAM,
    rules: ArgumentRules = CHAT_RULES,
    tool: str = "telegram_send_message",
) -> PreparedArguments:
    return prepare_arguments(tool, arguments, schema, rules)


# --- the fixing steps, one by one: string booleans, nulls, invented parameters, defaults --


def test_string_booleans_become_booleans() -> None:
    result = prepared({"chat_id": "1", "message": "hi", "silent": "true"})
    assert result.arguments == {"chat_id": "1", "message": "hi", "silent": True}
    assert result.changes == ["'silent': 'true' → true"]


def test_string_booleans_stay_strings_where_the_tool_wants_a_string() -> None:
    assert prepared({"chat_id": "1", "message": "true"}).arguments["message"] == "true"


def test_string_booleans_of_parameters_without_a_schema_are_converted() -> None:
    result = prepare_arguments("legacy_tool", {"force": "FALSE", "name": "x"}, None)
    assert result.arguments == {"force": False, "name": "x"}


def test_null_values_are_removed_unless_the_schema_allows_null() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": ["string", "null"]}}}
    result = prepare_arguments("t", {"a": None, "b": None, "c": None}, schema)
    assert result.arguments == {"b": None}
    assert result.changes == ["'a': null removed", "'c': null removed"]


def test_known_hallucinated_parameters_are_stripped_by_tool_prefix() -> None:
    rules = ArgumentRules(hallucinated={"vercel_": ["teamId", "slug"]})
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "slug": {"type": "string"}}}
    result = prepare_arguments("vercel_deploy", {"name": "site", "teamId": "t1", "slug": "s"}, schema, rules)
    other = prepare_arguments("github_get", {"teamId": "t1"}, None, rules)

    assert result.arguments == {"name": "site", "slug": "s"}  # slug is a real parameter of this tool: kept
    assert result.changes == ["'teamId': removed (not a parameter of vercel_deploy)"]
    assert other.arguments == {"teamId": "t1"}


@pytest.mark.parametrize(
    ("chat_id", "reason"),
    [
        (None, "missing"),
        (8675309, "a integer where a string belongs"),
        ("a-chat-id-an-llm-made-up-from-nothing", "suspiciously long (37 characters)"),
    ],
)
def test_the_chat_id_rule_fills_missing_non_string_and_long_values(chat_id: object, reason: str) -> None:
    arguments = {"message": "hi"} | ({"chat_id": chat_id} if chat_id is not None else {})
    result = prepared(arguments)
    assert result.arguments == {"chat_id": "8675309", "message": "hi"}
    assert result.changes == [f"'chat_id': {reason}, the configured default filled in"]


def test_the_chat_id_rule_keeps_a_plausible_chat_id() -> None:
    assert prepared({"chat_id": "-1001234567890", "message": "hi"}).changes == []
    assert prepared({"chat_id": "@my_channel", "message": "hi"}).arguments["chat_id"] == "@my_channel"


def test_a_null_chat_id_counts_as_missing() -> None:
    assert prepared({"chat_id": None, "message": "hi"}).arguments["chat_id"] == "8675309"


def test_rules_merge_with_the_later_winning() -> None:
    merged = CHAT_RULES.merged(
        ArgumentRules(
            hallucinated={"vercel_": ["teamId"]},
            defaults={"telegram_send_message": {"chat_id": ParameterDefault(value="42")}},
        )
    )
    assert merged.defaults["telegram_send_message"]["chat_id"].value == "42"
    assert merged.hallucinated == {"vercel_": ["teamId"]}


# --- coercion to the schema, and the check ------------------------------------------------


NESTED = {
    "type": "object",
    "properties": {
        "limit": {"type": "integer"},
        "ratio": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "window": {
            "type": "object",
            "properties": {"days": {"type": "integer"}, "inclusive": {"type": "boolean"}},
            "required": ["days"],
        },
        "level": {"enum": ["low", "high"]},
        "priority": {"type": "integer", "enum": [1, 2, 3]},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "ref": {"$ref": "#/$defs/Point"},
    },
    "required": ["limit"],
    "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}}},
}


def test_values_are_coerced_to_the_schema_types_at_any_depth() -> None:
    result = prepare_arguments(
        "t",
        {
            "limit": " 10 ",
            "ratio": "0.25",
            "tags": '["a", "b"]',
            "window": '{"days": "7", "inclusive": "false"}',
            "level": "High",
            "priority": "2",
            "note": None,
            "ref": {"x": "1.5", "y": 2},
        },
        NESTED,
    )

    assert result.arguments == {
        "limit": 10,
        "ratio": 0.25,
        "tags": ["a", "b"],
        "window": {"days": 7, "inclusive": False},
        "level": "high",
        "priority": 2,
        "note": None,
        "ref": {"x": 1.5, "y": 2},
    }
    assert "'window.days': \"7\" → 7" in result.changes


def test_numbers_and_booleans_become_strings_where_strings_are_wanted() -> None:
    schema = {"type": "object", "properties": {"id": {"type": "string"}, "flag": {"type": "string"}}}
    result = prepare_arguments("t", {"id": 12345678901, "flag": True}, schema)
    assert result.arguments == {"id": "12345678901", "flag": "true"}


def test_an_empty_string_for_an_optional_non_string_parameter_is_dropped() -> None:
    assert prepare_arguments("t", {"limit": 3, "ratio": ""}, NESTED).arguments == {"limit": 3}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"limit": "ten"}, "t: argument 'limit': 'ten' is not of type 'integer'"),
        ({"limit": "4.5"}, "t: argument 'limit': '4.5' is not of type 'integer'"),
        ({}, "t: missing required argument 'limit'"),
        ({"limit": 1, "window": {"inclusive": True}}, "t: missing required argument 'window.days'"),
        ({"limit": 1, "tags": "a, b"}, "t: argument 'tags': 'a, b' is not of type 'array'"),
        ({"limit": 1, "tags": ["a", None]}, "t: argument 'tags.1': None is not of type 'string'"),
        ({"limit": 1, "priority": "7"}, "t: argument 'priority': 7 is not one of [1, 2, 3]"),
        ({"limit": 1, "level": "medium"}, "t: argument 'level': 'medium' is not one of ['low', 'high']"),
    ],
)
def test_a_mismatch_is_a_clear_error_naming_the_parameter(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolArgumentsError) as caught:
        prepare_arguments("t", arguments, NESTED)
    assert str(caught.value).startswith(message)
    assert not caught.value.retryable


def test_arguments_that_are_not_an_object_are_refused() -> None:
    with pytest.raises(ToolArgumentsError, match="arguments must be an object, got array"):
        prepare_arguments("t", [1, 2], NESTED)


def test_the_steps_can_be_switched_off() -> None:
    rules = ArgumentRules(coerce_string_booleans=False, strip_nulls=False, coerce_types=False)
    schema = {"type": "object", "properties": {"n": {"type": ["integer", "string"]}, "z": {}}}
    assert prepare_arguments("t", {"n": "true", "z": None}, schema, rules).arguments == {
        "n": "true",
        "z": None,
    }


def test_a_broken_schema_skips_the_check_and_the_server_judges() -> None:
    broken = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": "n"}
    assert prepare_arguments("t", {"n": "5"}, broken).arguments == {"n": 5}


# --- relaxed schemas ----------------------------------------------------------------------


def test_relax_schema_accepts_strings_for_scalars_and_null_for_optional_properties() -> None:
    relaxed = relax_schema(NESTED)

    props = relaxed["properties"]
    assert props["limit"]["type"] == ["integer", "string"]  # required: no null
    assert props["ratio"]["type"] == ["number", "string", "null"]
    assert props["window"]["properties"]["days"]["type"] == ["integer", "string"]
    assert props["window"]["properties"]["inclusive"]["type"] == ["boolean", "string", "null"]
    assert props["priority"]["enum"] == [1, 2, 3, "1", "2", "3", None]
    assert props["ref"] == {"anyOf": [{"$ref": "#/$defs/Point"}, {"type": "null"}]}
    assert relaxed["$defs"]["Point"]["properties"]["x"]["type"] == ["number", "string", "null"]
    assert NESTED["properties"]["limit"] == {"type": "integer"}  # the input is left alone
    validator_for(relaxed).check_schema(relaxed)


def test_relaxed_one_of_becomes_any_of() -> None:
    relaxed = relax_schema(
        {
            "type": "object",
            "properties": {"v": {"oneOf": [{"type": "integer"}, {"type": "string"}]}},
            "required": ["v"],
        }
    )
    assert relaxed["properties"]["v"] == {"anyOf": [{"type": ["integer", "string"]}, {"type": "string"}]}


def test_an_answer_to_the_relaxed_schema_comes_back_strict() -> None:
    answer = {
        "limit": "5",
        "ratio": None,
        "window": {"days": "3", "inclusive": "true"},
        "priority": "1",
        "note": None,
        "tags": None,
        "ref": {"x": "0.5", "y": None},
    }
    validator_for(relax_schema(NESTED))(relax_schema(NESTED)).validate(answer)

    assert prepare_arguments("t", answer, NESTED).arguments == {
        "limit": 5,
        "window": {"days": 3, "inclusive": True},
        "priority": 1,
        "note": None,
        "ref": {"x": 0.5},
    }


# --- properties ---------------------------------------------------------------------------

NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True)
TRICKY_STRINGS = st.sampled_from(["", "true", "False", "5", "-1.5", "null", "[1]", '{"a": 1}', " 7 ", "1e3"])
STRINGS = st.one_of(st.text(max_size=8), TRICKY_STRINGS)

LEAVES = st.one_of(
    st.just({"type": "string"}),
    st.just({"type": "integer"}),
    st.just({"type": "number"}),
    st.just({"type": "boolean"}),
    st.just({"type": ["string", "null"]}),
    st.just({"type": "integer", "minimum": 0, "maximum": 100}),
    st.lists(STRINGS, min_size=1, max_size=4, unique=True).map(lambda xs: {"type": "string", "enum": xs}),
    st.lists(st.integers(-5, 5), min_size=1, max_size=4, unique=True).map(lambda xs: {"enum": xs}),
)


@st.composite
def object_schemas(draw: st.DrawFn, children: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    properties = draw(st.dictionaries(NAMES, children, max_size=4))
    required = draw(st.lists(st.sampled_from(sorted(properties)), unique=True)) if properties else []
    schema: dict[str, Any] = {"type": "object", "properties": properties, "required": required}
    if draw(st.booleans()):
        schema["additionalProperties"] = False
    return schema


SCHEMAS = st.recursive(
    LEAVES,
    lambda children: st.one_of(
        children.map(lambda c: {"type": "array", "items": c}),
        object_schemas(children),
        children.map(lambda c: {"anyOf": [c, {"type": "null"}]}),  # pydantic's Optional[...]
    ),
    max_leaves=10,
)


@st.composite
def tool_schemas(draw: st.DrawFn) -> dict[str, Any]:
    schema = draw(object_schemas(SCHEMAS))
    # Sometimes a property lives in $defs behind a $ref, as pydantic writes nested models.
    if schema["properties"] and draw(st.booleans()):
        name = draw(st.sampled_from(sorted(schema["properties"])))
        schema["$defs"] = {"Shared": schema["properties"][name]}
        schema["properties"][name] = {"$ref": "#/$defs/Shared"}
    return schema


def resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    return root["$defs"]["Shared"] if "$ref" in schema else schema


def allows_null(schema: dict[str, Any], root: dict[str, Any]) -> bool:
    schema = resolve(schema, root)
    kind = schema.get("type")
    return "null" in (kind if isinstance(kind, list) else [kind]) or any(
        b.get("type") == "null" for b in schema.get("anyOf", [])
    )


def values(schema: dict[str, Any], root: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values valid against ``schema``."""
    schema = resolve(schema, root)
    if "anyOf" in schema:
        return st.one_of([values(branch, root) for branch in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == ["string", "null"]:
        return st.one_of(STRINGS, st.none())
    if kind == "string":
        return STRINGS
    if kind == "integer":
        return st.integers(schema.get("minimum"), schema.get("maximum"))
    if kind == "number":
        return st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False))
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(values(schema["items"], root), max_size=3)
    required = set(schema["required"])
    return st.fixed_dictionaries(
        {name: values(sub, root) for name, sub in schema["properties"].items() if name in required},
        optional={
            name: values(sub, root) for name, sub in schema["properties"].items() if name not in required
        },
    )


def relaxed(
    schema: dict[str, Any], value: Any, root: dict[str, Any], *, top: bool = False, json_text: bool = False
) -> st.SearchStrategy[Any]:
    """What an LLM answers for ``value`` when offered the relaxed schema: strings for scalars,
    null for optional parameters it means to leave out, and with ``json_text`` (beyond the
    relaxed schema, but LLMs do it) JSON text for arrays and objects."""
    schema = resolve(schema, root)
    if "anyOf" in schema:
        if value is None:
            return st.none()
        branch = next(b for b in schema["anyOf"] if b.get("type") != "null")  # only [X, null] is generated
        return relaxed(branch, value, root, json_text=json_text)
    if isinstance(value, bool):
        text = "true" if value else "false"
        return st.sampled_from([value, text, text.upper(), text.capitalize()])
    if isinstance(value, int | float):
        # The relaxed schema lists the string forms of enum members exactly; a free number takes any string.
        return st.sampled_from([value, str(value)] if "enum" in schema else [value, str(value), f" {value} "])
    if isinstance(value, list):
        items = st.tuples(*(relaxed(schema["items"], item, root, json_text=json_text) for item in value)).map(list)
        return items if top or not json_text else st.one_of(items, st.just(json.dumps(value)))
    if isinstance(value, dict):
        optional_nulls = [
            name
            for name, sub in schema["properties"].items()
            if name not in value and name not in schema["required"] and not allows_null(sub, root)
        ]
        members = st.fixed_dictionaries(
            {name: relaxed(schema["properties"][name], item, root, json_text=json_text)
             for name, item in value.items()},
            optional=dict.fromkeys(optional_nulls, st.none()),
        )
        return members if top or not json_text else st.one_of(members, st.just(json.dumps(value)))
    return st.just(value)


def strict(value: Any) -> str:
    """JSON text, so that True and 1 (equal in Python) differ."""
    return json.dumps(value, sort_keys=True)


@st.composite
def schema_and_value(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    schema = draw(tool_schemas())
    return schema, draw(values(schema, schema))


# 100 examples each in the suite; HYPOTHESIS_EXAMPLES=3000 for a deeper search.
PROPERTY_SETTINGS = settings(max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", "100")), deadline=None,
                             suppress_health_check=[HealthCheck.too_slow])


@PROPERTY_SETTINGS
@given(schema_and_value())
def test_valid_arguments_pass_unchanged(case: tuple[dict[str, Any], Any]) -> None:
    schema, value = case
    validator_for(schema)(schema).validate(value)  # the generator's own promise

    result = prepare_arguments("t", value, schema)

    assert strict(result.arguments) == strict(value)
    assert result.changes == []


@PROPERTY_SETTINGS
@given(st.data())
def test_a_relaxed_answer_is_valid_for_the_relaxed_schema_and_comes_back_strict(data: st.DataObject) -> None:
    schema, value = data.draw(schema_and_value())
    json_text = data.draw(st.booleans())
    answer = data.draw(relaxed(schema, value, schema, top=True, json_text=json_text))
    loose = relax_schema(schema)
    validator_for(loose).check_schema(loose)

    assert validator_for(loose)(loose).is_valid(value)
    if not json_text:
        assert validator_for(loose)(loose).is_valid(answer)
    assert strict(prepare_arguments("t", answer, schema).arguments) == strict(value)


JSON = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), STRINGS
    ),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(NAMES, children, max_size=3)),
    max_leaves=12,
)


# Beyond what the generators above can answer for: unions of unlike types, const, allOf,
# boolean schemas, references that lead nowhere, tuples.
WILD_LEAVES = st.one_of(
    LEAVES,
    st.just(True),
    st.just(False),
    st.just({}),
    st.just({"$ref": "#/$defs/Missing"}),
    st.just({"type": ["integer", "string"]}),
    st.just({"type": ["boolean", "array"], "items": {"type": "number"}}),
    JSON.map(lambda c: {"const": c}),
    st.just({"oneOf": [{"type": "integer"}, {"type": "number", "multipleOf": 0.5}]}),
    st.just({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "boolean"}], "items": False}),
)
WILD = st.recursive(
    WILD_LEAVES,
    lambda children: st.one_of(
        object_schemas(children),
        children.map(lambda c: {"type": "array", "items": c}),
        st.lists(children, min_size=1, max_size=3).map(lambda cs: {"anyOf": cs}),
        st.lists(children, min_size=1, max_size=3).map(lambda cs: {"oneOf": cs}),
        st.lists(children, min_size=1, max_size=2).map(lambda cs: {"allOf": cs}),
    ),
    max_leaves=10,
)


@PROPERTY_SETTINGS
@given(st.one_of(tool_schemas(), object_schemas(WILD)), st.dictionaries(NAMES, JSON, max_size=5))
def test_any_answer_gives_valid_arguments_or_a_clear_error(
    schema: dict[str, Any], answer: dict[str, Any]
) -> None:
    validator = validator_for(schema)(schema)
    rules = ArgumentRules(
        hallucinated={"t": ["a"]}, defaults={"t": {"b": ParameterDefault(value="x", max_length=3)}}
    )
    try:
        result = prepare_arguments("t", answer, schema, rules)
    except ToolArgumentsError as error:
        message = str(error)
        assert message.startswith("t: ") and ("argument" in message or "Additional properties" in message)
        return
    try:
        valid = validator.is_valid(result.arguments)
    except referencing.exceptions.Unresolvable:
        return  # a $ref to nowhere: no one can judge; the pipeline leaves it to the server
    assert valid


# --- judged before the call: what registration refuses ------------------------------------

OUTBOX_SEND = {
    "type": "object",
    "properties": {"message": {"type": "string"}, "chat_id": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
    "required": ["message"],
}


def problems_of(arguments: Any, schema: dict[str, Any] = OUTBOX_SEND, rules: ArgumentRules | None = None,
                tool: str = "outbox_send_message") -> list[tuple[str, str]]:
    return [tuple(p) for p in argument_problems(tool, arguments, schema, rules,
                                                any_value=lambda v: isinstance(v, str) and "{{" in v)]


def test_a_missing_required_parameter_and_an_unknown_one_are_both_named() -> None:
    assert problems_of({"msg": "hi"}) == [
        ("msg", "unknown parameter; did you mean 'message'?"),
        ("", "missing required parameter 'message'"),
    ]


def test_an_unknown_parameter_without_a_close_name_lists_the_declared_ones() -> None:
    assert problems_of({"message": "hi", "colour": "red"}) == [
        ("colour", "unknown parameter (expected one of chat_id, message)")]


def test_types_are_judged_after_the_pipeline_coerces_them() -> None:
    schema = {"type": "object", "properties": {"limit": {"type": "integer"}, "urgent": {"type": "boolean"}}}
    assert problems_of({"limit": "10", "urgent": "true"}, schema) == []
    assert problems_of({"limit": "ten"}, schema) == [("limit", "'ten' is not of type 'integer'")]


def test_what_the_pipeline_fixes_is_not_a_problem() -> None:
    # A null for an optional parameter is dropped; an invented parameter is stripped; a default fills a gap.
    rules = ArgumentRules(hallucinated={"telegram_": ["teamId"]},
                          defaults={"telegram_send_message": {"chat_id": ParameterDefault(value="1")}})
    assert problems_of({"message": "hi", "silent": None, "teamId": "x"}, TELEGRAM, rules,
                       "telegram_send_message") == []


def test_a_placeholder_stands_for_any_value() -> None:
    schema = {"type": "object", "properties": {"limit": {"type": "integer", "maximum": 5},
                                               "tags": {"type": "array", "items": {"enum": ["a"]}}},
              "required": ["limit"]}
    assert problems_of({"limit": "{{fetch.count}}", "tags": ["{{fetch.tag}}"]}, schema) == []
    assert problems_of({"limit": 9}, schema) == [("limit", "9 is greater than the maximum of 5")]


def test_a_tool_that_welcomes_other_parameters_or_declares_none_takes_any() -> None:
    assert problems_of({"anything": 1}, {"type": "object"}) == []
    assert problems_of({"message": "hi", "x": 1}, {**OUTBOX_SEND, "additionalProperties": True}) == []


def test_an_invalid_schema_judges_nothing() -> None:
    assert problems_of({"x": 1}, {"type": "object", "properties": {"x": {"type": 12}}}) == []
