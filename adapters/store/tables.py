"""The store's tables: SQLModel rows (the engine that opens them: ``adapters.store.engine``).

Only ``adapters.store`` reads and writes them; everything else sees the plain pydantic
models of ``skills.spec.models`` (a ``table=True`` model would lose its datetime types through
Temporal's data converter). Times are kept aware, in UTC, whatever the backend.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Index,
    Integer,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.types import TypeDecorator
from sqlmodel import Field, SQLModel


class UTCDateTime(TypeDecorator):
    """Aware UTC datetimes in and out, whatever the backend keeps (SQLite keeps no zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the store")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _utc_column(nullable: bool = True) -> Any:
    return Field(default=None, sa_column=Column(UTCDateTime(), nullable=nullable))


class SkillRow(SQLModel, table=True):
    __tablename__ = "skills"
    __table_args__ = (UniqueConstraint("agent_id", "name", name="uq_skill_agent_name"), {"sqlite_autoincrement": True})

    id: int | None = Field(default=None, primary_key=True)
    agent_id: str = Field(index=True)
    name: str
    description: str = ""
    enabled: bool = True
    disabled_reason: str | None = None
    trigger_type: str
    trigger_config: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    trigger_as_written: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    instructions: str = Field(sa_column=Column(Text, nullable=False))
    required_tools: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    execution_plan: list[dict[str, Any]] | None = Field(default=None, sa_column=Column(JSON))
    max_steps: int = 10
    notify_on_completion: bool | None = Field(default=None, nullable=True)
    """None: automatic (skills.run.notify). Stores made before it could be None: migration 0002."""
    notify_interval_minutes: int = 0
    deliver_to: list[dict[str, Any]] = Field(default_factory=list,
                                             sa_column=Column(JSON, nullable=False, server_default="[]"))
    """Where a result goes: ``[{tool, arguments}]`` (skills.spec.models.Destination; migration 0014)."""
    max_tokens_per_month: int | None = None
    """An Agent-tier skill's token cap in 30 days (migration 0017)."""
    remind_after_minutes: int = Field(default=0, sa_column=Column(Integer, nullable=False, server_default="0"))
    """Minutes between reminders of an open incident; 0: none (migration 0013)."""
    deliver: str = "always"
    """always, on_change or never (skills.spec.models.Deliver; migration 0012)."""
    delivered_digest: str | None = None
    """SHA-256 (hex) of the last result delivered: what ``deliver: on_change`` compares (migration 0012)."""
    context_from: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    """``self`` or skill names: whose last delivered result a run is given (skills.run.recall; migration 0016)."""
    preflight: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    model: str | None = None
    approval_required_tools: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    approval_exempt_tools: list[str] = Field(default_factory=list,
                                             sa_column=Column(JSON, nullable=False, server_default=text("'[]'")))
    """Destructive tools the owner lets this skill call without asking (migration 0020)."""
    approval_timeout_minutes: int | None = None
    fallback_models: list[str] = Field(default_factory=list,
                                       sa_column=Column(JSON, nullable=False, server_default=text("'[]'")))
    hook_digest: str | None = None
    """SHA-256 (hex) of the skill's ``POST /hooks/<skill>`` token; None: no hook. The token is never stored."""
    # The schedule's shape (migration 0007; skills.spec.models.SkillSpec says what each is).
    timeout_minutes: float | None = None
    end_at: datetime | None = _utc_column()
    max_runs: int | None = None
    jitter_seconds: int = 0
    spread: bool = False
    overlap: str = "skip"
    catch_up: str = "once"
    scheduled_runs: int = 0
    """Runs the schedule started, each fire once (what max_runs counts); begin_run adds one per new fire."""
    # -- business days and holidays (migration 0008) --
    skip_holidays: str | None = None
    business_days_only: bool = False
    skips_until: datetime | None = Field(default=None, sa_column=Column(UTCDateTime(), nullable=True, index=True))
    """When the skip list of the skill's schedule runs out: Maintenance renews the ones soon due by this
    column alone, without describing every schedule."""
    schedule_id: str | None = None
    consecutive_failures: int = 0
    last_failure_at: datetime | None = _utc_column()
    last_error: str | None = Field(default=None, sa_column=Column(Text))
    last_notified_at: datetime | None = _utc_column()
    last_run_at: datetime | None = _utc_column()
    """The newest finished run (``last_run_*``), written with the run's outcome in one transaction, so
    loading a skill costs no query of the runs. Stores made before it are filled in by upgrade_schema."""
    last_run_status: str | None = None
    last_run_summary: str | None = Field(default=None, sa_column=Column(Text))
    revision: int = Field(default=0, sa_column=Column(Integer, nullable=False, server_default="0"))
    """The newest of its revisions (``revisions.rev``); 0: none recorded (a skill older than migration 0018)."""
    created_at: datetime = _utc_column(nullable=False)
    updated_at: datetime = _utc_column(nullable=False)


SCHEDULED_FIRE = text("\"trigger\" = 'schedule'")


class RunRow(SQLModel, table=True):
    __tablename__ = "runs"
    __table_args__ = (
        # One row per fire of a skill's schedule, whichever worker or workflow run records it. Migration 0003
        # builds it, partial on either backend; no DDL is made from these tables. Naming `postgresql_where`
        # here would import SQLAlchemy's PostgreSQL dialect (2 MB resident) into every worker on SQLite.
        Index("uq_runs_scheduled_fire", "skill_id", "scheduled_at", unique=True, sqlite_where=SCHEDULED_FIRE),
        # The retention's walks (migration 0009): the oldest runs of all, and a skill's runs newest first.
        Index("ix_runs_started_at", "started_at"),
        Index("ix_runs_skill_started", "skill_id", "started_at"),
    )

    run_id: str = Field(primary_key=True)
    skill_id: int = Field(index=True)
    skill_name: str
    workflow_id: str
    trigger: str = "schedule"
    scheduled_at: datetime | None = _utc_column()
    started_at: datetime = _utc_column(nullable=False)
    finished_at: datetime | None = _utc_column()
    status: str = "running"
    summary: str = Field(default="", sa_column=Column(Text, nullable=False))
    tier: str
    tool_calls: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str | None = None
    """The model that answered an Agent-tier run (migration 0010)."""
    deliveries: list[dict[str, Any]] = Field(default_factory=list,
                                             sa_column=Column(JSON, nullable=False, server_default="[]"))
    """Each deliver_to destination's outcome: ``[{destination, status, error}]`` (migration 0014)."""
    unchanged: bool = Field(default=False, sa_column=Column(Boolean, nullable=False, server_default=false()))
    """``deliver: on_change`` found the result the last delivered one: not delivered (migration 0012)."""


class MessageRow(SQLModel, table=True):
    """One message of an Agent-tier conversation (or a chat session): appended, never rewritten."""

    __tablename__ = "messages"
    __table_args__ = (UniqueConstraint("conversation_id", "seq", name="uq_message_seq"),)

    id: int | None = Field(default=None, primary_key=True)
    conversation_id: str = Field(index=True)
    seq: int
    role: str
    content: str | None = Field(default=None, sa_column=Column(Text))
    tool_calls: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    tool_call_id: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    by_engine: bool = Field(default=False, sa_column=Column(Boolean, nullable=False, server_default=false()))
    """The engine wrote it, not the model (``ChatMessage.by_engine``; migration 0022)."""
    created_at: datetime = _utc_column(nullable=False)


class NoticeRow(SQLModel, table=True):
    """A run's completion notice as a chat delivered it: the message a reply can point at (migration 0015).

    Recorded when the notifier answers with the ids of what it sent (the bundled telegram server's
    ``chat_id`` and ``message_ids``); a reply to one of them continues with its run as context. Pruned
    with its run."""

    __tablename__ = "notices"

    chat_id: str = Field(primary_key=True)
    message_id: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    run_id: str = Field(index=True)
    sent_at: datetime = _utc_column(nullable=False)


class StateRow(SQLModel, table=True):
    """The engine's own durable state (the LLM endpoint's health, ...), by key."""

    __tablename__ = "engine_state"

    key: str = Field(primary_key=True)
    value: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    updated_at: datetime = _utc_column(nullable=False)


class SeenEventRow(SQLModel, table=True):
    """An emitted event id, remembered for the dedupe window (``event_dedupe_window``): the same
    id emitted again within it starts nothing. Rows older than the window are pruned by the next claim."""

    __tablename__ = "seen_events"

    name: str = Field(primary_key=True)
    event_id: str = Field(primary_key=True)
    seen_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False, index=True))
    claimer: str
    """The EmitEvent run that claimed it (a retried claim by the same run is still its own)."""
    result: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    """What that emit started and skipped (``skills.when.events.EmitResult``), once it is done."""


