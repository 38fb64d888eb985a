"""What a SKILL.md says, as pydantic models: the Agent Skills fields plus our extensions.

Field names mirror the YAML (``allowed-tools`` through an alias), so a validation
error's location is the path a user would edit.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer
from pydantic_core import PydanticCustomError

from skills import linear
from skills.skillmd.patterns import Pattern, PatternError, compile_pattern
from skills.skillmd.sourcenames import SourceName
from skills.spec.fields import Problems, integer
from skills.spec.limits import MAX_STEPS, PRIORITY, Bound
from skills.spec.mcpservers import ToolsetServer


def _as_list(value: Any) -> Any:
    # The spec's metadata values are strings, so ``keywords: "a, b"`` must work as well as a YAML list.
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


def _split_spaces(value: Any) -> Any:
    # allowed-tools is space separated when written as a string (Agent Skills spec).
    return value.split() if isinstance(value, str) else value


def _single_pattern(value: Any) -> Any:
    # A lone pattern is one regex; splitting it on commas would break ``a{1,3}``.
    return [value] if isinstance(value, str) else value


def _compile(value: Any) -> Any:
    if isinstance(value, Pattern):
        return value
    if not isinstance(value, str):
        raise PydanticCustomError("regex", "a pattern is a string, not {kind}", {"kind": type(value).__name__})
    try:
        # Compiled once here, at load (and once per distinct text); matching never compiles.
        return compile_pattern(value)
    except PatternError as exc:
        raise PydanticCustomError("regex", "{reason}", {"reason": str(exc)}) from None


def _number_to_str(value: Any) -> Any:
    # ``version: 1.0`` is a float to YAML; keep it as the text the author meant.
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


def _within(bound: Bound) -> BeforeValidator:
    """A whole number within ``bound``, read and refused as a registration reads it (``true`` is no number,
    and the refusal names the range)."""

    def check(value: Any) -> Any:
        if value is None:
            return value
        problems = Problems()
        parsed = integer(value, "", None, problems, bound=bound)
        if problems.errors:
            raise PydanticCustomError("bound", problems.errors[0].message.replace("{", "{{").replace("}", "}}"))
        return parsed

    return BeforeValidator(check)


Names = Annotated[list[str], BeforeValidator(_as_list)]
# Any: pydantic has no type for an RE2 program; the validator makes it one, and dumps give back its text.
TriggerPattern = Annotated[Any, BeforeValidator(_compile), PlainSerializer(lambda p: p.pattern, return_type=str)]


class Triggers(BaseModel):
    """When a user's message should bring the skill in: keywords, verbs and regex patterns."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    keywords: Names = Field(default_factory=list)
    """Words or phrases matched whole, case-insensitively."""
    verbs: Names = Field(default_factory=list)
    """Action words, matched like keywords."""
    patterns: Annotated[list[TriggerPattern], BeforeValidator(_single_pattern)] = Field(default_factory=list)
    """Regular expressions (RE2 syntax) searched case-insensitively in the message's first characters
    (:mod:`skills.skillmd.patterns`)."""


class PlanStepSpec(BaseModel):
    """One step of ``metadata.execution_plan``: a fixed tool call (``{id, toolName, parameters}``, as in a registration)."""

    # extra="forbid": a misspelt key (``paramters``) would otherwise make the step silently call with no arguments.
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    id: str | None = None
    """The step's id; ``step1``, ``step2``... when absent."""
    tool_name: str = Field(alias="toolName", min_length=1)
    """The exact tool name, as ``get_tool_catalog`` lists it."""
    parameters: dict[str, Any] = Field(default_factory=dict)
    """The tool's arguments, fixed when the skill is written."""


_TOOLSET_NAME = linear.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")


def _toolsets(value: Any) -> Any:
    if isinstance(value, list | str):
        raise PydanticCustomError(
            "toolsets",
            "toolsets are MCP servers: a mapping of server name to an mcpServers entry "
            "({command, args, env} or {url, headers}), not a list",
        )
    if isinstance(value, dict):
        for name in value:
            if not isinstance(name, str) or not _TOOLSET_NAME.match(name):
                raise PydanticCustomError(
                    "toolsets",
                    "toolset server name '{name}' must be letters, digits and hyphens (its tools are "
                    "called <name>_<tool>)",
                    {"name": str(name)},
                )
    return value


