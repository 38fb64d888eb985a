"""Tool-call arguments: the normalization pipeline every call goes through.

LLMs answer tool calls loosely: ``"true"`` for a boolean, ``null`` for "nothing",
parameters the tool does not have, a made-up chat id. Every call, from either tier
(Direct plans and LLMs alike), runs::

    string booleans → nulls removed → hallucinated parameters stripped
      → defaults injected → coerced to the tool's JSON Schema → checked

- the steps read the tool's schema, so they never damage a value the tool wants
  as it is (``"true"`` stays a string where the schema asks for a string; ``null``
  stays where the schema allows it; a "hallucinated" parameter the tool really
  declares is kept);
- the chat_id rule (``telegram_send_message.chat_id`` replaced when missing, not a
  string or longer than 20 characters: real ids are short) is one instance of
  :class:`ParameterDefault`, configured per tool;
- the coercion turns what an LLM answers against a :func:`skills.spec.schemas.relax_schema` schema
  (numbers and booleans as strings, ``null`` for optional properties, arrays and
  objects as JSON text) back into the strict types, at any depth;
- the check is the tool's own JSON Schema; a mismatch is a
  :class:`ToolArgumentsError` that names the parameter.

Everything here is pure (no I/O), so workflows, activities and tests can use it.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from skills.errors import ToolArgumentsError
from skills.spec.schemas import LenientSchema, json_type, linear_pattern
from skills.suggest import did_you_mean

if TYPE_CHECKING:
    from jsonschema import ValidationError
    from jsonschema.protocols import Validator

# jsonschema is imported where a schema is compiled (a tool's, when its server connects or a skill names it):
# a worker polls before, and a process that compiles none (`skills get`) does not load it.

# ---------------------------------------------------------------------------
# Configuration


class ParameterDefault(BaseModel):
    """A value filled into one parameter of one tool, e.g. the primary chat's id into ``chat_id``.

    The parameter is filled when it is missing (or ``null``), when its value has
    another JSON type than :attr:`value` (an LLM's number where an id string
    belongs), or when it is a string longer than :attr:`max_length` (an invented id).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: JsonValue
    """What to fill in, e.g. the primary chat id."""
    max_length: int | None = Field(default=None, ge=0)
    """Also replace a string longer than this; ``None`` never replaces a string of the right type."""
    replace_other_types: bool = True
    """Also replace a value whose JSON type differs from the type of :attr:`value`."""


class ArgumentRules(BaseModel):
    """How the pipeline treats arguments; the worker builds it from its settings.

    As a JSON file (``SKILLS_ARGUMENT_RULES``)::

        {"hallucinated": {"vercel_": ["teamId", "slug"]},
         "defaults": {"telegram_send_message": {"chat_id": {"value": "123456", "max_length": 20}}}}
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    hallucinated: dict[str, list[str]] = Field(default_factory=dict)
    """Tool-name prefix → parameters LLMs invent for those tools; removed unless the tool declares them."""
    defaults: dict[str, dict[str, ParameterDefault]] = Field(default_factory=dict)
    """Tool name → parameter → the default filled in (see :class:`ParameterDefault`)."""
    coerce_string_booleans: bool = True
    """``"true"``/``"false"`` become booleans where the tool does not ask for a string."""
    strip_nulls: bool = True
    """``null`` values are removed where the tool's schema does not allow ``null``."""
    coerce_types: bool = True
    """Values are converted to the schema's types where that is unambiguous (``"3"`` → ``3``)."""

    def merged(self, other: ArgumentRules) -> ArgumentRules:
        """These rules with ``other``'s added; ``other`` wins where both name the same parameter."""
        hallucinated = {prefix: list(names) for prefix, names in self.hallucinated.items()}
        for prefix, names in other.hallucinated.items():
            known = hallucinated.setdefault(prefix, [])
            known.extend(name for name in names if name not in known)
        defaults = {tool: dict(params) for tool, params in self.defaults.items()}
        for tool, params in other.defaults.items():
            defaults.setdefault(tool, {}).update(params)
        return self.model_copy(update={"hallucinated": hallucinated, "defaults": defaults})


