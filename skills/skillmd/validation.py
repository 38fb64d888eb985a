"""Validation of SKILL.md frontmatter: the Agent Skills specification exactly, then our extensions.

Every problem in a file is reported, not only the first. The specification's rules
use the reference validator skills-ref's wording; an extension field of the wrong
type is reported with the path to it (``metadata.priority``) and pydantic's reason.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from skills.errors import FrontmatterError, SkillValidationError
from skills.skillmd.manifest import SkillManifest
from skills.skillmd.parsing import parse_frontmatter
from skills.skillmd.problems import Problem
from skills.skillmd.registration import FILE_FIELDS, file_request
from skills.skillmd.scripts import DeclaredScript, declared_scripts
from skills.skillmd.scripts import file_problems as script_file_problems
from skills.spec.fields import Problems, integer, number
from skills.spec.limits import IN_HOURS, IN_MINUTES, INTERVAL_MINUTES
from skills.spec.normalize import NormalizeContext, normalize, own_field_problems
from skills.when.triggers import zone_info

MAX_SKILL_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 1024
MAX_COMPATIBILITY_LENGTH = 500
RECOMMENDED_MAX_BODY_LINES = 500

SPEC_FIELDS = frozenset({"name", "description", "license", "allowed-tools", "metadata", "compatibility"})
EXTENSION_FIELDS = frozenset(
    {"triggers", "version", "toolsets", "scripts", "default_enabled", "brief_description", "depends"}
)
ALLOWED_FIELDS = SPEC_FIELDS | EXTENSION_FIELDS

# Upper case is reported by its own rule, so it is not counted as an invalid character too.
_NAME_CHARACTERS = re.compile(r"[A-Za-z0-9-]*")


def check_frontmatter(
    data: Mapping[str, Any], dir_name: str | None = None
) -> tuple[SkillManifest | None, list[Problem]]:
    """Every problem in a parsed frontmatter, and the manifest if name and description are usable.

    The manifest leaves out whatever was invalid (a bad extension field, a bad
    pattern), so lenient loading can use it; strict validation only looks at the problems.
    """
    problems = [
        *_check_fields(data),
        *_check_name(data, dir_name),
        *_check_description(data),
        *_check_compatibility(data),
        *_check_license(data),
        *_check_allowed_tools(data),
        *_check_metadata(data),
        *_check_trigger_numbers(data),
        *_check_file_fields(data),
        *_check_scripts(data),
    ]
    if not (_non_empty_str(data.get("name")) and _non_empty_str(data.get("description"))):
        return None, problems
    manifest, extension_problems = _build_manifest(_model_input(data))
    return manifest, [*problems, *extension_problems]


def validate_text(text: str, dir_name: str | None = None) -> list[Problem]:
    """Every problem in a SKILL.md's text; ``dir_name`` is its folder's name, checked against ``name``."""
    try:
        data, body = parse_frontmatter(text)
    except FrontmatterError as exc:
        return [Problem.error(str(exc))]
    manifest, problems = check_frontmatter(data, dir_name)
    registration = _check_registration(manifest, body, problems) if manifest is not None else []
    return [*problems, *registration, *_check_body(body)]


def validate_file(text: str, dir_name: str, locate: Callable[[DeclaredScript], object]) -> list[Problem]:
    """Every problem in a SKILL.md's text and in the scripts it declares: ``locate`` finds a declared
    script's file in the folder or raises ``ResourceError`` (``adapters.skill_folders.validate_path``
    reads the folder and gives the problems their file's path)."""
    problems = validate_text(text, dir_name)
    try:
        data, _ = parse_frontmatter(text)
    except FrontmatterError:
        data = {}
    return problems + _check_script_files(data, locate)


def _check_fields(data: Mapping[str, Any]) -> list[Problem]:
    unexpected = sorted(str(k) for k in data if k not in ALLOWED_FIELDS)
    if not unexpected:
        return []
    return [
        Problem.error(
            f"Unexpected fields in frontmatter: {', '.join(unexpected)}. "
            f"Only {sorted(ALLOWED_FIELDS)} are allowed."
        )
    ]


def _check_name(data: Mapping[str, Any], dir_name: str | None) -> list[Problem]:
    if "name" not in data:
        return [Problem.error("Missing required field in frontmatter: name", "name")]
    name = data["name"]
    if not _non_empty_str(name):
        return [Problem.error("Field 'name' must be a non-empty string", "name")]
    name = name.strip()
    messages = []
    if len(name) > MAX_SKILL_NAME_LENGTH:
        messages.append(
            f"Skill name '{name}' exceeds {MAX_SKILL_NAME_LENGTH} character limit ({len(name)} chars)"
        )
    if name != name.lower():
        messages.append(f"Skill name '{name}' must be lowercase")
    if name.startswith("-") or name.endswith("-"):
        messages.append("Skill name cannot start or end with a hyphen")
    if "--" in name:
        messages.append("Skill name cannot contain consecutive hyphens")
    if not _NAME_CHARACTERS.fullmatch(name):
        messages.append(
            f"Skill name '{name}' contains invalid characters. Only letters, digits, and hyphens are allowed."
        )
    if dir_name is not None and dir_name != name:
        messages.append(f"Directory name '{dir_name}' must match skill name '{name}'")
    return [Problem.error(m, "name") for m in messages]


