"""SKILL.md skills (the Agent Skills format): parsing and validation, sources, lazy resources,
trigger matching, progressive disclosure, the ``skill`` tool, agent definitions, and the
registration request of file skills that carry a schedule.

Pure apart from reading skill folders, which only ``files`` does; no network, no database, no clock.
"""

from skills.errors import (
    AgentDefinitionError,
    FrontmatterError,
    ResourceError,
    SkillFileError,
    TooLargeError,
)
from skills.skillmd.agents import AgentDefinition, check_agent_text, load_agent
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
from skills.skillmd.manifest import SkillFile, SkillManifest, SkillMetadata, SourceName, Triggers
from skills.skillmd.matching import SkillIndex, SkillMatch
from skills.skillmd.parsing import parse_frontmatter
from skills.skillmd.problems import Problem, Severity, has_errors
from skills.skillmd.registration import registration_request
from skills.skillmd.resources import Resource, list_resources, read_body, read_resource
from skills.skillmd.sources import (
    BUNDLED_DIR,
    Catalog,
    Shadowed,
    discover,
    load_skill_file,
    project_skills_dir,
)
from skills.skillmd.tool import TOOL_NAME as SKILL_TOOL
from skills.skillmd.tool import run_skill_tool, skill_file_tool, skill_tool_definition
from skills.skillmd.validation import check_frontmatter, validate_path, validate_text

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
    "SourceName",
    "TooLargeError",
    "Triggers",
    "asks_for_registry",
    "check_agent_text",
    "check_frontmatter",
    "dependency_problems",
    "disclose",
    "discover",
    "find_cycle",
    "has_errors",
    "list_resources",
    "load_agent",
    "load_skill_file",
    "missing_dependencies",
    "parse_frontmatter",
    "project_skills_dir",
    "read_body",
    "read_resource",
    "registration_request",
    "render_available_skills",
    "render_instructions",
    "SKILL_TOOL",
    "run_skill_tool",
    "skill_file_tool",
    "skill_tool_definition",
    "validate_path",
    "validate_text",
    "with_dependencies",
]
