"""What a source holds, checked as ``skills validate`` does (and its ``depends`` against what is installed and
what passes with it), and each skill that passed placed in the user folder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.installer.records import (
    RECORD,
    InstalledSkill,
    InstallRecord,
    RefusedSkill,
    describe_record,
    read_record,
)
from adapters.skill_files import Skipped, collection, read_text
from adapters.skill_folders import discover, load_skill_file
from skills.errors import InstallRefusedError, SkillFileError
from skills.skillmd import Catalog, validate_text
from skills.skillmd.depends import ARROW, find_cycle, missing_dependencies
from skills.skillmd.limits import DEFAULT_LIMITS
from skills.skillmd.manifest import SourceName


@dataclass(frozen=True)
class _Plan:
    name: str
    folder: Path
    """The staged skill folder."""
    replaces: Path | None
    scheduled: bool
    warnings: list[str]
    notes: list[str]


def check_skills(root: Path, source_root: Path, user_dir: Path, folders: dict[SourceName, Path], *,
                  force: bool, from_server: bool = False) -> tuple[list[_Plan], list[RefusedSkill], list[str]]:
    """Each skill of ``root`` checked on its own: (those that pass, those refused with every reason,
    the folders left out and why). Only a source with no skill at all is refused here."""
    found = collection(root)
    skipped = [_skipped_line(s, source_root) for s in found.skipped]
    if not found.skills:
        raise InstallRefusedError(["no SKILL.md found: give a skill folder, or a folder of skill folders",
                                   *(f"left out {line}" for line in skipped)])
    refusals: dict[str, list[str]] = {}
    checked: list[_Found] = []
    for folder in found.skills:
        label = folder.relative_to(root).as_posix() if folder != root else "SKILL.md"
        refusals[label] = []
        try:
            text = read_text(folder / "SKILL.md", DEFAULT_LIMITS.max_file_bytes)
        except SkillFileError as exc:
            refusals[label].append(str(exc))
            continue
        skill, _ = load_skill_file(folder / "SKILL.md", "user")
        dir_name = folder.name if folder != root else (skill.name if skill else None)
        problems = validate_text(text, dir_name)
        refusals[label] += [p.message for p in problems if p.severity == "error"]
        if skill is not None:
            checked.append(_Found(folder, label, skill, [p.message for p in problems if p.severity == "warning"]))
    labels: dict[str, list[str]] = {}
    for item in checked:
        labels.setdefault(item.skill.name, []).append(item.label)
    for name, same in labels.items():
        if len(same) > 1:
            for label in same:
                refusals[label].append(f"two skills in the source are named '{name}' ({', '.join(same)})")
    replaces: dict[str, Path | None] = {}
    for item in checked:
        existing = replaces[item.label] = user_skill(item.skill.name, user_dir) or (
            user_dir / item.skill.name if (user_dir / item.skill.name).exists() else None)
        if existing is not None and not force:
            origin = read_record(existing)
            refusals[item.label].append(f"a skill of that name is already installed ({existing}"
                                        + (f", from {describe_record(origin)}" if origin else "")
                                        + "); give --force to replace it")
    catalog = all_skills(folders)
    if from_server:
        # A skill from a server never shadows one of this machine's, nor is hidden by one: its name
        # would then mean two skills, and which one runs would depend on the precedence of folders.
        for item in checked:
            owner = catalog.get(item.skill.name)
            if owner is not None and owner.source != "user":
                refusals[item.label].append(f"a {owner.source} skill of that name is on this machine "
                                            f"({owner.folder}); a skill from an MCP server never shadows one")
    _refuse_unmet_dependencies(checked, refusals, catalog)
    plans: list[_Plan] = []
    for item in checked:
        if refusals[item.label]:
            continue
        name = item.skill.name
        notes = []
        owner = catalog.get(name)
        if owner is not None and owner.source == "project":
            notes.append(f"the project's skill of the same name ({owner.folder}) takes precedence over it")
        elif owner is not None and owner.source == "bundled":
            notes.append(f"it shadows the bundled skill of the same name ({owner.folder})")
        plans.append(_Plan(name=name, folder=item.folder, replaces=replaces[item.label], warnings=item.warnings,
                           notes=notes, scheduled=bool(item.skill.manifest.metadata.trigger_config)))
    names = {item.label: item.skill.name for item in checked}
    refused = [RefusedSkill(name=names.get(label), folder=label, reasons=reasons)
               for label, reasons in refusals.items() if reasons]
    return plans, refused, skipped


@dataclass(frozen=True)
class _Found:
    folder: Path
    label: str
    """The skill's folder as the source names it (``SKILL.md`` for a source that is one skill)."""
    skill: Any
    warnings: list[str]


def _refuse_unmet_dependencies(checked: list[_Found], refusals: dict[str, list[str]], catalog: Catalog) -> None:
    """A skill whose ``depends`` names a skill neither installed nor passing in this source is refused,
    and so, in turn, is any that depends on it; a cycle is refused whole."""
    refused_names = {item.skill.name for item in checked if refusals[item.label]}
    while True:
        passing = [item for item in checked if not refusals[item.label]]
        graph = {**catalog.dependencies, **{item.skill.name: list(item.skill.manifest.depends) for item in passing}}
        changed = False
        for item in passing:
            name = item.skill.name
            reasons = [f"it depends on '{dep}', which is refused" if dep in refused_names
                       else f"Skill '{name}' depends on unknown skill '{dep}'" for dep in missing_dependencies(name, graph)]
            cycle = find_cycle(name, graph)
            if cycle is not None:
                reasons.append(f"Skill dependencies form a cycle: {ARROW.join(cycle)}")
            if reasons:
                refusals[item.label] += reasons
                refused_names.add(name)
                changed = True
        if not changed:
            return


def _skipped_line(skipped: Skipped, source_root: Path) -> str:
    where = skipped.folder.relative_to(source_root).as_posix()
    hint = f"; to install {'it' if skipped.holds == 1 else 'them'}, give --path {where}" if skipped.holds else ""
    return f"{where}/: {skipped.why}{hint}"


def place(plan: _Plan, stage: Path, user_dir: Path, record: InstallRecord) -> InstalledSkill:
    (plan.folder / RECORD).write_text(record.model_dump_json(indent=2) + "\n")
    destination = user_dir / plan.name
    old = None
    if plan.replaces is not None:
        old = stage / f"replaced-{plan.name}"
        os.rename(plan.replaces, old)
    try:
        os.rename(plan.folder, destination)
    except OSError:
        if old is not None:
            os.rename(old, plan.replaces)  # put the previous one back
        raise
    return InstalledSkill(name=plan.name, path=destination, replaced=old is not None, scheduled=plan.scheduled,
                          warnings=plan.warnings, notes=plan.notes)


def all_skills(folders: dict[SourceName, Path]) -> Catalog:
    catalog = discover(**folders)
    return discover(**folders, enable=catalog.disabled) if catalog.disabled else catalog


def user_skill(name: str, user_dir: Path) -> Path | None:
    """The user-folder skill named ``name`` (normally the folder of that name), if there is one."""
    folder = user_dir / name
    if (folder / "SKILL.md").is_file():
        return folder
    if user_dir.is_dir():
        for child in sorted(user_dir.iterdir()):
            if child.name.startswith(".") or not (child / "SKILL.md").is_file():
                continue
            skill, _ = load_skill_file(child / "SKILL.md", "user")
            if skill is not None and skill.name == name:
                return child
    return None
