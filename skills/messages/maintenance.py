"""The maintenance round's payloads: what it scans, closes, prunes and reports."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from skills.messages.run import RunOutcome


class SkillBrief(BaseModel):
    """A skill named in a payload that may list many: its id, for the activities, and its name, for people."""

    id: int
    name: str
    schedule_id: str | None = None


class MaintenanceScan(BaseModel):
    ready: list[SkillBrief] = Field(default_factory=list)
    """Disabled for missing tools, and every tool is available now."""
    missed: list[SkillBrief] = Field(default_factory=list)
    """Enabled one-shots that never fired and are now beyond the catch-up window."""


class MissedOneShot(BaseModel):
    skill_id: int
    workflow_id: str


class ClosedRuns(BaseModel):
    """Runs the Maintenance round closed as ``error``: left ``running`` past their deadline."""

    outcomes: list[RunOutcome] = Field(default_factory=list)


class StuckSkill(BaseModel):
    """A skill whose scheduled fires are being skipped because a run of it is still going."""

    skill: SkillBrief
    run_id: str
    skipped: int
    """Fires skipped behind that run so far."""
    message: str


class OverdueSkill(BaseModel):
    """A skill whose schedule should have fired by ``due_at`` and has no run or recorded skip of that fire."""

    skill: SkillBrief
    due_at: datetime
    last_fire: datetime | None = None
    """The scheduled time of its newest recorded fire (None: none since its schedule was last set)."""


class OverdueQuery(BaseModel):
    """Which overdue skills to name: the ``limit`` longest overdue (the count is of all)."""

    limit: int = Field(default=100, ge=0, le=1000)


class OverdueSkills(BaseModel):
    """The skills overdue now (``skills_overdue``; ``skills doctor``): how many, and the first of them."""

    count: int = 0
    skills: list[OverdueSkill] = Field(default_factory=list)
    """At most the query's ``limit``, the longest overdue first."""
    threshold_seconds: float = 0


class PrunedRuns(BaseModel):
    """Run records the maintenance round deleted: past the retention window, and past the cap per skill."""

    by_age: int = 0
    by_count: int = 0
    revisions: int = 0
    """Revisions of skills deleted before the retention window, forgotten."""


class RunHistory(BaseModel):
    """How far back the run history goes (``skills runs``): what the retention keeps, and the oldest kept."""

    retention_days: int
    max_runs_per_skill: int
    oldest: datetime | None = None


class MaintenanceReport(BaseModel):
    enabled: list[str] = Field(default_factory=list)
    missed: list[str] = Field(default_factory=list)
    closed: list[str] = Field(default_factory=list)
    """Runs closed as ``error`` for want of an end (run ids)."""
    stuck: list[str] = Field(default_factory=list)
    """Skills newly found with their fires skipped behind a run still going."""
    endpoint: str | None = None
    """"down" or "up" when the LLM endpoint changed."""
    ended: list[str] = Field(default_factory=list)
    """Skills recorded ``ended``: their ``end_at`` passed."""
    skips_renewed: list[str] = Field(default_factory=list)
    """Skills whose schedule's skip list (business days, holidays) was renewed before it ran out."""
    pruned: PrunedRuns | None = None
    overdue: int = 0
    """Skills overdue (a scheduled fire with no run or recorded skip past ``overdue_after``)."""
