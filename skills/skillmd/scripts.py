"""The scripts a SKILL.md declares (``scripts:``), and where each one is.

A skill may run only what it declares. An entry names a file under the skill's
``scripts/`` folder, with or without the folder (``fetch.py`` and ``scripts/fetch.py``
are the same script), as a string or as ``{path: ..., description: ...}``. A script's
name is its path inside ``scripts/`` (``fetch.py``, ``tools/report.sh``): what a
``run_script`` call and a plan step give.

The checks here are on the text; ``adapters.skill_files.locate`` checks the file: it exists, it is
a regular file, and it resolves inside ``scripts/`` (a symlink out is refused).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from skills.errors import ResourceError

SCRIPTS_FOLDER = "scripts"


@dataclass(frozen=True)
class DeclaredScript:
    name: str
    """The path inside ``scripts/``, with ``/`` separators."""
    description: str = ""

    @property
    def relative_path(self) -> str:
        """The path inside the skill's folder."""
        return f"{SCRIPTS_FOLDER}/{self.name}"


def script_name(entry: str) -> str:
    """The script's name for a declared path; ``ValueError`` says why a path cannot be one."""
    text = entry.strip()
    if not text:
        raise ValueError("is empty")
    if PurePosixPath(text).is_absolute() or PureWindowsPath(text).is_absolute() or PureWindowsPath(text).drive:
        raise ValueError("is absolute")
    if text.startswith("~"):
        raise ValueError("starts in a home folder")
    parts = [p for p in PureWindowsPath(text).parts if p not in ("", ".")]  # splits on both / and \
    if ".." in parts:
        raise ValueError("contains '..' (it would leave the skill folder)")
    if parts and parts[0] == SCRIPTS_FOLDER:
        parts = parts[1:]
    if not parts:
        raise ValueError("names the scripts folder, not a file in it")
    return "/".join(parts)


def declared_scripts(entries: list[Any]) -> tuple[list[DeclaredScript], list[tuple[str, str]]]:
    """The declared scripts, and ``(field, reason)`` for each entry that cannot be one."""
    scripts: list[DeclaredScript] = []
    problems: list[tuple[str, str]] = []
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        where = f"scripts.{i}"
        description = ""
        if isinstance(entry, Mapping):
            where, path, description = f"scripts.{i}.path", entry.get("path"), str(entry.get("description") or "")
        else:
            path = entry
        if not isinstance(path, str):
            problems.append((where, "must be a path (text) of a file under scripts/"))
            continue
        try:
            name = script_name(path)
        except ValueError as e:
            problems.append((where, f"script path '{path}' {e}; give a file under scripts/, such as fetch.py"))
            continue
        if name not in seen:
            seen.add(name)
            scripts.append(DeclaredScript(name=name, description=description))
    return scripts, problems


def file_problems(entries: list[Any], locate: Callable[[DeclaredScript], object]) -> list[tuple[str, str]]:
    """``(field, reason)`` for every declared script that is not a usable file of the skill's folder:
    ``locate`` finds one (``adapters.skill_files.locate``) or raises ``ResourceError`` saying why not."""
    scripts, problems = declared_scripts(entries)
    index = {s.name: i for i, s in enumerate(scripts)}
    for script in scripts:
        try:
            locate(script)
        except ResourceError as e:
            where = _field_of(entries, script.name) or f"scripts.{index[script.name]}"
            problems.append((where, f"script '{script.name}': {_missing(e, script)}"))
    return problems


def _missing(error: ResourceError, script: DeclaredScript) -> str:
    text = str(error)
    if "not found" in text:
        return f"no file {script.relative_path} in the skill folder"
    return text


def _field_of(entries: list[Any], name: str) -> str | None:
    for i, entry in enumerate(entries):
        path = entry.get("path") if isinstance(entry, Mapping) else entry
        try:
            if isinstance(path, str) and script_name(path) == name:
                return f"scripts.{i}.path" if isinstance(entry, Mapping) else f"scripts.{i}"
        except ValueError:
            continue
    return None