def _check_description(data: Mapping[str, Any]) -> list[Problem]:
    if "description" not in data:
        return [Problem.error("Missing required field in frontmatter: description", "description")]
    description = data["description"]
    if not _non_empty_str(description):
        return [Problem.error("Field 'description' must be a non-empty string", "description")]
    if len(description) > MAX_DESCRIPTION_LENGTH:
        return [
            Problem.error(
                f"Description exceeds {MAX_DESCRIPTION_LENGTH} character limit ({len(description)} chars)",
                "description",
            )
        ]
    return []


def _check_compatibility(data: Mapping[str, Any]) -> list[Problem]:
    if "compatibility" not in data:
        return []
    compatibility = data["compatibility"]
    if not _non_empty_str(compatibility):
        # The specification: 1-500 characters if provided.
        return [Problem.error("Field 'compatibility' must be a non-empty string", "compatibility")]
    if len(compatibility) > MAX_COMPATIBILITY_LENGTH:
        return [
            Problem.error(
                f"Compatibility exceeds {MAX_COMPATIBILITY_LENGTH} character limit ({len(compatibility)} chars)",
                "compatibility",
            )
        ]
    return []


def _check_license(data: Mapping[str, Any]) -> list[Problem]:
    if "license" in data and not isinstance(data["license"], str):
        return [Problem.error("Field 'license' must be a string", "license")]
    return []


def _check_allowed_tools(data: Mapping[str, Any]) -> list[Problem]:
    if "allowed-tools" not in data:
        return []
    tools = data["allowed-tools"]
    if isinstance(tools, list) and not all(isinstance(t, str) for t in tools):
        return [Problem.error("Field 'allowed-tools' list items must all be strings", "allowed-tools")]
    if not isinstance(tools, str | list):
        return [
            Problem.error(
                "Field 'allowed-tools' must be either a string or a list of strings", "allowed-tools"
            )
        ]
    return []


def _check_metadata(data: Mapping[str, Any]) -> list[Problem]:
    if "metadata" in data and not isinstance(data["metadata"], dict):
        return [Problem.error("Field 'metadata' must be a mapping", "metadata")]
    return []


_TRIGGER_NUMBERS = {"interval_minutes": INTERVAL_MINUTES, "in_minutes": IN_MINUTES, "in_hours": IN_HOURS}


def _check_trigger_numbers(data: Mapping[str, Any]) -> list[Problem]:
    """The numbers of ``metadata.trigger_config`` within the bounds a registration holds them to, so
    ``skills validate`` says what the sync's registration would refuse (reported, not removed: the
    registration refuses the whole trigger, and the stored skill keeps its own until the file is fixed)."""
    metadata = data.get("metadata")
    trigger = metadata.get("trigger_config") if isinstance(metadata, dict) else None
    if not isinstance(trigger, dict):
        return []
    problems = Problems()
    for key, bound in _TRIGGER_NUMBERS.items():
        if trigger.get(key) is None:
            continue
        where = f"metadata.trigger_config.{key}"
        if bound.whole:
            integer(trigger[key], where, None, problems, bound=bound)
        else:
            number(trigger[key], where, problems, bound=bound)
    return [Problem.error(f"Field '{e.field}': {e.message}", e.field) for e in problems.errors]


def _check_file_fields(data: Mapping[str, Any]) -> list[Problem]:
    """The fields a scheduled file passes on to its registration beside ``trigger_config`` (its
    schedule's shape, skipped days, approvals), judged by the normalizer's own checks, so ``skills
    validate`` says what the sync's registration would refuse. A file without a ``trigger_config``
    registers nothing: its metadata is the specification's free form."""
    metadata = data.get("metadata")
    trigger = metadata.get("trigger_config") if isinstance(metadata, dict) else None
    if not isinstance(metadata, dict) or not isinstance(trigger, dict):
        return []
    fields = {key: metadata[key] for key in FILE_FIELDS if metadata.get(key) is not None}
    zone = trigger.get("timezone")
    zone = zone.strip() if isinstance(zone, str) else "UTC"
    try:
        zone_info(zone)
    except ValueError:  # reported by the registration's own trigger check
        zone = "UTC"
    return [Problem.error(f"Field 'metadata.{e.field}': {e.message}", f"metadata.{e.field}")
            for e in own_field_problems(fields, zone)]


_JUDGED_AT = datetime(2000, 1, 1, tzinfo=UTC)
"""The instant a file's registration is judged at: a fixed one, as ``skills/`` reads no clock. What depends
on the day (an ``at`` or ``end_at`` already past) is the sync's to say, on the day it registers."""
_FILE_PLACES = {"name": "name", "description": "description", "instructions": "body",
                "trigger_type": "metadata.trigger_config"}
