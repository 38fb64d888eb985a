"""The management calls' payloads: a skill named, registered, changed, enabled and synced to its schedule,
the queries of its runs, revisions and incidents."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from skills.errors import FieldError
from skills.spec.models import BY_USER, Normalized, Skill, TriggerConfig


class SkillRef(BaseModel):
    """A skill named by id, or by name (case-insensitive), optionally within one agent."""

    ref: str
    agent_id: str | None = None


class SkillFilter(BaseModel):
    agent_id: str | None = None
    enabled: bool | None = None
    trigger_type: str | None = None


class RunsQuery(BaseModel):
    skill: SkillRef | None = None
    limit: int = 20


class RegisterInput(BaseModel):
    """A new skill (``target`` empty) or a partial update of ``target``."""

    data: dict[str, Any]
    target: SkillRef | None = None
    from_files: bool = False
    """Set by the SKILL.md sync alone: only it registers skills of the files agent, and only for a scheduled
    SKILL.md the worker's folders hold."""
    by: str = ""
    """Who asked, for the skill's revisions (``skills.spec.revisions``): ``cli``, ``mcp``, ``chat:<session>``,
    ``sync``... Attribution only, never a privilege; empty: ``client``."""
    reverts: int | None = None
    """``skills revert``: the revision whose spec ``data`` is, recorded as a revert of it."""
    asked_at: datetime | None = None
    """When the registration's workflow started, set by the workflow itself (a client's value is replaced): a
    new skill of exactly this definition stored under its name since then is this registration's own, stored
    by a run of its activity whose answer was lost with its workflow task (a worker that died), not a name
    another skill took."""


class Prepared(BaseModel):
    """The normalizer's verdict, and which skill an update replaces."""

    normalized: Normalized | None = None
    existing_id: int | None = None
    """The skill an update replaces; the save loads it again, in its own transaction."""
    errors: list[FieldError] = Field(default_factory=list)


class SaveInput(BaseModel):
    normalized: Normalized
    existing_id: int | None = None
    by: str = ""
    reverts: int | None = None


class Saved(BaseModel):
    """What a save wrote. Payloads hold one skill body at most: the stored skill comes back without
    its instructions (the workflow has them, in the normalized input), the replaced one whole."""

    skill: Skill | None = None
    previous: Skill | None = None
    """An update's skill as it was: what ``undo_save`` puts back."""
    errors: list[FieldError] = Field(default_factory=list)


class UndoSave(BaseModel):
    """Put the store back as it was before a save whose schedule could not follow."""

    skill_id: int
    previous: Skill | None = None
    """The skill an update replaced; none for a new skill, which is removed."""


class RegistrationResult(BaseModel):
    """What the client gets back from a registration or an update."""

    ok: bool
    skill: Skill | None = None
    notes: list[str] = Field(default_factory=list)
    """What the normalizer changed, in words (aliases read, time converted, tier switched...)."""
    errors: list[FieldError] = Field(default_factory=list)
    next_fire: datetime | None = None


class Registered(BaseModel):
    """What ``register_skill`` (a registration's one local activity) hands its workflow: the client's answer,
    and whether the change paused an enabled skill (its waiting runs are then told)."""

    result: RegistrationResult
    paused: bool = False


class RegisterManyInput(BaseModel):
    """Several new skills at once (``skills register`` of a folder or a list): each item is registered
    on its own road (normalize, store, schedule), refused on its own, and never half-stored."""

    items: list[Any]
    """Each a mapping of a skill's fields; anything else is refused as that item."""
    first_index: int = 0
    """The position of ``items[0]`` in the caller's whole list (a big list is sent in batches)."""
    by: str = ""
    """Who asked, for the skills' revisions (``RegisterInput.by``)."""


class ItemRegistration(BaseModel):
    """What came of one item of a bulk registration."""

    index: int
    """Its position in the caller's list, from 0."""
    name: str
    ok: bool
    skill_id: int | None = None
    schedule_id: str | None = None
    next_fire: datetime | None = None
    notes: list[str] = Field(default_factory=list)
    errors: list[FieldError] = Field(default_factory=list)


class BulkRegistrationResult(BaseModel):
    items: list[ItemRegistration] = Field(default_factory=list)

    @property
    def registered(self) -> list[ItemRegistration]:
        return [item for item in self.items if item.ok]

    @property
    def refused(self) -> list[ItemRegistration]:
        return [item for item in self.items if not item.ok]


class PreviousSchedule(BaseModel):
    """What a skill's schedule was built from before a change: enough to tell whether the old
    schedule must go (a new id) or be recreated (a new trigger: the memo is set only at creation)."""

    schedule_id: str | None = None
    trigger_config: TriggerConfig | None = None
    trigger_as_written: dict[str, Any] | None = None

    @classmethod
    def of(cls, skill: Skill) -> PreviousSchedule:
        return cls(schedule_id=skill.schedule_id, trigger_config=skill.trigger_config,
                   trigger_as_written=skill.trigger_as_written)


class ScheduleSync(BaseModel):
    """Make the skill's schedule match the stored skill (create, update, pause or delete).

    The skill is named by id and loaded by the activity: payloads never carry two bodies."""

    skill_id: int
    previous: PreviousSchedule | None = None


class ScheduleSynced(BaseModel):
    schedule_id: str | None = None
    next_fire: datetime | None = None


class SkipRenewal(BaseModel):
    """Renew the skip lists (``skills.when.calendar``) of the schedules whose lists run out soonest."""

    limit: int = 50
    """Schedules renewed at most, in one activity: a Maintenance round stays short whatever the number of skills."""


class ChangeInput(BaseModel):
    """Delete, pause or resume a skill."""

    target: SkillRef
    action: Literal["delete", "pause", "resume", "hook"]
    reason: str = BY_USER
    hook_digest: str | None = None
    """``hook``: the digest of the skill's new hook token (replacing any); None removes its hook. The
    token itself never enters a payload (``skills.when.hooks``)."""
    by: str = ""
    """Who asked, for the skill's revisions (``skills.spec.revisions``): ``cli``, ``mcp``, ``chat:<session>``,
    ``sync``... Attribution only, never a privilege; empty: ``client``."""


class ChangeResult(BaseModel):
    ok: bool
    skill: Skill | None = None
    errors: list[FieldError] = Field(default_factory=list)


class HookInput(BaseModel):
    skill_id: int
    digest: str | None
    now: datetime


class EnableInput(BaseModel):
    skill_id: int
    enabled: bool
    reason: str | None = None
    now: datetime
    by: str = ""


class HistoryQuery(BaseModel):
    """``skills history REF``: a skill's revisions, newest first (``rev``: that one alone). A deleted
    skill's are found by its name or id too."""

    skill: SkillRef
    rev: int | None = Field(default=None, ge=1)
    limit: int = Field(default=50, ge=1, le=1000)


class IncidentsQuery(BaseModel):
    """``skills incidents [REF] [--all]``: the open incidents (with ``closed``, the closed ones too), newest first."""

    skill: SkillRef | None = None
    closed: bool = False
    limit: int = Field(default=50, ge=1, le=1000)
