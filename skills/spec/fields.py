"""Reading one field of a registration input: text, numbers, booleans, lists and JSON text, as
people and models write them, each problem collected with the field it belongs to.

Used by the normalizer (``skills.spec.normalize``), which reads every field of a skill through
these, so one answer names every problem. Pure code.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from skills import linear
from skills.errors import FieldError
from skills.spec.limits import (
    MAX_NESTING,
    MAX_NUMBER_TEXT,
    Bound,
    is_finite_number,
    json_size,
    too_deep,
    too_large,
)


class Problems:
    def __init__(self) -> None:
        self.errors: list[FieldError] = []

    def add(self, field: str, message: str) -> None:
        self.errors.append(FieldError(field=field, message=message))


def parse_json(text: str, field: str, problems: Problems) -> Any:
    """The value of JSON text, or None (and a problem naming ``field``): also for nesting deeper than
    :data:`~skills.spec.limits.MAX_NESTING` and for what the parser itself cannot take (a RecursionError
    at ~1,000 levels, an integer of over 4,300 digits), which would otherwise escape as a crash."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        problems.add(field, f"is a string that is not valid JSON ({e.msg} at position {e.pos})")
        return None
    except RecursionError:
        problems.add(field, f"is JSON nested more than {MAX_NESTING} levels deep; at most {MAX_NESTING} are allowed")
        return None
    except (ValueError, MemoryError) as e:
        problems.add(field, f"is JSON this engine cannot read ({e})")
        return None
    deep = too_deep(field, value)
    if deep is not None:
        problems.add(deep.field, deep.message)
        return None
    return value


def string_list(value: Any, field: str, problems: Problems) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            value = parse_json(text, field, problems)
            if value is None:
                return []
        else:
            # Tool names never contain commas or spaces, so a plain string is a list of one or more names.
            value = [part for part in linear.split(r"[,\s]+", text) if part]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.add(field, "must be a list of tool names")
        return []
    return union([v.strip() for v in value if v.strip()], [])


def union(first: list[str], second: list[str]) -> list[str]:
    return list(dict.fromkeys([*first, *second]))


def optional_text(value: Any, field: str, problems: Problems) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        problems.add(field, f"must be a string, got {type(value).__name__}")
        return None
    return value.strip()


def required_text(value: Any, field: str, problems: Problems, limit: int | None = None,
                   max_bytes: int | None = None) -> str:
    text = optional_text(value, field, problems)
    if value is None or (text is not None and not text):
        problems.add(field, "is required and must not be empty")
        return ""
    if text and limit and len(text) > limit:
        problems.add(field, f"is {len(text)} characters long; the limit is {limit}")
    if text and max_bytes:
        oversize = too_large(field, len(text.encode(errors="replace")), max_bytes, "in UTF-8")
        if oversize is not None:
            problems.add(oversize.field, oversize.message)
    return text or ""


def within_limit(data: Mapping[str, Any], field: str, limit: int, problems: Problems) -> Any:
    """``data[field]``, or None (and a problem) when it is over ``limit`` bytes as JSON."""
    value = data.get(field)
    if value is None:
        return None
    oversize = too_large(field, len(value.encode(errors="replace")) if isinstance(value, str) else json_size(value),
                         limit)
    if oversize is not None:
        problems.add(oversize.field, oversize.message)
        return None
    return value


YES_NO_WORDS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
ON_OFF_WORDS = {"on": True, "off": False}


def parse_bool(value: Any, *, on_off: bool = True) -> bool:
    """A boolean as JSON or a person writes one: true or false, 1 or 0, or a word in any case
    (true/false, yes/no, 1/0, and with ``on_off`` on/off). Raise ValueError for anything else."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in YES_NO_WORDS:
            return YES_NO_WORDS[word]
        if on_off and word in ON_OFF_WORDS:
            return ON_OFF_WORDS[word]
    raise ValueError(f"not true or false: {value!r}")


def boolean(value: Any, field: str, default: bool, problems: Problems) -> bool:
    if value is None:
        return default
    try:
        return parse_bool(value)
    except ValueError:
        problems.add(field, f"must be true or false, got {value!r}")
        return default


def notify_on_completion(value: Any, problems: Problems) -> bool | None:
    """Unset, null or "auto": automatic (None, see skills.run.notify); otherwise always or never."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "auto"):
        return None
    return boolean(value, "notify_on_completion", False, problems)


def number(value: Any, field: str, problems: Problems, *, bound: Bound) -> float | None:
    """A finite number (or one written as text) within ``bound``; None (and a problem naming the range)
    for anything else: a boolean, NaN, an infinity, a number out of range."""
    parsed: float | None = None
    if is_finite_number(value):
        parsed = value
    elif isinstance(value, str) and len(value) <= MAX_NUMBER_TEXT:
        try:
            parsed = float(value.strip())
        except ValueError:
            parsed = None
    if parsed is None or not is_finite_number(parsed):
        problems.add(field, f"must be a number {bound.range_text()}, got {_show(value)}")
        return None
    problem = bound.problem(parsed)
    if problem is not None:
        problems.add(field, problem)
        return None
    return parsed


def integer(value: Any, field: str, default: int | None, problems: Problems, *, bound: Bound) -> Any:
    """A whole number (or one written as text, or a float such as 5.0) within ``bound``; ``default`` when
    absent or refused (with a problem naming the range)."""
    if value is None:
        return default
    parsed: int | None = None
    if isinstance(value, bool):
        parsed = None
    elif isinstance(value, int):
        parsed = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        parsed = int(value)
    elif isinstance(value, str) and len(value) <= MAX_NUMBER_TEXT and linear.fullmatch(r"\s*[+-]?\d+\s*", value):
        parsed = int(value)
    if parsed is None:
        problems.add(field, f"must be a whole number {bound.range_text()}, got {_show(value)}")
        return default
    problem = bound.problem(parsed)
    if problem is not None:
        problems.add(field, problem)
        return default
    return parsed


def _show(value: Any) -> str:
    """A refused value in a message: cut, so a megabyte of text is not echoed back."""
    text = repr(value) if not isinstance(value, int) or isinstance(value, bool) or abs(value) < 10**30 \
        else f"a number of about {value.bit_length() * 30103 // 100000 + 1} digits"
    return text if len(text) <= 60 else text[:59] + "…"
