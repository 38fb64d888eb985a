"""What waits for the owner's answer (``skills.owner.approvals``) and the standing grants that answer ahead
of time (``skills.owner.grants``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import or_, update
from sqlmodel import select

from adapters.store.base import Repository, insert_or_ignore
from adapters.store.tables import ApprovalRow, GrantRow
from skills.errors import SkillNotFoundError
from skills.owner.approvals import PENDING, Approval, ApprovalRequest, ApprovalStatus
from skills.owner.grants import Grant, matches


class ApprovalRepository(Repository):
    """Approvals and standing grants."""

    def add_approval(self, request: ApprovalRequest) -> Approval:
        """Record what waits for the owner's answer; a request already recorded under its
        ``request_key`` (a retried step) is kept as it is and returned."""
        with self.session() as session:
            session.execute(insert_or_ignore(self.engine, ApprovalRow(**request.model_dump())))
            session.commit()
            row = session.exec(select(ApprovalRow).where(ApprovalRow.request_key == request.request_key)).one()
            return _approval_model(row)

    def get_approval(self, approval_id: int) -> Approval:
        with self.session() as session:
            row = session.get(ApprovalRow, approval_id)
            if row is None:
                raise SkillNotFoundError(f"no approval with id {approval_id}")
            return _approval_model(row)

    def find_approval(self, request_key: str) -> Approval | None:
        with self.session() as session:
            row = session.exec(select(ApprovalRow).where(ApprovalRow.request_key == request_key)).first()
            return _approval_model(row) if row is not None else None

    def list_approvals(self, *, status: ApprovalStatus | None = PENDING, skill_id: int | None = None,
                       session_id: str | None = None, workflow_id: str | None = None,
                       limit: int = 50) -> list[Approval]:
        """Newest first; pending ones by default (``status=None``: any)."""
        with self.session() as session:
            query = select(ApprovalRow).order_by(ApprovalRow.id.desc()).limit(limit)  # type: ignore[union-attr]
            if status is not None:
                query = query.where(ApprovalRow.status == status)
            if skill_id is not None:
                query = query.where(ApprovalRow.skill_id == skill_id)
            if session_id is not None:
                query = query.where(ApprovalRow.session_id == session_id)
            if workflow_id is not None:
                query = query.where(ApprovalRow.workflow_id == workflow_id)
            return [_approval_model(r) for r in session.exec(query)]

    def decide_approval(self, approval_id: int, status: ApprovalStatus, *, now: datetime, by: str = "",
                        reason: str | None = None) -> tuple[Approval, bool]:
        """Answer a pending approval. Only a pending one takes an answer (a compare-and-set, safe
        against two answers at once): returns the approval as it now stands and whether this call
        decided it."""
        if status == PENDING:
            raise ValueError("an answer is approved, denied or expired")
        with self.session() as session:
            changed = session.execute(
                update(ApprovalRow)
                .where(ApprovalRow.id == approval_id, ApprovalRow.status == PENDING)  # type: ignore[arg-type]
                .values(status=status, decided_at=now, decided_by=by or None, reason=reason or None)
            ).rowcount
            session.commit()
        return self.get_approval(approval_id), bool(changed)

    def add_grant(self, *, tool: str, skill_id: int | None, skill_name: str, where: dict[str, str],
                  created_at: datetime, expires_at: datetime | None, created_by: str) -> Grant:
        with self.session() as session:
            row = GrantRow(tool=tool, skill_id=skill_id, skill_name=skill_name, where=dict(where),
                           created_at=created_at, expires_at=expires_at, created_by=created_by)
            session.add(row)
            session.commit()
            session.refresh(row)
            return Grant.model_validate(row.model_dump())

    def get_grant(self, grant_id: int) -> Grant:
        with self.session() as session:
            row = session.get(GrantRow, grant_id)
            if row is None:
                raise SkillNotFoundError(f"no grant with id {grant_id}")
            return Grant.model_validate(row.model_dump())

    def list_grants(self, *, now: datetime, live_only: bool = True, limit: int = 100) -> list[Grant]:
        """Newest first; only the live ones (neither revoked nor expired) unless ``live_only`` is False."""
        with self.session() as session:
            query = select(GrantRow).order_by(GrantRow.id.desc())  # type: ignore[union-attr]
            if live_only:
                query = query.where(GrantRow.revoked_at.is_(None),  # type: ignore[union-attr]
                                    or_(GrantRow.expires_at.is_(None), GrantRow.expires_at > now))  # type: ignore[union-attr,operator]
            return [Grant.model_validate(r.model_dump()) for r in session.exec(query.limit(limit))]

    def revoke_grant(self, grant_id: int, now: datetime) -> tuple[Grant, bool]:
        """Revoke a grant; returns it and whether this call revoked it (False: it already was)."""
        with self.session() as session:
            changed = session.execute(
                update(GrantRow).where(GrantRow.id == grant_id, GrantRow.revoked_at.is_(None))  # type: ignore[arg-type,union-attr]
                .values(revoked_at=now)).rowcount
            session.commit()
        return self.get_grant(grant_id), bool(changed)

    def matching_grant(self, tool: str, skill_id: int | None, arguments: dict[str, Any], now: datetime) -> Grant | None:
        """The oldest live grant that approves this call now, or None."""
        with self.session() as session:
            query = select(GrantRow).where(GrantRow.tool == tool, GrantRow.revoked_at.is_(None)  # type: ignore[union-attr]
                                           ).order_by(GrantRow.id)  # type: ignore[arg-type]
            for row in session.exec(query):
                grant = Grant.model_validate(row.model_dump())
                if matches(grant, tool, skill_id, arguments, now):
                    return grant
        return None

    def record_approval_outcome(self, approval_id: int, outcome: str) -> None:
        """What came of an answered approval (the call's result, the change's answer)."""
        with self.session() as session:
            session.execute(update(ApprovalRow).where(ApprovalRow.id == approval_id)  # type: ignore[arg-type]
                            .values(outcome=outcome))
            session.commit()


def _approval_model(row: ApprovalRow) -> Approval:
    return Approval.model_validate(row.model_dump())
