"""Finding skills: lenient loading of one SKILL.md, and discovery across the three sources.

Discovery reads frontmatter only. Precedence is project over user over bundled; a
skill hidden by a higher source is reported in ``Catalog.shadowed``, not dropped
silently.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from functools import cached_property
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from skills.errors import SkillFileError
from skills.skillmd import files
from skills.skillmd.depends import dependency_problems
from skills.skillmd.limits import DEFAULT_LIMITS, Limits
from skills.skillmd.manifest import SkillFile, SourceName
from skills.skillmd.matching import SkillIndex
from skills.skillmd.parsing import parse_frontmatter
from skills.skillmd.problems import Problem
from skills.skillmd.validation import check_frontmatter

SKIPPED = "Skipped: "
"""How the warning about a file that could not be loaded at all begins (see ``is_skipped``)."""


def project_skills_dir(workdir: Path) -> Path:
    """Where a project keeps its own skills: ``.agents/skills/`` under its working directory."""
    return Path(workdir) / ".agents" / "skills"


class Shadowed(BaseModel):
    """A skill hidden by another of the same name from a source that takes precedence."""

    model_config = ConfigDict(frozen=True)

    name: str
    path: Path
    source: SourceName
    winner_path: Path
    winner_source: SourceName


class Catalog(BaseModel):
    """The skills in effect after precedence, with what was shadowed, disabled or skipped and why."""

    model_config = ConfigDict(frozen=True)

    skills: dict[str, SkillFile] = Field(default_factory=dict)
    """Active skills by name, sorted by name."""
    shadowed: list[Shadowed] = Field(default_factory=list)
    disabled: list[str] = Field(default_factory=list)
    """Skills with ``default_enabled: false`` that were not enabled by name."""
    problems: list[Problem] = Field(default_factory=list)
    """Warnings from lenient loading: skipped files (with the reason) and forgiven errors."""

    def get(self, name: str) -> SkillFile | None:
        return self.skills.get(name)

    @cached_property
    def index(self) -> SkillIndex:
        """The trigger index, built on first use (patterns were compiled at load)."""
        return SkillIndex(self.skills.values())

    @cached_property
    def untriggered(self) -> list[SkillFile]:
        """Skills without triggers (never matched, so always listed), found once rather than per message."""
        return [skill for skill in self.skills.values() if not skill.manifest.has_triggers]

    @cached_property
    def dependencies(self) -> dict[str, list[str]]:
        """The dependency graph of the active skills: name -> the names its ``depends`` lists."""
        return {name: list(skill.manifest.depends) for name, skill in self.skills.items()}


def load_skill_file(
    path: Path, source: SourceName, limits: Limits = DEFAULT_LIMITS, stat: os.stat_result | None = None
) -> tuple[SkillFile | None, list[Problem]]:
    """A SKILL.md read leniently: loaded if its name and description are usable, all else as warnings.

    A file that cannot be read or parsed, or lacks a usable name or description,
    gives ``None`` and one warning naming the file and every reason.
    """
    path = Path(path)
    try:
        data, _ = parse_frontmatter(files.read_frontmatter_block(path, limits.max_frontmatter_bytes))
        manifest, problems = check_frontmatter(data, dir_name=path.parent.name)
        mtime = files.modified_at(path, stat)
    except SkillFileError as exc:
        return None, [Problem.warning(f"{SKIPPED}{exc}").at(path)]
    if manifest is None:
        reasons = "; ".join(p.message for p in problems if p.severity == "error")
        return None, [Problem.warning(f"{SKIPPED}{reasons}").at(path)]
    skill = SkillFile(manifest=manifest, path=path, source=source, mtime=mtime, headings=files.read_headings(path))
    return skill, [p.as_warning().at(path) for p in problems]


def is_skipped(problem: Problem) -> bool:
    """Whether a loading problem says its file was skipped (not loaded at all), not only warned about."""
    return problem.message.startswith(SKIPPED)


def discover(
    *,
    project: Path | None = None,
    user: Path | None = None,
    bundled: Path | None = None,
    enable: Collection[str] = (),
    limits: Limits = DEFAULT_LIMITS,
) -> Catalog:
    """All skills of the given source folders, project over user over bundled.

    A folder that does not exist is an empty source. ``enable`` names skills to turn
    on although their file says ``default_enabled: false``.
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
    problems += _check_depends(active)
    return Catalog(
        skills=active,
        shadowed=shadowed,
        disabled=sorted(set(winners) - set(active)),
        problems=problems,
    )


_Loaded = tuple[SkillFile | None, list[Problem]]
_FOLDERS_KEPT = 32
_SEEN: dict[tuple[Path, SourceName, Limits], dict[Path, tuple[files.FileStamp, _Loaded]]] = {}
"""What each scanned folder held at its last scan: a SKILL.md whose stamp (modification time, size,
inode) has not changed is not read again. Rebuilt at every scan, so it holds only the files now there;
the ``_FOLDERS_KEPT`` folders scanned last are kept."""


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
    for skill_md, stat in files.skill_files(root, hidden=hidden):
        if stat is None:
            problems.append(Problem.warning(f"No SKILL.md found in {skill_md.parent.name}").at(skill_md.parent))
            continue
        stamp = files.stamp(stat)
        cached = before.get(skill_md)
        loaded = cached[1] if cached is not None and cached[0] == stamp else load_skill_file(
            skill_md, source, limits, stat)
        seen[skill_md] = (stamp, loaded)
        skill, found = loaded
        problems += found
        if skill is not None:
            skills.append(skill)
    problems += [Problem.warning(f"Left out {skipped.folder.name}: {skipped.why}; point a skills folder "
                                 "setting at it to use them").at(skipped.folder) for skipped in files.hidden_collections(root, hidden)]
    _SEEN.pop(key, None)
    _SEEN[key] = seen
    while len(_SEEN) > _FOLDERS_KEPT:
        del _SEEN[next(iter(_SEEN))]  # the folder scanned longest ago
    return skills, problems


def _check_depends(skills: dict[str, SkillFile]) -> list[Problem]:
    """Missing dependencies and cycles, as warnings: lenient loading keeps the skills (each
    dependency is brought once, so a cycle cannot loop); ``skills validate`` refuses them."""
    graph = {name: list(skill.manifest.depends) for name, skill in skills.items()}
    return [
        problem.as_warning().at(skills[name].path)
        for name, problems in dependency_problems(skills, graph).items()
        for problem in problems
    ]
