"""Tools' JSON Schemas, read leniently: what types a schema admits where, values coerced to
it, and the relaxed schema offered to an LLM.

The argument pipeline (``skills.run.arguments``) coerces what an LLM answered against a
:func:`relax_schema` schema back into the strict types with :class:`LenientSchema`.
Pure code, no I/O.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterator, Mapping
from typing import Any

import re2

from skills import linear

MAX_DEPTH = 64
"""Deeper values or schemas are passed on unchanged (the check still judges them)."""


def json_type(value: Any) -> str | None:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return None


def _fits(value: Any, types: frozenset[str] | None) -> bool:
    if types is None:
        return True
    kind = json_type(value)
    return kind in types or (kind == "integer" and "number" in types)


_INTEGER = linear.compile(r"[+-]?\d+")
# One way to match each text: ``\d+\.?\d*`` let the two digit runs share a run of digits in every
# split, so a long number followed by a letter took quadratic time.
_NUMBER = linear.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
MAX_NUMBER_TEXT = 4000
"""Characters of a number written as text that is read as one; Python refuses to read an integer of
over 4,300 digits (ValueError), and no tool takes such a number."""
_FAIL = object()


class LenientSchema:
    """One tool's schema, read leniently (local ``$ref``s followed, unknown keywords ignored):
    the types it admits where, the properties it declares, and values coerced to it."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root

    def resolve(self, schema: Any) -> Any:
        """Follow local ``$ref``s (``#/$defs/...``); an unresolvable one reads as "anything"."""
        for _hop in range(32):
            if not isinstance(schema, Mapping) or not isinstance(schema.get("$ref"), str):
                return schema
            ref = schema["$ref"]
            if not ref.startswith("#"):
                return {}
            target: Any = self.root
            for part in [p for p in ref[1:].split("/") if p]:
                part = part.replace("~1", "/").replace("~0", "~")
                if isinstance(target, Mapping) and part in target:
                    target = target[part]
                elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                    target = target[int(part)]
                else:
                    return {}
            if len(schema) > 1:  # siblings of $ref (2019-09+): keep the ones the target lacks
                merged = dict(target) if isinstance(target, Mapping) else {}
                merged.update({k: v for k, v in schema.items() if k != "$ref" and k not in merged})
                target = merged
            schema = target
        return {}

    def types(self, schema: Any, depth: int = 0) -> frozenset[str] | None:
        """The JSON types ``schema`` admits; None when it does not constrain the type."""
        schema = self.resolve(schema)
        if schema is True or not isinstance(schema, Mapping) or depth > MAX_DEPTH:
            return None if schema is not False else frozenset()
        allowed: frozenset[str] | None = None
        kind = schema.get("type")
        if isinstance(kind, str):
            allowed = frozenset({kind})
        elif isinstance(kind, list):
            allowed = frozenset(k for k in kind if isinstance(k, str))
        if allowed is not None and "number" in allowed:
            allowed |= {"integer"}
        constants = schema["enum"] if isinstance(schema.get("enum"), list) else None
        if "const" in schema:
            constants = [schema["const"]]
        if constants is not None:
            found = frozenset(t for c in constants if (t := json_type(c)))
            found |= {"number"} if "integer" in found else frozenset()
            allowed = found if allowed is None else allowed & found
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key)
            if isinstance(branches, list) and branches:
                union: frozenset[str] | None = frozenset()
                for branch in branches:
                    branch_types = self.types(branch, depth + 1)
                    union = None if union is None or branch_types is None else union | branch_types
                if union is not None:
                    allowed = union if allowed is None else allowed & union
        if isinstance(schema.get("allOf"), list):
            for branch in schema["allOf"]:
                branch_types = self.types(branch, depth + 1)
                if branch_types is not None:
                    allowed = branch_types if allowed is None else allowed & branch_types
        return allowed

    def allows_null(self, schema: Any) -> bool:
        types = self.types(schema)
        return types is None or "null" in types

    def property_schema(self, schema: Any, name: str) -> Any:
        """The schema of property ``name`` of an object schema; None when nothing is said about it."""
        for part in self._object_parts(schema):
            properties = part.get("properties")
            if isinstance(properties, Mapping) and name in properties:
                return properties[name]
        for part in self._object_parts(schema):
            patterns = part.get("patternProperties")
            if isinstance(patterns, Mapping):
                for pattern, sub in patterns.items():
                    compiled = linear_pattern(pattern)
                    if compiled is not None and compiled.search(name):
                        return sub
            extra = part.get("additionalProperties")
            if isinstance(extra, Mapping):
                return extra
        return None

    def declared(self, schema: Any) -> set[str]:
        names: set[str] = set()
        for part in self._object_parts(schema):
            if isinstance(part.get("properties"), Mapping):
                names.update(part["properties"])
        return names

    def welcomes_undeclared(self, schema: Any) -> bool:
        """Whether an object schema that declares properties says outright that others are welcome too
        (``additionalProperties: true``). Left unsaid, a name it does not declare is taken for a slip:
        servers built from function signatures (FastMCP) declare every parameter and drop the rest."""
        return any(part.get("additionalProperties") is True for part in self._object_parts(schema))

    def required(self, schema: Any) -> set[str]:
        names: set[str] = set()
        for part in self._object_parts(schema):
            if isinstance(part.get("required"), list):
                names.update(n for n in part["required"] if isinstance(n, str))
        return names

    def _object_parts(self, schema: Any, depth: int = 0) -> Iterator[Mapping[str, Any]]:
        # An object's properties may be spread over allOf branches (pydantic's inheritance does that).
        schema = self.resolve(schema)
        if not isinstance(schema, Mapping) or depth > 8:
            return
        yield schema
        if isinstance(schema.get("allOf"), list):
            for branch in schema["allOf"]:
                yield from self._object_parts(branch, depth + 1)

    # -- coercion --------------------------------------------------------

    def coerce(self, value: Any, schema: Any, path: tuple[str, ...], changes: list[str], depth: int,
               *, strip_nulls: bool) -> Any:
        schema = self.resolve(schema)
        if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
            return value
        if "enum" in schema or "const" in schema:
            value = self._match_constant(value, schema, path, changes)
        types = self.types(schema)
        if types is not None and not _fits(value, types):
            value = self._convert(value, types, path, changes)
        elif types is not None and isinstance(value, float) and value.is_integer() and "integer" in types and "number" not in types:
            value = int(value)
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key)
            if isinstance(branches, list) and branches:
                value = self._coerce_branches(value, branches, path, changes, depth, strip_nulls=strip_nulls)
        if isinstance(schema.get("allOf"), list):
            for branch in schema["allOf"]:
                if isinstance(value, dict | list):
                    value = self.coerce(value, branch, path, changes, depth + 1, strip_nulls=strip_nulls)
        if isinstance(value, dict) and (types is None or "object" in types):
            value = self.coerce_object(value, schema, path, changes, depth + 1, strip_nulls=strip_nulls)
        elif isinstance(value, list) and (types is None or "array" in types):
            value = self._coerce_items(value, schema, path, changes, depth + 1, strip_nulls=strip_nulls)
        return value

    def coerce_object(self, value: dict[str, Any], schema: Any, path: tuple[str, ...], changes: list[str],
                      depth: int, *, strip_nulls: bool) -> dict[str, Any]:
        required = self.required(schema)
        result: dict[str, Any] = {}
        for name, item in value.items():
            sub = self.property_schema(schema, name)
            where = _where((*path, name))
            # LLMs answer "nothing" with null, or with "" for an optional parameter: drop what the
            # tool would refuse (a required one is then reported missing, which says what to fix).
            if sub is not None and item is None and strip_nulls and not self.allows_null(sub):
                changes.append(f"{where}: null removed")
                continue
            if sub is not None and item == "" and name not in required and not self.allows_null(sub) and (
                "string" not in (self.types(sub) or {"string"})
            ):
                changes.append(f"{where}: empty string removed")
                continue
            result[name] = self.coerce(item, sub, (*path, name), changes, depth, strip_nulls=strip_nulls) if sub is not None else item
        return result

    def _coerce_items(self, value: list[Any], schema: Mapping[str, Any], path: tuple[str, ...],
                      changes: list[str], depth: int, *, strip_nulls: bool) -> list[Any]:
        prefix = schema.get("prefixItems") if isinstance(schema.get("prefixItems"), list) else None
        items = schema.get("items")
        if prefix is None and isinstance(items, list):  # draft 4-7 tuple form
            prefix, items = items, schema.get("additionalItems")
        result = []
        for index, item in enumerate(value):
            sub = prefix[index] if prefix is not None and index < len(prefix) else items
            if isinstance(sub, Mapping):
                item = self.coerce(item, sub, (*path, str(index)), changes, depth, strip_nulls=strip_nulls)
            result.append(item)
        return result

    def _coerce_branches(self, value: Any, branches: list[Any], path: tuple[str, ...], changes: list[str],
                         depth: int, *, strip_nulls: bool) -> Any:
        # A branch the value already fits wins (so "5" stays a string when a string is one of the choices).
        for branch in branches:
            if _fits(value, self.types(branch)):
                return self.coerce(value, branch, path, changes, depth + 1, strip_nulls=strip_nulls)
        for branch in branches:
            attempt: list[str] = []
            converted = self.coerce(value, branch, path, attempt, depth + 1, strip_nulls=strip_nulls)
            if _fits(converted, self.types(branch)):
                changes.extend(attempt)
                return converted
        return value

    def _match_constant(self, value: Any, schema: Mapping[str, Any], path: tuple[str, ...], changes: list[str]) -> Any:
        constants = [schema["const"]] if "const" in schema else schema.get("enum")
        if not isinstance(constants, list) or any(_strict_equal(value, c) for c in constants):
            return value
        matches = [c for c in constants if _loosely_equal(value, c)]
        if len(matches) == 1:
            changes.append(f"{_where(path)}: {_show(value)} → {_show(matches[0])}")
            return copy.deepcopy(matches[0])
        return value

    def _convert(self, value: Any, types: frozenset[str], path: tuple[str, ...], changes: list[str]) -> Any:
        for kind in ("integer", "number", "boolean", "array", "object", "null", "string"):
            if kind not in types or (kind == "integer" and "number" in types):  # "2.0" stays 2.0 for a number
                continue
            converted = _to_type(value, kind)
            if converted is not _FAIL:
                changes.append(f"{_where(path)}: {_show(value)} → {_show(converted)}")
                return converted
        return value


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a pattern RE2 cannot take is skipped, not logged on stderr