class PreparedArguments(BaseModel):
    """The arguments as the tool gets them, and what the pipeline changed, in words."""

    arguments: dict[str, Any]
    changes: list[str] = Field(default_factory=list)
    """For example ``"'limit': '10' → 10"``; injected values are not repeated here."""


# ---------------------------------------------------------------------------
# The pipeline


def prepare_arguments(
    tool: str,
    arguments: Any,
    schema: Mapping[str, Any] | None,
    rules: ArgumentRules | None = None,
    *,
    validator: Validator | None = None,
) -> PreparedArguments:
    """Run ``arguments`` of ``tool`` through the pipeline against its strict input ``schema``.

    ``validator`` is the compiled ``schema`` (see :func:`compile_schema`), passed by
    callers that cache it; without one it is compiled here. Raises
    :class:`ToolArgumentsError` naming the parameter when the result breaks the schema.
    """
    args, changes, validator, valid = _pipeline(tool, arguments, schema, rules, validator)
    if not valid:
        check_arguments(tool, validator, args)
    return PreparedArguments(arguments=args, changes=changes)


def _pipeline(
    tool: str,
    arguments: Any,
    schema: Mapping[str, Any] | None,
    rules: ArgumentRules | None,
    validator: Validator | None,
) -> tuple[dict[str, Any], list[str], Validator | None, bool]:
    """Every step but the check: (the arguments, the changes, the validator, whether they are valid)."""
    rules = rules or _DEFAULT_RULES
    if not isinstance(arguments, Mapping):
        raise ToolArgumentsError(f"{tool}: arguments must be an object, got {json_type(arguments) or type(arguments).__name__}")
    args = dict(arguments)
    changes: list[str] = []
    lenient = LenientSchema(schema if isinstance(schema, Mapping) else {})
    root = lenient.root

    if rules.coerce_string_booleans:
        for name, value in list(args.items()):
            sub = lenient.property_schema(root, name)
            if isinstance(value, str) and value.strip().lower() in ("true", "false"):
                allowed = lenient.types(sub) if sub is not None else None
                if sub is None or (allowed is not None and "string" not in allowed):
                    args[name] = value.strip().lower() == "true"
                    changes.append(f"{name!r}: {value!r} → {json.dumps(args[name])}")

    if rules.strip_nulls:
        for name, value in list(args.items()):
            sub = lenient.property_schema(root, name)
            # A null means "nothing": drop it, unless the tool's schema explicitly allows null there.
            if value is None and (sub is None or not lenient.allows_null(sub)):
                del args[name]
                changes.append(f"{name!r}: null removed")

    declared = lenient.declared(root)
    for prefix, names in rules.hallucinated.items():
        if tool.startswith(prefix):
            for name in names:
                if name in args and name not in declared:
                    del args[name]
                    changes.append(f"{name!r}: removed (not a parameter of {tool})")

    for name, default in rules.defaults.get(tool, {}).items():
        reason = _default_reason(args, name, default)
        if reason:
            args[name] = copy.deepcopy(default.value)
            changes.append(f"{name!r}: {reason}, the configured default filled in")

    if validator is None and schema:
        validator = compile_schema(schema)
    # Most calls need no coercion: one validation pass then, not a walk and a second pass.
    valid = _is_valid(validator, args)
    if not valid and rules.coerce_types and schema:
        args = lenient.coerce_object(args, root, (), changes, 0, strip_nulls=rules.strip_nulls)
    return args, changes, validator, valid


class ArgumentProblem(NamedTuple):
    """One reason a tool would refuse a call, found before the call is made."""

    parameter: str
    """The parameter at fault, dotted for nested ones (``options.limit``); "" for the arguments as a whole."""
    message: str


