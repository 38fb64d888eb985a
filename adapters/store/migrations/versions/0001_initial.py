"""The store as it was before migrations: skills (notify_on_completion NOT NULL), runs,
messages, engine state, seen events.

A store created before Alembic (by ``create_all``) has some or all of these tables and no
``alembic_version``: it is upgraded from the start like a new one, so each table is created
only if it is missing, and the revisions after this one check the shape they change.

Revision ID: 0001
Revises:
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    existing = set(sa.inspect(op.get_bind()).get_table_names())
    if "skills" not in existing:
        op.create_table(
            "skills",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("agent_id", sa.String(), nullable=False),
            sa.Column("name", sa.String(), nullable=False),
            sa.Column("description", sa.String(), nullable=False),
            sa.Column("enabled", sa.Boolean(), nullable=False),
            sa.Column("disabled_reason", sa.String(), nullable=True),
            sa.Column("trigger_type", sa.String(), nullable=False),
            sa.Column("trigger_config", sa.JSON(), nullable=True),
            sa.Column("trigger_as_written", sa.JSON(), nullable=True),
            sa.Column("instructions", sa.Text(), nullable=False),
            sa.Column("required_tools", sa.JSON(), nullable=False),
            sa.Column("execution_plan", sa.JSON(), nullable=True),
            sa.Column("max_steps", sa.Integer(), nullable=False),
            sa.Column("notify_on_completion", sa.Boolean(), nullable=False),
            sa.Column("notify_interval_minutes", sa.Integer(), nullable=False),
            sa.Column("preflight", sa.JSON(), nullable=False),
            sa.Column("model", sa.String(), nullable=True),
            sa.Column("schedule_id", sa.String(), nullable=True),
            sa.Column("consecutive_failures", sa.Integer(), nullable=False),
            sa.Column("last_failure_at", TIME, nullable=True),
            sa.Column("last_error", sa.Text(), nullable=True),
            sa.Column("last_notified_at", TIME, nullable=True),
            sa.Column("created_at", TIME, nullable=False),
            sa.Column("updated_at", TIME, nullable=False),
            sa.PrimaryKeyConstraint("id"),
            sa.UniqueConstraint("agent_id", "name", name="uq_skill_agent_name"),
            sqlite_autoincrement=True,
        )
        op.create_index("ix_skills_agent_id", "skills", ["agent_id"])
    if "runs" not in existing:
        op.create_table(
            "runs",
            sa.Column("run_id", sa.String(), nullable=False),
            sa.Column("skill_id", sa.Integer(), nullable=False),
            sa.Column("skill_name", sa.String(), nullable=False),
            sa.Column("workflow_id", sa.String(), nullable=False),
            sa.Column("trigger", sa.String(), nullable=False),
            sa.Column("scheduled_at", TIME, nullable=True),
            sa.Column("started_at", TIME, nullable=False),
            sa.Column("finished_at", TIME, nullable=True),
            sa.Column("status", sa.String(), nullable=False),
            sa.Column("summary", sa.Text(), nullable=False),
            sa.Column("tier", sa.String(), nullable=False),
            sa.Column("tool_calls", sa.JSON(), nullable=False),
            sa.Column("prompt_tokens", sa.Integer(), nullable=False),
            sa.Column("completion_tokens", sa.Integer(), nullable=False),
            sa.PrimaryKeyConstraint("run_id"),
        )
        op.create_index("ix_runs_skill_id", "runs", ["skill_id"])
    if "messages" not in existing:
        op.create_table(
            "messages",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("conversation_id", sa.String(), nullable=False),
            sa.Column("seq", sa.Integer(), nullable=False),
            sa.Column("role", sa.String(), nullable=False),
            sa.Column("content", sa.Text(), nullable=True),
            sa.Column("tool_calls", sa.JSON(), nullable=False),
            sa.Column("tool_call_id", sa.String(), nullable=True),
            sa.Column("prompt_tokens", sa.Integer(), nullable=False),
            sa.Column("completion_tokens", sa.Integer(), nullable=False),
            sa.Column("created_at", TIME, nullable=False),
            sa.PrimaryKeyConstraint("id"),
            sa.UniqueConstraint("conversation_id", "seq", name="uq_message_seq"),
        )
        op.create_index("ix_messages_conversation_id", "messages", ["conversation_id"])
    if "engine_state" not in existing:
        op.create_table(
            "engine_state",
            sa.Column("key", sa.String(), nullable=False),
            sa.Column("value", sa.JSON(), nullable=False),
            sa.Column("updated_at", TIME, nullable=False),
            sa.PrimaryKeyConstraint("key"),
        )
    if "seen_events" not in existing:
        op.create_table(
            "seen_events",
            sa.Column("name", sa.String(), nullable=False),
            sa.Column("event_id", sa.String(), nullable=False),
            sa.Column("seen_at", TIME, nullable=False),
            sa.Column("claimer", sa.String(), nullable=False),
            sa.Column("result", sa.JSON(), nullable=True),
            sa.PrimaryKeyConstraint("name", "event_id"),
        )
        op.create_index("ix_seen_events_seen_at", "seen_events", ["seen_at"])


def downgrade() -> None:
    for table in ("seen_events", "engine_state", "messages", "runs", "skills"):
        op.drop_table(table)
