"""What a SKILL.md skill runs, and the digest that pins the owner's trust to exactly that.

A skill's *executable parts* are what starts a process or opens a connection for it:

- its ``toolsets`` block: each server's entry as parsed (command, args, env, cwd, url, headers...);
- the files that run: every file under ``scripts/`` (the declared scripts and whatever they load
  beside them) and each file of the skill's folder that a stdio toolset's command or arguments name
  (``command: python, args: [server.py]`` runs ``server.py``, so its bytes are pinned too).

A skill with no toolsets and no declared scripts has none, and needs no trust: its instructions,
triggers and disclosure never need it. One that has some runs them only once the owner has
trusted them (``skills trust NAME``), which records :func:`executable_digest`; any change to
those parts gives another digest, and the skill is untrusted again until trusted again. The
bundled skills (shipped with the engine) are trusted without a record.

The digest is pure (:func:`executable_digest` takes the block and the files' bytes);
:func:`executable_parts` reads the files from the folder. Files elsewhere in the folder
(``references/``, ``assets/``) are data and are not pinned; ``__pycache__`` folders are left out,
since a Python toolset writes them itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, Field

from skills.display import shown
from skills.errors import UntrustedSkillError
from skills.mcpservers import McpServerConfig
from skills.skillmd.manifest import SkillFile
from skills.skillmd.scripts import SCRIPTS_FOLDER, declared_scripts

DIGEST_VERSION = "skills-trust-v1"
"""Part of every digest: a change of what the digest covers makes every record stale, never silently valid."""

MAX_PINNED_FILES = 2000
MAX_PINNED_BYTES = 64 * 1024 * 1024
"""A skill whose executable files are more than this cannot be pinned (and so cannot be trusted)."""

SKIPPED_FOLDERS = frozenset({"__pycache__"})

TrustStatus = Literal["trusted", "untrusted", "changed", "not needed", "bundled", "unreadable"]

DESCRIPTIONS: dict[str, str] = {
    "trusted": "trusted",
    "untrusted": "untrusted",
    "changed": "untrusted (changed since trusted)",
    "not needed": "not needed (nothing to run)",
    "bundled": "trusted (bundled)",
    "unreadable": "untrusted (its executable files cannot be read)",
}


class ExecutableParts(BaseModel):
    """What a skill runs, for a person to review, and the digest that pins it (None: it runs nothing)."""

    digest: str | None = None
    toolsets: list[str] = Field(default_factory=list)
    """One line per toolset server: ``name: command args...`` or ``name: url``."""
    scripts: list[str] = Field(default_factory=list)
    """The declared scripts, as paths inside the skill folder."""
    files: list[str] = Field(default_factory=list)
    """Every file the digest covers (the scripts, their neighbours under scripts/, files a toolset names)."""
    problem: str | None = None
    """Why the files could not be read (then there is no digest and the skill cannot be trusted)."""

    @property
    def executable(self) -> bool:
        return bool(self.toolsets or self.scripts)

    def lines(self) -> list[str]:
        """Every command, URL and script, as a person reviews them."""
        extra = [f for f in self.files if f not in self.scripts]
        return [*(f"toolset {line}" for line in self.toolsets), *(f"script {name}" for name in self.scripts),
                *(f"file {name}" for name in extra)]


class TrustState(BaseModel):
    """Whether a skill's executable parts may run now, and why."""

    name: str
    status: TrustStatus
    parts: ExecutableParts = Field(default_factory=ExecutableParts)
    trusted_digest: str | None = None
    """The digest the owner trusted (None: never, or it needs none)."""
    trusted_at: datetime | None = None

    @property
    def runs(self) -> bool:
        """Its executable parts may run."""
        return self.status in ("trusted", "not needed", "bundled")

    def describe(self) -> str:
        return DESCRIPTIONS[self.status]

    def error(self) -> UntrustedSkillError:
        """The refusal of a run that needs this skill's executable parts: it says how to trust them."""
        what = "; ".join(self.parts.lines()[:6]) or "its toolsets and scripts"
        why = {"changed": "changed since its owner trusted them",
               "unreadable": f"cannot be pinned ({self.parts.problem})"}.get(self.status, "not trusted by its owner")
        return UntrustedSkillError(f"skill '{self.name}': its executable parts ({what}) are {why}; review them "
                                   f"(`skills show {self.name}`), then run `skills trust {self.name}`")


class TrustInput(BaseModel):
    """``TrustSkill``'s input: trust (or untrust) the skill ``name`` as the worker's folders hold it now."""

    name: str
    action: Literal["trust", "untrust"] = "trust"
    expected_digest: str | None = None
    """The digest the owner reviewed (the CLI's copy): refused if the worker's copy differs."""


class TrustResult(BaseModel):
    ok: bool
    state: TrustState | None = None
    error: str | None = None


class TrustQuery(BaseModel):
    """``trust_states``' input: the skills (names) whose trust the caller wants, as the worker sees it."""

    names: list[str] = Field(default_factory=list)


def canonical_toolsets(toolsets: Mapping[str, McpServerConfig]) -> str:
    """The toolsets block as one canonical text: sorted JSON of the parsed entries (defaults left out, so
    a field the engine adds later does not change a digest)."""
    data = {name: server.model_dump(mode="json", exclude_defaults=True) for name, server in toolsets.items()}
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def executable_digest(toolsets: Mapping[str, McpServerConfig], files: Mapping[str, bytes]) -> str | None:
    """The digest of a skill's executable parts: its toolsets block and the bytes of its files that run
    (path inside the folder -> bytes), or None when it has no toolsets and no files to run."""
    if not toolsets and not files:
        return None
    digest = hashlib.sha256()
    for part in (DIGEST_VERSION, canonical_toolsets(toolsets)):
        digest.update(_framed(part.encode()))
    for path in sorted(files):
        digest.update(_framed(path.encode()))
        digest.update(_framed(files[path]))
    return "sha256:" + digest.hexdigest()