@functools.lru_cache(maxsize=512)
def linear_pattern(pattern: Any) -> Any:
    """A schema's regex (``pattern``, a ``patternProperties`` key) compiled by RE2, which runs in linear
    time: the pattern comes from a tool's schema and the text it is searched in from a model or a plan,
    so ``^(a+)+$`` against a long value would hang Python's re. None for a pattern RE2 cannot take
    (backreferences, lookaround): such a pattern says nothing here, and the tool's server judges."""
    try:
        return re2.compile(pattern, _RE2_OPTIONS)
    except (re2.error, TypeError):
        return None


def _to_type(value: Any, kind: str) -> Any:
    text = value.strip() if isinstance(value, str) else None
    if text is not None and kind in ("integer", "number") and len(text) > MAX_NUMBER_TEXT:
        return _FAIL
    if kind == "integer":
        if text is not None and _INTEGER.fullmatch(text):
            return int(text)
        number = _to_type(value, "number") if text is not None else value
        if isinstance(number, float) and not isinstance(number, bool) and number.is_integer():
            return int(number)
        return number if isinstance(number, int) and not isinstance(number, bool) else _FAIL
    if kind == "number":
        if text is None or not _NUMBER.fullmatch(text):
            return _FAIL
        if _INTEGER.fullmatch(text):
            return int(text)
        number = float(text)
        return number if number not in (float("inf"), float("-inf")) else _FAIL
    if kind == "boolean":
        return {"true": True, "false": False}.get(text.lower(), _FAIL) if text is not None else _FAIL
    if kind in ("array", "object"):
        if text is None or not text.startswith("[" if kind == "array" else "{"):
            return _FAIL
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: nested past what the parser takes
            return _FAIL
        return parsed if json_type(parsed) == kind else _FAIL
    if kind == "null":
        return None if text is not None and text.lower() in ("", "null", "none") else _FAIL
    if kind == "string":
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
            return str(int(value))
        if isinstance(value, int | float):
            return str(value)
        if isinstance(value, dict | list):
            return json.dumps(value, ensure_ascii=False)
    return _FAIL


