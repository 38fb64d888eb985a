"""What a SKILL.md skill makes the engine do, and the digest that pins the owner's trust to exactly that.

A skill's *reach* (``skills.owner.reach``, the one classification of a skill's fields) is pinned whole:

- its ``toolsets`` block: each server's entry as parsed (command, args, env, cwd, url, headers...);
- the files that run: every file under ``scripts/`` (the declared scripts and whatever they load
  beside them) and each file of the skill's folder that a stdio toolset's command or arguments name
  (``command: python, args: [server.py]`` runs ``server.py``, so its bytes are pinned too);
- for a skill that fires by itself (``metadata.trigger_config``): its trigger (what starts it and how
  often), every reach field of its frontmatter (the plan's tools and arguments, the tools an LLM may call,
  approval lists and exemptions, deliveries, dependencies...) and its instructions (what an Agent-tier
  run's LLM does on the owner's model: a schedule with only a body is such a run every time it fires).

A skill with none of these (instructions and message triggers only, used in the owner's own chat) needs
no trust. One that has some runs only once the owner has trusted it (``skills trust NAME``), which
records :func:`executable_digest`; any change to its reach gives another digest, and the skill is
untrusted again until trusted again (the sync pauses its schedule, saying so). A change of what it only
says or of when it fires keeps the digest. The bundled skills (shipped with the engine) are trusted
without a record.

All of it is pure: :func:`executable_digest` takes the block and the files' bytes, and
:func:`executable_parts` is handed them; ``adapters.skill_folders`` reads them from the folder.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from skills.display import shown
from skills.errors import SkillsError, UntrustedSkillError
from skills.owner.reach import canonical, file_reach, reach_lines
from skills.skillmd.manifest import SkillFile
from skills.skillmd.scripts import declared_scripts
from skills.spec.mcpservers import McpServerConfig

DIGEST_VERSION = "skills-trust-v2"
# v2: the whole reach of a skill that fires by itself (skills.owner.reach), not only its toolsets and scripts.
"""Part of every digest: a change of what the digest covers makes every record stale, never silently valid."""

TrustStatus = Literal["trusted", "untrusted", "changed", "not needed", "bundled", "unreadable"]

DESCRIPTIONS: dict[str, str] = {
    "trusted": "trusted",
    "untrusted": "untrusted",
    "changed": "untrusted (changed since trusted)",
    "not needed": "not needed (nothing it runs or reaches)",
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
    reach: list[str] = Field(default_factory=list)
    """What it makes the engine do by itself (``skills.owner.reach.reach_lines``): the tools it calls with their
    arguments, what it reads, which approvals it skips, what starts it."""
    problem: str | None = None
    """Why the files could not be read (then there is no digest and the skill cannot be trusted)."""

    @property
    def executable(self) -> bool:
        """It needs its owner's trust: it runs something, or fires by itself with something to do."""
        return bool(self.toolsets or self.scripts or self.reach)

    def lines(self) -> list[str]:
        """Everything it reaches, every command, URL and script, as a person reviews them."""
        extra = [f for f in self.files if f not in self.scripts]
        return [*self.reach, *(f"toolset {line}" for line in self.toolsets),
                *(f"script {name}" for name in self.scripts), *(f"file {name}" for name in extra)]


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
        return UntrustedSkillError(f"skill '{self.name}': what it runs and reaches ({what}) is {why}; review it "
                                   f"(`skills show {self.name}`), then run `skills trust {self.name}`")

    def paused_reason(self) -> str:
        """Why the sync keeps this skill's schedule paused, and how to let it fire (``Skill.disabled_reason``)."""
        why = "changed since its owner trusted it" if self.status == "changed" else "not trusted by its owner"
        return f"{UNTRUSTED_PREFIX} {why}: review it (`skills show {self.name}`), then `skills trust {self.name}`"


UNTRUSTED_PREFIX = "untrusted:"
"""How a disabled reason of the sync's own for an untrusted skill begins (``TrustState.paused_reason``)."""


def untrusted_reason(reason: str | None) -> bool:
    """Whether a skill's disabled reason is the sync's pause of an untrusted skill (its trust resumes it)."""
    return reason is not None and reason.startswith(UNTRUSTED_PREFIX)


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
    resume: int | None = None
    """The stored skill (the files agent's, of that name) that the sync paused for want of this trust: now
    trusted, ``TrustSkill`` resumes its schedule."""
    pause: int | None = None
    """The stored skill (the files agent's, of that name) that fires by itself and is now untrusted:
    ``TrustSkill`` pauses its schedule at once with the sync's reason (``state.paused_reason()``), so the
    next trust resumes it."""


