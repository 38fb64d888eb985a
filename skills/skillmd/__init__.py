"""SKILL.md skills (the Agent Skills format): what a skill file says, and what the engine does with it.

Parsing and validation, sources, lazy resources, trigger matching, progressive disclosure, the
``skill`` tool, agent definitions, and the registration request of file skills that carry a schedule.
Finding and reading skill folders is ``adapters/skill_folders.py``'s: what here needs a skill's body or
files on demand is handed a ``SkillReader``. No file system, no network, no database, no clock.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The names below are imported from their modules when first used, not with the package: a process that
# needs one module (the settings need the source names and the bundled folder, from `sourcenames`) does not
# pay for parsing, validation, matching and disclosure (a tenth of a second and more).
if TYPE_CHECKING:
    from skills.errors import (
        AgentDefinitionError,
        FrontmatterError,
        ResourceError,
        SkillFileError,
        TooLargeError,
    )
    from skills.skillmd.agents import AgentDefinition, check_agent_text
    from skills.skillmd.depends import dependency_problems, find_cycle, missing_dependencies
    from skills.skillmd.disclosure import (
        Disclosure,
        asks_for_registry,
        disclose,
        render_available_skills,
        render_instructions,
        with_dependencies,
    )
    from skills.skillmd.limits import DEFAULT_LIMITS, Limits
    from skills.skillmd.manifest import SkillFile, SkillManifest, SkillMetadata, Triggers
    from skills.skillmd.matching import SkillIndex, SkillMatch
    from skills.skillmd.parsing import parse_frontmatter
    from skills.skillmd.problems import Problem, Severity, has_errors
    from skills.skillmd.registration import registration_request
    from skills.skillmd.resources import Resource, SkillReader
    from skills.skillmd.sourcenames import BUNDLED_DIR, SourceName
    from skills.skillmd.sources import (
        Catalog,
        Shadowed,
        project_skills_dir,
    )
    from skills.skillmd.tool import TOOL_NAME as SKILL_TOOL
    from skills.skillmd.tool import run_skill_tool, skill_file_tool, skill_tool_definition
    from skills.skillmd.validation import check_frontmatter, validate_text

_EXPORTS: dict[str, tuple[str, str]] = {
    "AgentDefinitionError": ("skills.errors", "AgentDefinitionError"),
    "FrontmatterError": ("skills.errors", "FrontmatterError"),
    "ResourceError": ("skills.errors", "ResourceError"),
    "SkillFileError": ("skills.errors", "SkillFileError"),
    "TooLargeError": ("skills.errors", "TooLargeError"),
    "AgentDefinition": ("skills.skillmd.agents", "AgentDefinition"),
    "check_agent_text": ("skills.skillmd.agents", "check_agent_text"),
    "dependency_problems": ("skills.skillmd.depends", "dependency_problems"),
    "find_cycle": ("skills.skillmd.depends", "find_cycle"),
    "missing_dependencies": ("skills.skillmd.depends", "missing_dependencies"),
    "Disclosure": ("skills.skillmd.disclosure", "Disclosure"),
    "asks_for_registry": ("skills.skillmd.disclosure", "asks_for_registry"),
    "disclose": ("skills.skillmd.disclosure", "disclose"),
    "render_available_skills": ("skills.skillmd.disclosure", "render_available_skills"),
    "render_instructions": ("skills.skillmd.disclosure", "render_instructions"),
    "with_dependencies": ("skills.skillmd.disclosure", "with_dependencies"),
    "DEFAULT_LIMITS": ("skills.skillmd.limits", "DEFAULT_LIMITS"),
    "Limits": ("skills.skillmd.limits", "Limits"),
    "SkillFile": ("skills.skillmd.manifest", "SkillFile"),
    "SkillManifest": ("skills.skillmd.manifest", "SkillManifest"),
    "SkillMetadata": ("skills.skillmd.manifest", "SkillMetadata"),
    "SourceName": ("skills.skillmd.sourcenames", "SourceName"),
    "Triggers": ("skills.skillmd.manifest", "Triggers"),
    "SkillIndex": ("skills.skillmd.matching", "SkillIndex"),
    "SkillMatch": ("skills.skillmd.matching", "SkillMatch"),
    "parse_frontmatter": ("skills.skillmd.parsing", "parse_frontmatter"),
    "Problem": ("skills.skillmd.problems", "Problem"),
    "Severity": ("skills.skillmd.problems", "Severity"),
    "has_errors": ("skills.skillmd.problems", "has_errors"),
    "registration_request": ("skills.skillmd.registration", "registration_request"),
    "Resource": ("skills.skillmd.resources", "Resource"),
    "SkillReader": ("skills.skillmd.resources", "SkillReader"),
    "BUNDLED_DIR": ("skills.skillmd.sourcenames", "BUNDLED_DIR"),
    "Catalog": ("skills.skillmd.sources", "Catalog"),
    "Shadowed": ("skills.skillmd.sources", "Shadowed"),
    "project_skills_dir": ("skills.skillmd.sources", "project_skills_dir"),
    "SKILL_TOOL": ("skills.skillmd.tool", "TOOL_NAME"),
    "run_skill_tool": ("skills.skillmd.tool", "run_skill_tool"),
    "skill_file_tool": ("skills.skillmd.tool", "skill_file_tool"),
    "skill_tool_definition": ("skills.skillmd.tool", "skill_tool_definition"),
    "check_frontmatter": ("skills.skillmd.validation", "check_frontmatter"),
    "validate_text": ("skills.skillmd.validation", "validate_text"),
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _EXPORTS[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = [
    "BUNDLED_DIR",
    "DEFAULT_LIMITS",
    "AgentDefinition",
    "AgentDefinitionError",
    "Catalog",
    "Disclosure",
    "FrontmatterError",
    "Limits",
    "Problem",
    "Resource",
    "ResourceError",
    "Severity",
    "Shadowed",
    "SkillFile",
    "SkillFileError",
    "SkillIndex",
    "SkillManifest",
    "SkillMatch",
    "SkillMetadata",
    "SkillReader",
    "SourceName",
    "TooLargeError",
    "Triggers",
    "asks_for_registry",
    "check_agent_text",
    "check_frontmatter",
    "dependency_problems",
    "disclose",
    "find_cycle",
    "has_errors",
    "missing_dependencies",
    "parse_frontmatter",
    "project_skills_dir",
    "registration_request",
    "render_available_skills",
    "render_instructions",
    "SKILL_TOOL",
    "run_skill_tool",
    "skill_file_tool",
    "skill_tool_definition",
    "validate_text",
    "with_dependencies",
]
