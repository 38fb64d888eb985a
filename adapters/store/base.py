"""What every repository of the store shares: the engine and its short sessions, and the small
converters between table rows and the models of ``skills.spec.models``.

The repositories are synchronous on purpose: SQLAlchemy blocks, so the worker's activities that call
them are synchronous too and run in its thread pool instead of stalling the event loop that serves
workflows and MCP sessions.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, SQLModel

from adapters.store.tables import RunRow, SkillRow
from skills.errors import SkillNotFoundError, SkillValidationError
from skills.spec.models import RunRecord, Skill, SkillSpec


class Repository:
    """One aggregate of the store, one short transaction per call."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @contextmanager
    def session(self) -> Iterator[Session]:
        with Session(self.engine, expire_on_commit=False) as session:
            yield session


def skill_row(session: Session, skill_id: int, *, lock: bool = False) -> SkillRow:
    """``lock``: for a change that writes a revision, so two changes at once number theirs one after the
    other (PostgreSQL: SELECT ... FOR UPDATE; SQLite writes one transaction at a time anyway)."""
    row = session.get(SkillRow, skill_id, with_for_update=lock)
    if row is None:
        raise SkillNotFoundError(f"no skill with id {skill_id}")
    return row


def commit_unique(session: Session, spec: SkillSpec) -> None:
    try:
        session.commit()
    except IntegrityError as e:
        session.rollback()
        raise name_taken(spec) from e


def insert_or_ignore(engine: Engine, row: SQLModel) -> Any:
    """INSERT ... ON CONFLICT DO NOTHING: a row already stored under any of its unique keys is kept.
    A key the database numbers (an id still None) is left to it."""
    if engine.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    values = {k: v for k, v in row.model_dump().items() if not (k == "id" and v is None)}
    return insert(type(row)).values(**values).on_conflict_do_nothing()


def name_taken(spec: SkillSpec) -> SkillValidationError:
    return SkillValidationError.single("name", f"agent '{spec.agent_id}' already has a skill named '{spec.name}'")


def spec_columns(spec: SkillSpec) -> dict[str, Any]:
    data = SkillSpec.model_validate(spec, from_attributes=True).model_dump(mode="json")
    data["end_at"] = spec.end_at  # a datetime column, not JSON
    return {key: data[key] for key in SkillSpec.model_fields}


def spec_json(row: SkillRow | SkillSpec) -> dict[str, Any]:
    """A skill's spec as JSON (what a revision keeps and compares)."""
    return SkillSpec.model_validate(row, from_attributes=True).model_dump(mode="json")


def skill_model(row: SkillRow) -> Skill:
    return Skill.model_validate({**row.model_dump(exclude={"hook_digest"}), "has_hook": row.hook_digest is not None})


def run_model(row: RunRow) -> RunRecord:
    return RunRecord.model_validate(row.model_dump())
