"""The files the ``skills`` commands read: a skill's fields (``skills register FILE``, ``skills
update REF FILE``) and the dev profile, in JSON or YAML, with errors a person can act on.

Every YAML document a command reads goes through :func:`parse_document`, the one place that
calls the YAML parser, so a rule about what YAML is accepted lives in one function.

    water.yaml: line 3, column 5: mapping values are not allowed here
    water.yaml: no such file
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

from skills import yamlsafe
from skills.spec.limits import MAX_NESTING

STDIN = "-"


class InputError(ValueError):
    """A file that cannot be read or parsed; the message names the file and, when known, the line."""


def load_input(path_or_dash: str) -> dict[str, Any]:
    """The object in a JSON or YAML file (``-``: standard input), e.g. a skill's fields."""
    name = "stdin" if path_or_dash == STDIN else path_or_dash
    text = sys.stdin.read() if path_or_dash == STDIN else read_text(Path(path_or_dash))
    data = parse_document(text, name)
    if not isinstance(data, dict):
        found = "nothing" if data is None else f"a {_kind(data)}"
        raise InputError(f"{name}: expected a JSON or YAML object with the skill's fields, found {found}")
    return data


SKILL_FILE_SUFFIXES = (".json", ".yaml", ".yml")


def load_skills_input(path_or_dash: str) -> dict[str, Any] | list[Any]:
    """One skill's fields (an object), or many (``skills register`` of a list or a folder): a file that
    holds a list gives its items; a folder gives every .json, .yaml and .yml file in it, by name, an
    object each or a list each."""
    if path_or_dash != STDIN and Path(path_or_dash).is_dir():
        folder = Path(path_or_dash)
        found = sorted(p for p in folder.iterdir() if p.suffix in SKILL_FILE_SUFFIXES and p.is_file())
        if not found:
            raise InputError(f"{folder}: no .json, .yaml or .yml file in this folder")
        items: list[Any] = []
        for path in found:
            data = load_document(path)
            items += data if isinstance(data, list) else [data]
        return items
    name = "stdin" if path_or_dash == STDIN else path_or_dash
    text = sys.stdin.read() if path_or_dash == STDIN else read_text(Path(path_or_dash))
    data = parse_document(text, name)
    if not isinstance(data, dict | list):
        found_kind = "nothing" if data is None else f"a {_kind(data)}"
        raise InputError(f"{name}: expected a JSON or YAML object with the skill's fields (or a list of them), "
                         f"found {found_kind}")
    return data


def load_document(path: Path) -> Any:
    """Whatever a JSON or YAML file holds (None for an empty one)."""
    return parse_document(read_text(path), str(path))


def read_text(path: Path) -> str:
    """The text of a file, or an :class:`InputError` in one line (not ``[Errno 2] ...``)."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, not a file") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise InputError(f"{path}: {e.strerror or e}") from None


def parse_document(text: str, name: str) -> Any:
    """JSON or YAML text as Python data. JSON is tried first (for a ``.json`` file, only JSON),
    so its errors are JSON's; YAML errors give the line and column of the problem."""
    if name.endswith(".json") or text.lstrip().startswith(("{", "[")):
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            if name.endswith(".json"):
                raise InputError(f"{name}: line {e.lineno}, column {e.colno}: {e.msg}") from None
            # Not JSON: YAML's flow style ({name: tea}) starts the same way.
        except RecursionError:
            raise InputError(f"{name}: nested more than {MAX_NESTING} levels deep; at most {MAX_NESTING} "
                             "are allowed") from None
        except (ValueError, MemoryError) as e:  # an integer of over 4,300 digits, a document too big to hold
            raise InputError(f"{name}: cannot be read: {e}") from None
    try:
        return yamlsafe.load(text, source=name)
    except yaml.MarkedYAMLError as e:
        raise InputError(f"{name}: {_yaml_problem(e)}") from None
    except yaml.YAMLError as e:
        raise InputError(f"{name}: {e}") from None


def _yaml_problem(e: yaml.MarkedYAMLError) -> str:
    problem = e.problem or "not valid YAML"
    mark = e.problem_mark or e.context_mark
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    context = ""
    if e.context:
        context = f" ({e.context}"
        if e.context_mark is not None and e.context_mark is not mark:
            context += f" at line {e.context_mark.line + 1}"
        context += ")"
    return f"{where}{problem}{context}"


def _kind(data: Any) -> str:
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(data), "value")