def _strict_equal(a: Any, b: Any) -> bool:
    # JSON equality: 1 == 1.0, but True is not 1.
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_strict_equal(x, y) for x, y in zip(a, b, strict=True))
    numbers = (int, float)
    return (type(a) in numbers and type(b) in numbers and a == b) or (type(a) is type(b) and a == b)


def _loosely_equal(value: Any, constant: Any) -> bool:
    """``"3"`` for 3, ``"TRUE"`` for true, ``"High"`` for "high", 3 for "3"."""
    if isinstance(constant, str):
        if isinstance(value, str):
            return value.strip().casefold() == constant.casefold()
        converted = _to_type(value, "string")
        return converted is not _FAIL and converted == constant
    if (isinstance(value, str) and isinstance(constant, bool | int | float)) or constant is None:
        kind = json_type(constant) or ""
        converted = _to_type(value, "number" if kind == "integer" else kind)
        return converted is not _FAIL and _strict_equal(converted, constant)
    return False


def _where(path: tuple[str, ...]) -> str:
    return repr(".".join(path)) if path else "arguments"


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:39] + "…"


# ---------------------------------------------------------------------------
# Schemas offered to an LLM


_RELAXED_SCALARS = {"number", "integer", "boolean"}
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SUBSCHEMA_LISTS = ("anyOf", "allOf", "prefixItems")
# Not "not", "if" or "propertyNames": relaxing those would refuse more, not less.
_SUBSCHEMAS = ("items", "additionalProperties", "additionalItems", "contains", "then", "else",
               "unevaluatedProperties", "unevaluatedItems")


