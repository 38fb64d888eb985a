"""What discovery across the three sources finds: the catalog of skills in effect, what was shadowed,
disabled or skipped and why. The folders are read by ``adapters.skill_folders`` (``discover``).

Precedence is project over user over bundled; a skill hidden by a higher source is reported in
``Catalog.shadowed``, not dropped silently.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from skills.skillmd.depends import dependency_problems
from skills.skillmd.manifest import SkillFile, SourceName
from skills.skillmd.matching import SkillIndex, Vectors
from skills.skillmd.problems import Problem

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
    _semantic: Vectors | None = PrivateAttr(default=None)
    """The ranker by meaning :attr:`index` uses, if any (``SKILLS_MATCH_MEANING``): a port, not data."""

    def get(self, name: str) -> SkillFile | None:
        return self.skills.get(name)

    def ranked_by_meaning(self, semantic: Vectors | None) -> Catalog:
        """This catalog, its :attr:`index` ranking by meaning too with ``semantic`` (None: words alone).
        Set before the index is first used: it is built once."""
        self._semantic = semantic
        return self

    @cached_property
    def index(self) -> SkillIndex:
        """The trigger index, built on first use (patterns were compiled at load); with a ranker by
        meaning, the skills' vectors are taken from its cache or made now."""
        return SkillIndex(self.skills.values(), semantic=self._semantic)

    @cached_property
    def untriggered(self) -> list[SkillFile]:
        """Skills without triggers (never matched, so always listed), found once rather than per message."""
        return [skill for skill in self.skills.values() if not skill.manifest.has_triggers]

    @cached_property
    def dependencies(self) -> dict[str, list[str]]:
        """The dependency graph of the active skills: name -> the names its ``depends`` lists."""
        return {name: list(skill.manifest.depends) for name, skill in self.skills.items()}


def is_skipped(problem: Problem) -> bool:
    """Whether a loading problem says its file was skipped (not loaded at all), not only warned about."""
    return problem.message.startswith(SKIPPED)


def check_depends(skills: dict[str, SkillFile]) -> list[Problem]:
    """Missing dependencies and cycles, as warnings: lenient loading keeps the skills (each
    dependency is brought once, so a cycle cannot loop); ``skills validate`` refuses them."""
    graph = {name: list(skill.manifest.depends) for name, skill in skills.items()}
    return [
        problem.as_warning().at(skills[name].path)
        for name, problems in dependency_problems(skills, graph).items()
        for problem in problems
    ]
