"""SKILL.md folders on disk: discovery across the three sources (project, user, bundled), finding one
skill in the worker's folders, what it depends on and declares, the bytes that pin what it runs, an
AGENT.md, and a skill's body, files and problems when asked (``FOLDERS``, the ``SkillReader`` that
``skills.skillmd`` is handed), as the folders hold them now.

Every lookup reads the folders again: a fire, a script or a trust must act on the SKILL.md as it is,
never on what a payload or an earlier read said (discovery parses again only the files whose stamp
changed). Precedence is project over user over bundled, and a skill's name is its folder's name.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from pathlib import Path, PurePosixPath

from adapters import skill_files
from config.settings import Settings
from skills.errors import AgentDefinitionError, SkillFileError
from skills.skillmd.agents import AgentDefinition, check_agent_text
from skills.skillmd.depends import missing_dependencies
from skills.skillmd.depends import with_dependencies as dependency_order
from skills.skillmd.limits import DEFAULT_LIMITS, Limits
from skills.skillmd.manifest import SkillFile, SourceName
from skills.skillmd.matching import Vectors
from skills.skillmd.parsing import parse_frontmatter
from skills.skillmd.problems import Problem
from skills.skillmd.resources import RESOURCE_FOLDERS, Resource, body_of
from skills.skillmd.scripts import SCRIPTS_FOLDER
from skills.skillmd.sources import SKIPPED, Catalog, Shadowed, check_depends
from skills.skillmd.trust import ExecutableParts, pinned_parts
from skills.skillmd.validation import check_frontmatter, validate_file
from skills.spec.mcpservers import McpServerConfig, ToolsetServer

MAX_PINNED_FILES = 2000
MAX_PINNED_BYTES = 64 * 1024 * 1024
"""A skill whose executable files are more than this cannot be pinned (and so cannot be trusted)."""

SKIPPED_FOLDERS = frozenset({"__pycache__"})
"""Folders under ``scripts/`` left out of the pin: a Python toolset writes them itself."""


def load_skill_file(
    path: Path, source: SourceName, limits: Limits = DEFAULT_LIMITS, stat: os.stat_result | None = None
) -> tuple[SkillFile | None, list[Problem]]:
    """A SKILL.md read leniently: loaded if its name and description are usable, all else as warnings.

    A file that cannot be read or parsed, or lacks a usable name or description,
    gives ``None`` and one warning naming the file and every reason.
    """
    path = Path(path)
    try:
        data, _ = parse_frontmatter(skill_files.read_frontmatter_block(path, limits.max_frontmatter_bytes))
        manifest, problems = check_frontmatter(data, dir_name=path.parent.name)
        mtime = skill_files.modified_at(path, stat)
    except SkillFileError as exc:
        return None, [Problem.warning(f"{SKIPPED}{exc}").at(path)]
    if manifest is None:
        reasons = "; ".join(p.message for p in problems if p.severity == "error")
        return None, [Problem.warning(f"{SKIPPED}{reasons}").at(path)]
    skill = SkillFile(manifest=manifest, path=path, source=source, mtime=mtime, headings=skill_files.read_headings(path))
    return skill, [p.as_warning().at(path) for p in problems]


def discover(
    *,
    project: Path | None = None,
    user: Path | None = None,
    bundled: Path | None = None,
    enable: Collection[str] = (),
    limits: Limits = DEFAULT_LIMITS,
    semantic: Vectors | None = None,
) -> Catalog:
    """All skills of the given source folders, project over user over bundled.

    A folder that does not exist is an empty source. ``enable`` names skills to turn
    on although their file says ``default_enabled: false``. ``semantic``: the catalog's
    index ranks by meaning too (``adapters.semantic.catalog_meaning``).
    """
    winners: dict[str, SkillFile] = {}
    shadowed: list[Shadowed] = []
    problems: list[Problem] = []
    sources: list[tuple[SourceName, Path | None]] = [
        ("project", project),
        ("user", user),
        ("bundled", bundled),
    ]
    for source, root in sources:
        skills, found = _scan(root, source, limits) if root is not None else ([], [])
        problems += found
        for skill in skills:
            winner = winners.setdefault(skill.name, skill)
            if winner is not skill:
                shadowed.append(
                    Shadowed(
                        name=skill.name,
                        path=skill.path,
                        source=skill.source,
                        winner_path=winner.path,
                        winner_source=winner.source,
                    )
                )
    active = {
        name: skill
        for name, skill in sorted(winners.items())
        if skill.manifest.default_enabled or name in enable
    }
    problems += check_depends(active)
    return Catalog(
        skills=active,
        shadowed=shadowed,
        disabled=sorted(set(winners) - set(active)),
        problems=problems,
    ).ranked_by_meaning(semantic)


_Loaded = tuple[SkillFile | None, list[Problem]]
_FOLDERS_KEPT = 32
_SEEN: dict[tuple[Path, SourceName, Limits], dict[Path, tuple[skill_files.FileStamp, _Loaded]]] = {}
"""What each scanned folder held at its last scan: a SKILL.md whose stamp (modification time, size,
inode) has not changed is not read again. Rebuilt at every scan, so it holds only the files now there;
the ``_FOLDERS_KEPT`` folders scanned last are kept."""


def forget_scans() -> None:
    """Forget every folder's last scan: the next discovery reads and parses each SKILL.md again (a benchmark
    measuring a cold discovery)."""
    _SEEN.clear()


def _scan(root: Path, source: SourceName, limits: Limits) -> tuple[list[SkillFile], list[Problem]]:
    root = Path(root)
    if not root.exists():
        return [], []
    if not root.is_dir():
        return [], [Problem.warning(f"Skills folder is not a directory: {root}").at(root)]
    skills: list[SkillFile] = []
    problems: list[Problem] = []
    key = (root, source, limits)
    before, seen = _SEEN.get(key, {}), {}
    hidden: list[Path] = []
    for skill_md, stat in skill_files.skill_files(root, hidden=hidden):
        if stat is None:
            problems.append(Problem.warning(f"No SKILL.md found in {skill_md.parent.name}").at(skill_md.parent))
            continue
        stamp = skill_files.stamp(stat)
        cached = before.get(skill_md)
        loaded = cached[1] if cached is not None and cached[0] == stamp else load_skill_file(
            skill_md, source, limits, stat)
        seen[skill_md] = (stamp, loaded)
        skill, found = loaded
        problems += found
        if skill is not None:
            skills.append(skill)
    problems += [Problem.warning(f"Left out {skipped.folder.name}: {skipped.why}; point a skills folder "
                                 "setting at it to use them").at(skipped.folder) for skipped in skill_files.hidden_collections(root, hidden)]
    _SEEN.pop(key, None)
    _SEEN[key] = seen
    while len(_SEEN) > _FOLDERS_KEPT:
        del _SEEN[next(iter(_SEEN))]  # the folder scanned longest ago
    return skills, problems

def file_skill(settings: Settings, name: str) -> SkillFile | None:
    """The SKILL.md skill ``name`` as the worker's folders hold it now, with the source it was found in
    (the first folder holding ``name/SKILL.md`` decides, even if that file does not load), or None."""
    for source, root in settings.skill_folders().items():
        skill_md = root / name / "SKILL.md"
        if skill_md.is_file():
            found, _ = load_skill_file(skill_md, source)
            return found if found is not None and found.name == name else None
    return None


def dependencies_of(settings: Settings, skill: SkillFile) -> tuple[list[SkillFile], list[str]]:
    """What a SKILL.md skill brings along as the worker's folders hold it now: the skills it depends on
    (transitively, depth first, once each, as disclosure orders them), and the names that match no
    enabled skill. Only the skills it reaches are read, not the whole catalog: this runs at every fire."""
    if not skill.manifest.depends:
        return [], []
    files, absent, waiting = {skill.name: skill}, set(), list(skill.manifest.depends)
    while waiting:
        name = waiting.pop()
        if name in files or name in absent:
            continue
        found = file_skill(settings, name)
        if found is None or not found.manifest.default_enabled:  # as disclosure: a disabled skill is not there
            absent.add(name)
            continue
        files[name] = found
        waiting.extend(found.manifest.depends)
    graph = {name: list(found.manifest.depends) for name, found in files.items()}
    names = dependency_order([skill.name], graph)[1:]
    missing = dict.fromkeys(dep for name in [skill.name, *names] for dep in missing_dependencies(name, graph))
    return [files[name] for name in names], list(missing)


def declared_toolsets(settings: Settings) -> dict[str, dict[str, ToolsetServer]]:
    """The ``toolsets`` of every SKILL.md skill in the worker's folders now, by skill (those with any)."""
    found = discover(**settings.skill_folders())
    return {name: dict(skill.manifest.toolsets) for name, skill in found.skills.items() if skill.manifest.toolsets}


