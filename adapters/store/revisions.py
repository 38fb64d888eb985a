"""A skill's revisions (``skills.spec.revisions``): each change of a skill, written in the change's own
transaction, and the history the owner reads and restores from.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, func
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from adapters.store.base import Repository, spec_json
from adapters.store.tables import RevisionRow, SkillRow
from skills.errors import SkillNotFoundError
from skills.spec.revisions import DEFAULT_MAX_REVISIONS, Revision, RevisionAction, by_of, diff_specs


class RevisionRepository(Repository):
    """The revisions of skills, a deleted one's too."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self.max_revisions = DEFAULT_MAX_REVISIONS
        """Revisions kept a skill (the newest); each change drops the older ones. 0: all (the worker sets it)."""

    def list_revisions(self, skill_id: int, limit: int = 50) -> list[Revision]:
        """A skill's revisions (a deleted one's too), newest first."""
        with self.session() as session:
            query = (select(RevisionRow).where(RevisionRow.skill_id == skill_id)
                     .order_by(RevisionRow.rev.desc()).limit(limit))  # type: ignore[attr-defined]
            return [Revision.model_validate(row.model_dump()) for row in session.exec(query)]

    def last_revision_by(self, by: str) -> Revision | None:
        """The newest change recorded as made by ``by`` (a chat session's: ``chat:<id>``), of any skill."""
        with self.session() as session:
            row = session.exec(select(RevisionRow).where(RevisionRow.by == by)
                               .order_by(RevisionRow.id.desc()).limit(1)).first()  # type: ignore[union-attr]
            return Revision.model_validate(row.model_dump()) if row is not None else None

    def get_revision(self, skill_id: int, rev: int) -> Revision:
        with self.session() as session:
            row = session.exec(select(RevisionRow).where(RevisionRow.skill_id == skill_id,
                                                         RevisionRow.rev == rev)).first()
            if row is None:
                raise SkillNotFoundError(f"skill {skill_id} has no revision {rev} (skills history lists them)")
            return Revision.model_validate(row.model_dump())

    def deleted_skill_revisions(self, ref: str, agent_id: str | None = None) -> list[Revision]:
        """The newest revision of each deleted skill ``ref`` names (an id, or a name case-insensitively)."""
        with self.session() as session:
            query = select(RevisionRow).where(RevisionRow.action == "deleted")
            if ref.isascii() and ref.isdigit() and len(ref) <= 18:
                query = query.where(RevisionRow.skill_id == int(ref))
            else:
                query = query.where(func.lower(RevisionRow.skill_name) == ref.strip().lower())
            if agent_id:
                query = query.where(RevisionRow.agent_id == agent_id)
            rows = session.exec(query.order_by(RevisionRow.id.desc()).limit(20)).all()  # type: ignore[union-attr]
            live = {row.id for row in session.exec(select(SkillRow).where(
                SkillRow.id.in_([r.skill_id for r in rows])))}  # type: ignore[union-attr]
            newest: dict[int, Revision] = {}
            for row in rows:
                if row.skill_id not in live and row.skill_id not in newest:
                    newest[row.skill_id] = Revision.model_validate(row.model_dump())
            return list(newest.values())

    def prune_deleted_revisions(self, before: datetime, limit: int) -> int:
        """Forget the revisions of skills deleted before ``before`` (their delete's revision is that old)."""
        with self.session() as session:
            gone = (select(RevisionRow.skill_id).where(RevisionRow.action == "deleted",
                                                       RevisionRow.at < before)  # type: ignore[operator]
                    .where(~select(SkillRow.id).where(SkillRow.id == RevisionRow.skill_id).exists())
                    .limit(limit))
            ids = list(session.exec(gone))
            if not ids:
                return 0
            count = session.execute(delete(RevisionRow).where(RevisionRow.skill_id.in_(ids))).rowcount  # type: ignore[attr-defined]
            session.commit()
            return count

    def revise(self, session: Session, row: SkillRow, action: RevisionAction, by: str, now: datetime, *,
                before: dict[str, Any] | None, after: dict[str, Any] | None = None,
                spec: dict[str, Any] | None = None) -> None:
        """Record a change of ``row`` in its transaction: the spec after it (the row's, with ``after`` over it:
        a change not yet set on the row; ``spec``: the one kept instead, a delete's), and what changed since
        ``before``. Revisions past the newest ``max_revisions`` go."""
        assert row.id is not None
        kept = spec if spec is not None else {**spec_json(row), **(after or {})}
        # A creation's spec is all there is to say, a delete's too: only an update lists what changed.
        changes = diff_specs(before, kept) if before is not None and spec is None else []
        row.revision = (row.revision or 0) + 1
        session.add(RevisionRow(skill_id=row.id, skill_name=row.name, agent_id=row.agent_id, rev=row.revision,
                                at=now, by=by_of(by), action=action, spec=kept,
                                diff=[c.model_dump(mode="json") for c in changes]))
        if self.max_revisions and row.revision > self.max_revisions:  # else none is past them: no DELETE to run
            with session.no_autoflush:  # a taken name is the commit's to tell (commit_unique), not this delete's
                session.execute(delete(RevisionRow).where(
                    RevisionRow.skill_id == row.id,  # type: ignore[arg-type]
                    RevisionRow.rev <= row.revision - self.max_revisions))  # type: ignore[arg-type]