def argument_problems(
    tool: str,
    arguments: Any,
    schema: Mapping[str, Any] | None,
    rules: ArgumentRules | None = None,
    *,
    any_value: Callable[[Any], bool] = lambda _value: False,
) -> list[ArgumentProblem]:
    """Every reason a call of ``tool`` with ``arguments`` would be refused, judged as a call would
    be: after the pipeline (string booleans, nulls, invented parameters, defaults, coercion).

    Required parameters that are missing, parameters the tool does not declare (with the
    closest declared name), and values the schema refuses. A value for which ``any_value``
    is true (a placeholder filled at run time) stands for any value. An invalid schema
    judges nothing, as at call time (the server judges then).
    """
    if not isinstance(schema, Mapping) or not schema:
        return []
    try:
        args, _changes, validator, valid = _pipeline(tool, arguments, schema, rules, None)
    except ToolArgumentsError as e:
        return [ArgumentProblem("", str(e).removeprefix(f"{tool}: "))]
    if validator is None:
        return []
    problems: list[ArgumentProblem] = []
    lenient = LenientSchema(schema)
    declared = lenient.declared(lenient.root)
    if declared and not lenient.welcomes_undeclared(lenient.root):
        for name in args:
            if name not in declared and lenient.property_schema(lenient.root, name) is None:
                problems.append(ArgumentProblem(name, "unknown parameter" + did_you_mean(name, declared, declared)))
    if valid:
        return problems
    try:
        errors = sorted(validator.iter_errors(args), key=lambda e: [str(p) for p in e.absolute_path])
    except Exception:  # noqa: BLE001 - e.g. a remote $ref or a broken regex: the server judges instead
        return problems
    for error in errors:
        path = ".".join(str(part) for part in error.absolute_path)
        if _stands_for_anything(error, any_value):
            continue
        if error.validator == "required" and isinstance(error.instance, dict):
            where = f"{path}." if path else ""
            problems += [ArgumentProblem(path, f"missing required parameter {where + name!r}")
                         for name in error.validator_value if name not in error.instance]
        elif error.validator == "additionalProperties" and not path:
            continue  # each one is reported above, with the closest declared name
        else:
            problems.append(ArgumentProblem(path, error.message))
    return problems


_COMBINATORS = frozenset({"anyOf", "oneOf", "allOf", "not", "if", "then", "else", "dependentSchemas"})


def _stands_for_anything(error: ValidationError, any_value: Callable[[Any], bool]) -> bool:
    """Whether the error is about a value filled at run time (or, for a combinator, one inside it)."""
    if any_value(error.instance):
        return True
    return error.validator in _COMBINATORS and _contains(error.instance, any_value)


def _contains(value: Any, predicate: Callable[[Any], bool]) -> bool:
    if predicate(value):
        return True
    if isinstance(value, dict):
        return any(_contains(v, predicate) for v in value.values())
    if isinstance(value, list):
        return any(_contains(v, predicate) for v in value)
    return False


def _is_valid(validator: Validator | None, arguments: dict[str, Any]) -> bool:
    if validator is None:
        return False
    try:
        return validator.is_valid(arguments)
    except Exception:  # noqa: BLE001 - judged (and skipped) the same way by check_arguments
        return False


_DEFAULT_RULES = ArgumentRules()


def _default_reason(args: Mapping[str, Any], name: str, default: ParameterDefault) -> str | None:
    if args.get(name) is None:
        return "missing"
    value = args[name]
    if default.replace_other_types and default.value is not None and not _same_json_type(value, default.value):
        return f"a {json_type(value)} where a {json_type(default.value)} belongs"
    if default.max_length is not None and isinstance(value, str) and len(value) > default.max_length:
        return f"suspiciously long ({len(value)} characters)"
    return None


def _same_json_type(a: Any, b: Any) -> bool:
    numbers = ("integer", "number")
    ta, tb = json_type(a), json_type(b)
    return ta == tb or (ta in numbers and tb in numbers)


def compile_schema(schema: Mapping[str, Any]) -> Validator | None:
    """A validator for ``schema``; None when the schema itself is invalid (then the server judges). Kept
    by the schema's canonical JSON: a registration checks each step against its tool's schema, and
    checking the schema itself was most of that (a validator holds no state between validations)."""
    try:
        key = json.dumps(schema, sort_keys=True, default=str)
    except (TypeError, ValueError, RecursionError):
        return _compile(schema)
    return _compiled(key) if len(key) <= MAX_CACHED_SCHEMA else _compile(schema)