def executable_parts(skill: SkillFile) -> ExecutableParts:
    """What ``skill`` runs and reaches, read from its folder now, and pinned (``skills.skillmd.trust``). Files
    elsewhere in the folder (``references/``, ``assets/``) are data and are not pinned."""
    return pinned_parts(skill, lambda: pinned_files(skill.folder, skill.manifest.toolsets),
                        lambda: FOLDERS.read_body(skill))


def pinned_files(folder: Path, toolsets: Mapping[str, McpServerConfig]) -> dict[str, bytes]:
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


def load_agent(path: Path, known_skills: Collection[str], limits: Limits = DEFAULT_LIMITS) -> AgentDefinition:
    """An AGENT.md file, validated against the skills that exist; raises ``AgentDefinitionError``."""
    path = Path(path)
    agent, problems = check_agent_text(skill_files.read_text(path, limits.max_file_bytes), known_skills)
    if agent is None:
        raise AgentDefinitionError([p.at(path) for p in problems])
    return agent.model_copy(update={"path": path})


class SkillFolders:
    """The :class:`~skills.skillmd.resources.SkillReader` of the worker: a skill's body, files and problems read
    from its folder now, within the caps of ``Limits``. Nothing outside the folder can be reached."""

    def read_body(self, skill: SkillFile, limits: Limits = DEFAULT_LIMITS) -> str:
        return body_of(skill, skill_files.read_text(skill.path, limits.max_file_bytes), limits)

    def list_resources(self, skill: SkillFile) -> list[Resource]:
        return [
            Resource(path=path, kind=kind, size=size)
            for folder, kind in RESOURCE_FOLDERS.items()
            for path, size in skill_files.files_under(skill.folder, folder)
        ]

    def read_resource(self, skill: SkillFile, relative_path: str, limits: Limits = DEFAULT_LIMITS) -> str:
        """Raises ``ResourceError`` for a path that is absolute, contains ``..``, resolves outside the folder
        (a symlink out) or names no file; ``TooLargeError`` over the cap."""
        return skill_files.read_text(skill_files.resolve_inside(skill.folder, relative_path), limits.max_resource_bytes)

    def problems(self, skill: SkillFile, limits: Limits = DEFAULT_LIMITS) -> list[Problem]:
        return validate_path(skill.path, limits)