def _framed(data: bytes) -> bytes:
    """Length-prefixed, so no two different inputs can concatenate to the same bytes."""
    return len(data).to_bytes(8, "big") + data


def executable_parts(skill: SkillFile) -> ExecutableParts:
    """Read what ``skill`` runs from its folder now, and pin it."""
    manifest = skill.manifest
    declared, _ = declared_scripts(list(manifest.scripts))
    # What the owner reviews is shown, not printed raw: a terminal code in a command could hide it.
    toolsets = [shown(_toolset_line(name, server)) for name, server in manifest.toolsets.items()]
    scripts = [d.relative_path for d in declared]
    if not toolsets and not scripts:
        return ExecutableParts()
    try:
        files = _pinned_files(skill.folder, manifest.toolsets)
    except (OSError, ValueError) as e:
        return ExecutableParts(toolsets=toolsets, scripts=[shown(s) for s in scripts], problem=shown(str(e)))
    # A declared script missing from the folder is pinned as missing: adding it later untrusts the skill.
    for script in scripts:
        files.setdefault(script, b"\0missing")
    return ExecutableParts(digest=executable_digest(manifest.toolsets, files), toolsets=toolsets,
                           scripts=[shown(s) for s in scripts], files=[shown(f) for f in sorted(files)])


def trust_state(skill: SkillFile, trusted_digest: str | None, trusted_at: datetime | None = None, *,
                bundled: bool = False, parts: ExecutableParts | None = None) -> TrustState:
    """``skill``'s trust, given the digest its owner trusted (None: never trusted)."""
    parts = parts if parts is not None else executable_parts(skill)
    if not parts.executable:
        status: TrustStatus = "not needed"
    elif bundled:
        status = "bundled"
    elif parts.digest is None:
        status = "unreadable"
    elif trusted_digest is None:
        status = "untrusted"
    elif trusted_digest == parts.digest:
        status = "trusted"
    else:
        status = "changed"
    return TrustState(name=skill.name, status=status, parts=parts, trusted_digest=trusted_digest,
                      trusted_at=trusted_at)


def _toolset_line(name: str, server: McpServerConfig) -> str:
    if server.command is None:
        return f"{name}: {server.url}"
    line = shlex.join([server.command, *server.args])
    env = " ".join(f"{key}={value}" for key, value in sorted(server.env.items()))
    return f"{name}: {line}" + (f"  (env {env})" if env else "") + (f"  (cwd {server.cwd})" if server.cwd else "")


def _pinned_files(folder: Path, toolsets: Mapping[str, McpServerConfig]) -> dict[str, bytes]:
    """Path inside ``folder`` -> bytes of every file that runs: all of ``scripts/``, and the files a stdio
    toolset's command or arguments name. A link is pinned as where it points, and as the file it reaches."""
    root = folder.resolve()
    found: dict[str, bytes] = {}
    budget = [MAX_PINNED_BYTES]
    scripts = folder / SCRIPTS_FOLDER
    if scripts.is_dir() and not scripts.is_symlink():
        for dirpath, dirnames, filenames in os.walk(scripts, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_FOLDERS)
            for name in [*filenames, *(d for d in dirnames if Path(dirpath, d).is_symlink())]:
                path = Path(dirpath, name)
                found[path.relative_to(folder).as_posix()] = _pinned_bytes(path, root, budget)
                if len(found) > MAX_PINNED_FILES:
                    raise ValueError(f"more than {MAX_PINNED_FILES} files under scripts/")
    elif scripts.is_symlink():
        found[SCRIPTS_FOLDER] = _pinned_bytes(scripts, root, budget)
    for server in toolsets.values():
        if server.command is None:
            continue
        base = folder / server.cwd if server.cwd is not None and not server.cwd.is_absolute() else folder
        for word in [server.command, *server.args]:
            relative = _inside(folder, base, word)
            if relative is not None and relative not in found:
                found[relative] = _pinned_bytes(folder / relative, root, budget)
    return found


def _inside(folder: Path, base: Path, word: str) -> str | None:
    """The path inside ``folder`` of the file ``word`` names (relative to ``base``), if it is one."""
    if not word or word.startswith("-") or "\0" in word or len(word) > 4096:
        return None
    candidate = Path(word) if PurePosixPath(word).is_absolute() else base / word
    try:
        relative = Path(os.path.normpath(candidate)).relative_to(os.path.normpath(folder))
    except ValueError:
        return None
    if not relative.parts or not (folder / relative).is_file() and not (folder / relative).is_symlink():
        return None
    return relative.as_posix()


def _pinned_bytes(path: Path, root: Path, budget: list[int]) -> bytes:
    if path.is_symlink():
        target = os.readlink(path)
        resolved = path.resolve()
        if resolved.is_file() and resolved.is_relative_to(root):
            return b"\0link:" + target.encode() + b"\0" + _read(resolved, budget)
        return b"\0link:" + target.encode()
    if not path.is_file():
        return b"\0not a file"
    return _read(path, budget)


def _read(path: Path, budget: list[int]) -> bytes:
    size = path.stat().st_size
    budget[0] -= size
    if budget[0] < 0:
        raise ValueError(f"the executable files are over {MAX_PINNED_BYTES // (1024 * 1024)} MiB")
    return path.read_bytes()