def relax_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The tool's input schema as offered to an LLM, which often answers loosely.

    Numbers, integers and booleans also accept strings, and optional properties also
    accept ``null``; at every depth.
    ``oneOf`` becomes ``anyOf`` (relaxed branches may overlap). :func:`prepare_arguments`
    turns such answers back into the strict types. The input is not changed.
    """
    return _relax(copy.deepcopy(dict(schema)), 0)


def _relax(schema: Any, depth: int) -> Any:
    if not isinstance(schema, dict) or depth > MAX_DEPTH:
        return schema
    if isinstance(schema.get("oneOf"), list):
        branches = schema.pop("oneOf")
        if "anyOf" in schema:
            schema["allOf"] = [*(schema.get("allOf") or []), {"anyOf": branches}]
        else:
            schema["anyOf"] = branches
    kind = schema.get("type")
    kinds = [kind] if isinstance(kind, str) else list(kind) if isinstance(kind, list) else None
    if kinds is not None and _RELAXED_SCALARS & set(kinds) and "string" not in kinds:
        schema["type"] = [*kinds, "string"]
    for key in ("enum", "const"):
        if key in schema:
            constants = schema.pop(key) if key == "const" else schema[key]
            constants = [constants] if key == "const" else constants
            if isinstance(constants, list):
                extra = [s for c in constants if not isinstance(c, str) and (s := _to_type(c, "string")) is not _FAIL]
                schema["enum"] = [*constants, *(s for s in extra if s not in constants)]
    for key in _SUBSCHEMA_MAPS:
        if isinstance(schema.get(key), dict):
            schema[key] = {name: _relax(sub, depth + 1) for name, sub in schema[key].items()}
    for key in _SUBSCHEMA_LISTS:
        if isinstance(schema.get(key), list):
            schema[key] = [_relax(sub, depth + 1) for sub in schema[key]]
    for key in _SUBSCHEMAS:
        if isinstance(schema.get(key), dict):
            schema[key] = _relax(schema[key], depth + 1)
        elif key == "items" and isinstance(schema.get(key), list):
            schema[key] = [_relax(sub, depth + 1) for sub in schema[key]]
    properties = schema.get("properties")
    if isinstance(properties, dict):
        required = set(schema.get("required") or [])
        for name, sub in properties.items():
            if name not in required:
                properties[name] = _nullable(sub)
    return schema


def _nullable(schema: Any) -> Any:
    if not isinstance(schema, dict) or not schema:
        return schema
    kind = schema.get("type")
    only_type = "$ref" not in schema and not any(k in schema for k in ("anyOf", "allOf", "not", "if"))
    if only_type and isinstance(kind, str | list):
        kinds = [kind] if isinstance(kind, str) else list(kind)
        if "null" not in kinds:
            schema["type"] = [*kinds, "null"]
        if isinstance(schema.get("enum"), list) and None not in schema["enum"]:
            schema["enum"] = [*schema["enum"], None]
        return schema
    if only_type and kind is None and isinstance(schema.get("enum"), list):
        if None not in schema["enum"]:
            schema["enum"] = [*schema["enum"], None]
        return schema
    if isinstance(schema.get("anyOf"), list) and set(schema) <= {"anyOf", "description", "title", "default"}:
        if not any(isinstance(b, dict) and b.get("type") == "null" for b in schema["anyOf"]):
            schema["anyOf"] = [*schema["anyOf"], {"type": "null"}]
        return schema
    # Anything else ($ref, allOf, ...): wrap, since siblings of $ref are ignored by draft 7.
    outer = {k: schema.pop(k) for k in ("description", "title", "default") if k in schema}
    return {**outer, "anyOf": [schema, {"type": "null"}]}