class TrustQuery(BaseModel):
    """``trust_states``' input: the skills (names) whose trust the caller wants, as the worker sees it."""

    names: list[str] = Field(default_factory=list)


def canonical_toolsets(toolsets: Mapping[str, McpServerConfig]) -> str:
    """The toolsets block as one canonical text: sorted JSON of the parsed entries (defaults left out, so
    a field the engine adds later does not change a digest)."""
    data = {name: server.model_dump(mode="json", exclude_defaults=True) for name, server in toolsets.items()}
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def executable_digest(toolsets: Mapping[str, McpServerConfig], files: Mapping[str, bytes],
                      reach: Mapping[str, Any] | None = None) -> str | None:
    """The digest of a skill's reach: its toolsets block, the bytes of its files that run (path inside the
    folder -> bytes) and the rest of its reach (``skills.owner.reach.file_reach``), or None when it has none."""
    if not toolsets and not files and not reach:
        return None
    digest = hashlib.sha256()
    for part in (DIGEST_VERSION, canonical_toolsets(toolsets), canonical(reach or {})):
        digest.update(_framed(part.encode()))
    for path in sorted(files):
        digest.update(_framed(path.encode()))
        digest.update(_framed(files[path]))
    return "sha256:" + digest.hexdigest()


def _framed(data: bytes) -> bytes:
    """Length-prefixed, so no two different inputs can concatenate to the same bytes."""
    return len(data).to_bytes(8, "big") + data


def pinned_parts(skill: SkillFile, files: Callable[[], dict[str, bytes]],
                 body: Callable[[], str]) -> ExecutableParts:
    """What ``skill`` runs and reaches, pinned. ``files()`` gives the bytes of the files that run (path
    inside the folder -> bytes) and ``body()`` its instructions, read now; neither is asked of a skill that
    runs and reaches nothing. What either raises of ``OSError``, ``ValueError`` or ``SkillsError`` is the
    reason the skill cannot be pinned."""
    manifest = skill.manifest
    declared, _ = declared_scripts(list(manifest.scripts))
    # What the owner reviews is shown, not printed raw: a terminal code in a command could hide it.
    toolsets = [shown(_toolset_line(name, server)) for name, server in manifest.toolsets.items()]
    scripts = [d.relative_path for d in declared]
    reach = {k: v for k, v in file_reach(manifest).items() if k not in ("toolsets", "scripts")}
    lines = [shown(line) for line in reach_lines(manifest)] if reach else []
    if not toolsets and not scripts and not reach:
        return ExecutableParts()
    try:
        pinned_files = files()
        pinned = file_reach(manifest, body()) if reach else {}
    except (OSError, ValueError, SkillsError) as e:
        return ExecutableParts(toolsets=toolsets, scripts=[shown(s) for s in scripts], reach=lines,
                               problem=shown(str(e)))
    if "instructions" in pinned and not manifest.metadata.execution_plan:
        lines.append(shown(f"its instructions: {_excerpt(pinned['instructions'])}"))
    # A declared script missing from the folder is pinned as missing: adding it later untrusts the skill.
    for script in scripts:
        pinned_files.setdefault(script, b"\0missing")
    return ExecutableParts(digest=executable_digest(manifest.toolsets, pinned_files, pinned), toolsets=toolsets,
                           scripts=[shown(s) for s in scripts], files=[shown(f) for f in sorted(pinned_files)],
                           reach=lines)


def _excerpt(text: str, limit: int = 300) -> str:
    """The body an Agent run follows, on one line as the owner reviews it (``skills show`` has it whole)."""
    flat = " ".join(text.split())
    return json.dumps(flat if len(flat) <= limit else flat[:limit] + "…", ensure_ascii=False)


def trust_state(skill: SkillFile, trusted_digest: str | None, trusted_at: datetime | None = None, *,
                parts: ExecutableParts, bundled: bool = False) -> TrustState:
    """``skill``'s trust, given what it runs (``parts``) and the digest its owner trusted (None: never trusted)."""
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