FOLDERS = SkillFolders()


def validate_path(path: Path, limits: Limits = DEFAULT_LIMITS) -> list[Problem]:
    """Every problem in a skill folder or a SKILL.md file, each carrying the file's path."""
    path = Path(path)
    if not path.exists():
        return [Problem.error(f"Path does not exist: {path}").at(path)]
    if path.is_dir():
        skill_md = path / "SKILL.md"
        if not skill_md.is_file():
            return [Problem.error("Missing required file: SKILL.md").at(path)]
    elif path.name == "SKILL.md":
        skill_md = path
    else:
        return [Problem.error(f"Not a SKILL.md file: {path}").at(path)]
    try:
        # The frontmatter's own limit first, read as discovery reads it: a file discovery skips for its
        # size is not valid, whatever its fields say.
        skill_files.read_frontmatter_block(skill_md, limits.max_frontmatter_bytes)
        text = skill_files.read_text(skill_md, limits.max_file_bytes)
    except SkillFileError as exc:
        return [Problem.error(str(exc)).at(skill_md)]
    # absolute(), not resolve(): the name to match is the folder's as the user sees it, even through a symlink.
    dir_name = skill_md.absolute().parent.name
    return [p.at(skill_md) for p in validate_file(text, dir_name, lambda script: skill_files.locate(skill_md.parent, script))]