"""Where a registration's field is written in a SKILL.md (the rest under ``metadata.``)."""


def _check_registration(manifest: SkillManifest, body: str, found: list[Problem]) -> list[Problem]:
    """What the sync's registration would refuse, judged by the registration's own normalizer on the very
    request the sync sends (``file_request``): two triggers, a cron or zone that does not parse, an ``at``
    that is no date. Only the checks that need the world (the live tool catalog, the model list, the
    owner's skills) are left to the sync. A field already reported is not reported twice."""
    request = file_request(manifest, body)
    if request is None:
        return []
    try:
        normalize(request, NormalizeContext(now=_JUDGED_AT, default_timezone="UTC", default_agent_id="files"))
    except SkillValidationError as e:
        reported = {p.field for p in found if p.severity == "error"}
        problems = []
        for error in e.errors:
            where = _FILE_PLACES.get(error.field, f"metadata.{error.field}")
            if not any(r and where.startswith(r) for r in reported):
                problems.append(Problem.error(f"Field '{where}': {error.message}", where))
        return problems
    return []


def _check_scripts(data: Mapping[str, Any]) -> list[Problem]:
    """Each declared script must be a file under ``scripts/``: an absolute path, a ``~`` or a ``..`` is
    an error, since a skill may run what it declares (``skills.skillmd.scripts``)."""
    scripts = data.get("scripts")
    if not isinstance(scripts, list):
        return []  # the model says "Field 'scripts': Input should be a valid list"
    _, problems = declared_scripts(scripts)
    return [Problem.error(f"Field '{where}': {reason}", where) for where, reason in problems]


def _check_script_files(data: Mapping[str, Any], locate: Callable[[DeclaredScript], object]) -> list[Problem]:
    """Each declared script exists in the skill's ``scripts/`` folder (a symlink out of it is refused)."""
    scripts = data.get("scripts")
    if not isinstance(scripts, list):
        return []
    _, text_problems = declared_scripts(scripts)
    reported = {where for where, _ in text_problems}
    return [Problem.error(f"Field '{where}': {reason}", where)
            for where, reason in script_file_problems(scripts, locate) if where not in reported]


def _check_body(body: str) -> list[Problem]:
    if not body:
        return [Problem.warning("SKILL.md has no instructions after the frontmatter")]
    lines = body.count("\n") + 1
    if lines > RECOMMENDED_MAX_BODY_LINES:
        return [
            Problem.warning(
                f"SKILL.md body is {lines} lines; the specification recommends under "
                f"{RECOMMENDED_MAX_BODY_LINES} (move detail to references/)"
            )
        ]
    return []


def _non_empty_str(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _model_input(data: Mapping[str, Any]) -> dict[str, Any]:
    """The frontmatter without what the specification checks already refused, ready for the model."""
    spec_problems = {
        "license": bool(_check_license(data)),
        "compatibility": "compatibility" in data and not isinstance(data["compatibility"], str),
        "allowed-tools": bool(_check_allowed_tools(data)),
        "metadata": bool(_check_metadata(data)),
    }
    clean = {k: v for k, v in data.items() if k in ALLOWED_FIELDS and not spec_problems.get(k)}
    clean["name"] = clean["name"].strip()
    clean["description"] = clean["description"].strip()
    return clean


def _build_manifest(data: dict[str, Any]) -> tuple[SkillManifest | None, list[Problem]]:
    """The manifest, after removing each invalid extension value (one bad pattern costs only itself)."""
    problems: list[Problem] = []
    copied = False
    while True:
        try:
            return SkillManifest.model_validate(data), problems
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
        if not copied:
            # Invalid parts are removed from a copy, so the caller's data stays as parsed
            # (copied only now: most files are valid, and discovery reads thousands).
            data, copied = copy.deepcopy(data), True
        for error in errors:
            where = ".".join(str(part) for part in error["loc"])
            problems.append(Problem.error(f"Field '{where}': {error['msg']}", where))
        if not _remove(data, [error["loc"] for error in errors]):
            return None, problems


def _remove(data: dict[str, Any], locations: list[tuple[int | str, ...]]) -> bool:
    """Remove the deepest value each error location reaches; whether anything was removed."""
    targets: dict[tuple[int, int | str], tuple[Any, int | str]] = {}
    for loc in locations:
        node: Any = data
        parent: Any = None
        key: int | str | None = None
        for part in loc:
            if not _has(node, part):
                break
            parent, key, node = node, part, node[part]
        if parent is not None and key is not None:
            targets[(id(parent), key)] = (parent, key)
    # Highest list index first, so removing one item does not shift the next one to remove.
    for parent, key in sorted(
        targets.values(), key=lambda t: t[1] if isinstance(t[1], int) else -1, reverse=True
    ):
        del parent[key]
    return bool(targets)


def _has(node: Any, part: int | str) -> bool:
    if isinstance(node, dict):
        return part in node
    return isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
