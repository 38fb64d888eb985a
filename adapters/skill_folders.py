"""The worker's SKILL.md folders (project, user, bundled): finding a skill in them, what it depends
on and declares, as the folders hold it now.

Every lookup reads the files again: a fire, a script or a trust must act on the SKILL.md as it is,
never on what a payload or an earlier read said. Precedence is the sync's (project over user over
bundled), and a skill's name is its folder's name.
"""

from __future__ import annotations

from config.settings import Settings
from skills.mcpservers import ToolsetServer
from skills.skillmd.depends import missing_dependencies
from skills.skillmd.depends import with_dependencies as dependency_order
from skills.skillmd.manifest import SkillFile
from skills.skillmd.sources import discover, load_skill_file


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