class TrustRow(SQLModel, table=True):
    """The owner's trust in a SKILL.md skill's executable parts (``skills trust NAME``): the digest of the
    parts trusted (``skills.skillmd.trust``). A skill whose parts no longer give this digest is untrusted."""

    __tablename__ = "skill_trust"

    name: str = Field(primary_key=True)
    """The file skill's name (names are unique across the skill folders: the sync's precedence picks one)."""
    digest: str
    covers: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    """What the digest covered when trusted (toolset lines, files), for a person to see."""
    trusted_at: datetime = _utc_column(nullable=False)


class ApprovalRow(SQLModel, table=True):
    """Something waiting for (or given) the owner's answer: a run's tool call or a chat's proposed
    change (``skills.owner.approvals``). Decided once: only a pending row takes an answer."""

    __tablename__ = "approvals"
    __table_args__ = ({"sqlite_autoincrement": True},)

    id: int | None = Field(default=None, primary_key=True)
    kind: str
    request_key: str = Field(unique=True)
    status: str = Field(default="pending", index=True)
    skill_id: int | None = Field(default=None, index=True)
    skill_name: str = ""
    run_id: str | None = None
    workflow_id: str | None = None
    session_id: str | None = Field(default=None, index=True)
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    summary: str = Field(default="", sa_column=Column(Text, nullable=False))
    requested_at: datetime = _utc_column(nullable=False)
    expires_at: datetime = _utc_column(nullable=False)
    decided_at: datetime | None = _utc_column()
    decided_by: str | None = None
    reason: str | None = Field(default=None, sa_column=Column(Text))
    outcome: str | None = Field(default=None, sa_column=Column(Text))