class SkillMetadata(BaseModel):
    """The spec's free-form ``metadata`` mapping; the keys we understand are typed, the rest kept as given."""

    model_config = ConfigDict(extra="allow", frozen=True)

    keywords: Names = Field(default_factory=list)
    """More trigger keywords, in the metadata mapping (for clients that keep frontmatter flat)."""
    priority: Annotated[int, _within(PRIORITY)] = 0
    """Breaks ties between skills that match a message equally well; higher wins."""
    required_tools: Names = Field(default_factory=list)
    """The only tools the skill may use when it runs on the Agent tier."""
    trigger_config: dict[str, Any] | None = None
    """A schedule (``schedule``/``interval_minutes``/``at``/``in_minutes``...) or an event (``event: NAME``);
    its presence makes the file register as a scheduled (or event-triggered) skill."""
    max_steps: Annotated[int | None, _within(MAX_STEPS)] = None
    """Bound on the Agent tier's loop when the skill runs on a schedule."""
    execution_plan: list[PlanStepSpec] | None = None
    """Fixed tool calls of a scheduled skill: its presence makes it a Direct-tier skill (no LLM at fire time)."""
    notify_on_completion: bool | None = None
    """Whether a scheduled run notifies the user when done (the engine's default when absent)."""


class SkillManifest(BaseModel):
    """The frontmatter of a SKILL.md, validated."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    name: str
    """1-64 lowercase letters, digits and hyphens; equal to the folder's name."""
    description: str
    """What the skill does and when to use it (1-1024 characters)."""
    license: str | None = None
    compatibility: str | None = None
    """Environment requirements (at most 500 characters)."""
    allowed_tools: Annotated[list[str], BeforeValidator(_split_spaces)] = Field(
        default_factory=list, alias="allowed-tools"
    )
    metadata: SkillMetadata = Field(default_factory=SkillMetadata)
    triggers: Triggers = Field(default_factory=Triggers)
    version: Annotated[str | None, BeforeValidator(_number_to_str)] = None
    toolsets: Annotated[dict[str, ToolsetServer], BeforeValidator(_toolsets)] = Field(default_factory=dict)
    """MCP servers by name, connected while the skill runs; their tools (``<name>_<tool>``) join that run only."""
    scripts: list[str | dict[str, Any]] = Field(default_factory=list)
    """Scripts the skill may run (files under ``scripts/``; ``skills.skillmd.scripts``), in the worker's sandbox."""
    default_enabled: bool = True
    """A skill with ``false`` loads but stays out of matching and disclosure unless enabled by name."""
    brief_description: str | None = None
    """What the registry lists instead of the description, when the author wants it shorter; the
    whole description when absent (the spec's description says when to use the skill: none of it
    is cut)."""
    depends: Names = Field(default_factory=list)
    """Skills whose instructions come along whenever this one's are disclosed."""

    @property
    def brief(self) -> str:
        if self.brief_description:
            return self.brief_description.strip()
        return " ".join(self.description.split())

    @property
    def keywords(self) -> list[str]:
        return [*self.triggers.keywords, *self.metadata.keywords]

    @property
    def has_triggers(self) -> bool:
        return bool(self.keywords or self.triggers.verbs or self.triggers.patterns)


class SkillFile(BaseModel):
    """A discovered SKILL.md: its frontmatter and where it lives. The body is read only when asked for."""

    model_config = ConfigDict(frozen=True)

    manifest: SkillManifest
    path: Path
    """The SKILL.md file."""
    source: SourceName
    mtime: datetime
    """When the file was last written (UTC), so a sync can tell a newer file."""
    headings: tuple[str, ...] = ()
    """The body's headings, read with the frontmatter (``adapters.skill_files.read_headings``): matching weighs
    their words, and the body itself stays unread until it is disclosed."""

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def folder(self) -> Path:
        return self.path.parent