MAX_CACHED_SCHEMA = 64 * 1024
"""Characters of a schema's JSON past which its validator is not kept (256 of them at most are)."""


@functools.lru_cache(maxsize=256)
def _compiled(key: str) -> Validator | None:
    return _compile(json.loads(key))


def _compile(schema: Mapping[str, Any]) -> Validator | None:
    from jsonschema import SchemaError
    from jsonschema.validators import validator_for

    try:
        cls = validator_for(schema)
        cls.check_schema(schema)
        return _linear(cls)(schema)
    except SchemaError:
        return None


_LINEAR: dict[type[Any], type[Any]] = {}


def _linear(cls: type[Any]) -> type[Any]:
    """``cls`` with its regex keywords on RE2 (``skills.spec.schemas.linear_pattern``): jsonschema searches
    with Python's re, so a tool's ``pattern: ^(a+)+$`` and a long value from a model or a plan hung
    the registration, or the tool call, holding the GIL."""
    if cls not in _LINEAR:
        from jsonschema.validators import extend

        _LINEAR[cls] = extend(cls, {"pattern": _pattern, "patternProperties": _pattern_properties,
                                    "additionalProperties": _additional_properties})
    return _LINEAR[cls]


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    from jsonschema import ValidationError

    compiled = linear_pattern(pattern)
    if validator.is_type(instance, "string") and compiled is not None and not compiled.search(instance):
        shown = instance if len(instance) <= 60 else instance[:59] + "…"
        yield ValidationError(f"{shown!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        compiled = linear_pattern(pattern)
        if compiled is None:
            continue
        for name, value in instance.items():
            if compiled.search(name):
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    # jsonschema's own, with the patterns searched by RE2; a pattern RE2 cannot take may match any name.
    from jsonschema import ValidationError

    if not validator.is_type(instance, "object"):
        return
    patterns = [linear_pattern(p) for p in schema.get("patternProperties", {})]
    if None in patterns:
        return
    declared = schema.get("properties", {})
    extras = {name for name in instance
              if name not in declared and not any(p.search(name) for p in patterns)}
    if validator.is_type(extra, "object"):
        for name in extras:
            yield from validator.descend(instance[name], extra, path=name)
    elif not extra and extras:
        names = ", ".join(repr(name) for name in sorted(extras, key=str))
        if "patternProperties" in schema:
            regexes = ", ".join(repr(p) for p in sorted(schema["patternProperties"]))
            yield ValidationError(f"{names} {'does' if len(extras) == 1 else 'do'} not match any of the "
                                  f"regexes: {regexes}")
        else:
            yield ValidationError(f"Additional properties are not allowed ({names} "
                                  f"{'was' if len(extras) == 1 else 'were'} unexpected)")


def check_arguments(tool_name: str, validator: Validator | None, arguments: dict[str, Any]) -> None:
    """Raise :class:`ToolArgumentsError` naming the parameter when ``arguments`` break the schema."""
    if validator is None:
        return
    from jsonschema.exceptions import best_match  # loaded with the validator

    try:
        error = best_match(validator.iter_errors(arguments))
    except Exception:  # noqa: BLE001 - e.g. a remote $ref or a broken regex: the server judges instead
        return
    if error is not None:
        raise ToolArgumentsError(f"{tool_name}: {_describe_argument_error(error)}")


def _describe_argument_error(error: ValidationError) -> str:
    path = ".".join(str(part) for part in error.absolute_path)
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [name for name in error.validator_value if name not in error.instance]
        where = f"{path}." if path else ""
        return "missing required argument " + ", ".join(repr(where + name) for name in missing)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        return f"{error.message} (in {path!r})" if path else error.message
    return f"argument {path!r}: {error.message}" if path else f"arguments: {error.message}"