class IncidentRow(SQLModel, table=True):
    """Consecutive failures of one skill with one cause (``skills.run.incidents``); at most one open a skill
    (migration 0011)."""

    __tablename__ = "incidents"
    __table_args__ = ({"sqlite_autoincrement": True},)

    id: int | None = Field(default=None, primary_key=True)
    skill_id: int = Field(index=True)
    skill_name: str = ""
    cause: str = Field(default="", sa_column=Column(Text, nullable=False))
    first_error: str = Field(default="", sa_column=Column(Text, nullable=False))
    last_error: str = Field(default="", sa_column=Column(Text, nullable=False))
    opened_at: datetime = _utc_column(nullable=False)
    last_failure_at: datetime = _utc_column(nullable=False)
    failures: int = 1
    last_notified_at: datetime | None = _utc_column()
    closed_at: datetime | None = _utc_column()
    closed_by: str | None = None


class RevisionRow(SQLModel, table=True):
    """One change to a skill (``skills.spec.revisions``), written in the change's transaction (migration 0018).
    Kept when its skill is deleted: the delete's own revision is what a revert re-creates it from."""

    __tablename__ = "revisions"
    __table_args__ = (UniqueConstraint("skill_id", "rev", name="uq_revisions_skill_rev"),
                      {"sqlite_autoincrement": True})

    id: int | None = Field(default=None, primary_key=True)
    skill_id: int
    skill_name: str
    agent_id: str
    rev: int
    at: datetime = _utc_column(nullable=False)
    by: str
    action: str
    spec: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    diff: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))


LAST_RUN_COLUMNS = ("last_run_at", "last_run_status", "last_run_summary")
"""The skill's newest finished run, kept on its row (migration 0004) instead of a query per load."""


class GrantRow(SQLModel, table=True):
    """A standing grant (``skills.owner.grants``): calls of ``tool`` (of one skill, or any) whose arguments match
    ``where`` are approved without asking while it is neither revoked nor expired (migration 0019)."""

    __tablename__ = "grants"
    __table_args__ = ({"sqlite_autoincrement": True},)

    id: int | None = Field(default=None, primary_key=True)
    tool: str = Field(index=True)
    skill_id: int | None = None
    skill_name: str = ""
    where: dict[str, str] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_at: datetime = _utc_column(nullable=False)
    expires_at: datetime | None = _utc_column()
    created_by: str = ""
    revoked_at: datetime | None = _utc_column()
