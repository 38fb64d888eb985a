"""Skills: the source of truth the schedules are derived from. The table rows never leave the store:
callers get the plain pydantic models of ``skills.spec.models``.
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import String, cast, delete, func, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from adapters.store.base import (
    Repository,
    commit_unique,
    name_taken,
    skill_model,
    skill_row,
    spec_columns,
    spec_json,
)
from adapters.store.revisions import RevisionRepository
from adapters.store.tables import LAST_RUN_COLUMNS, IncidentRow, RevisionRow, RunRow, SkillRow
from skills.errors import SkillNotFoundError, SkillValidationError
from skills.messages.manage import SkillFilter
from skills.naming import schedule_id_for
from skills.spec.models import ENDED, Skill, SkillSpec
from skills.spec.revisions import BY_CLIENT, RevisionAction


class SkillRepository(Repository):
    """Skills: their specs, their state between runs, their end."""

    def __init__(self, engine: Engine, revisions: RevisionRepository, schedule_prefix: str = "skills") -> None:
        super().__init__(engine)
        self.revisions = revisions
        """Where each change of a skill records its revision, in the change's transaction."""
        self.schedule_prefix = schedule_prefix
        """Schedule ids are ``<prefix>-<id>-<name>``; the worker gives its task queue."""
        self._newest: dict[tuple[str, int | None], dict[int, Skill]] = {}
        """``newest_skills``' copies, by agent (and cut): each kept until its row's ``updated_at`` changes."""
        self._newest_lock = threading.Lock()
        self._crons: tuple[tuple[object, ...], dict[tuple[str, str], int]] | None = None
        """``cron_counts``' last answer, with the stamp of the skills it was read from."""
        self._cron_keys: dict[str | None, tuple[str, str] | None] = {}
        """A trigger's JSON text -> its (cron, zone), or None when it is not a cron: each read once."""

    def create_skill(self, spec: SkillSpec, *, trigger_as_written: dict[str, Any] | None,
                     disabled_reason: str | None, now: datetime, by: str = BY_CLIENT,
                     action: RevisionAction = "created") -> Skill:
        row = SkillRow(created_at=now, updated_at=now, trigger_as_written=trigger_as_written,
                       disabled_reason=disabled_reason if not spec.enabled else None, **spec_columns(spec))
        with self.session() as session:
            session.add(row)
            try:
                session.flush()
            except IntegrityError as e:
                session.rollback()
                raise name_taken(spec) from e
            assert row.id is not None
            row.schedule_id = schedule_id_for(self.schedule_prefix, row.id, spec.name) if spec.is_scheduled else None
            self.revisions.revise(session, row, action, by, now, before=None)
            commit_unique(session, spec)
            return skill_model(row)

    def replace_skill(self, skill_id: int, spec: SkillSpec, *, trigger_as_written: dict[str, Any] | None,
                      disabled_reason: str | None, now: datetime, by: str = BY_CLIENT,
                      action: RevisionAction = "updated") -> Skill:
        with self.session() as session:
            row = skill_row(session, skill_id, lock=True)
            before = spec_json(row)
            for key, value in spec_columns(spec).items():
                setattr(row, key, value)
            row.trigger_as_written = trigger_as_written
            row.disabled_reason = None if spec.enabled else disabled_reason
            row.schedule_id = (schedule_id_for(self.schedule_prefix, skill_id, spec.name)
                               if spec.is_scheduled else None)
            row.updated_at = now
            self.revisions.revise(session, row, action, by, now, before=before)
            session.add(row)
            commit_unique(session, spec)
            return skill_model(row)

    def restore_skill(self, skill: Skill) -> None:
        """Put back a skill exactly as it was (the undo of a registration whose schedule failed), and
        forget the revisions written since, in the same transaction."""
        with self.session() as session:
            row = session.get(SkillRow, skill.id) or SkillRow(id=skill.id)
            for key, value in spec_columns(skill).items():
                setattr(row, key, value)
            for key in ("disabled_reason", "trigger_as_written", "schedule_id", "last_notified_at", "scheduled_runs",
                        "consecutive_failures", "last_failure_at", "last_error", "created_at", "updated_at",
                        "revision", *LAST_RUN_COLUMNS):
                setattr(row, key, getattr(skill, key))
            session.add(row)
            session.execute(delete(RevisionRow).where(RevisionRow.skill_id == skill.id,  # type: ignore[arg-type]
                                                      RevisionRow.rev > skill.revision))  # type: ignore[arg-type]
            session.commit()

    def set_enabled(self, skill_id: int, enabled: bool, reason: str | None, now: datetime,
                    by: str = BY_CLIENT) -> Skill:
        with self.session() as session:
            row = skill_row(session, skill_id, lock=True)
            ended = skill_model(row).ended(now) if enabled else None
            if ended is not None:
                raise SkillValidationError.single("enabled", f"its schedule has ended ({ended}): give a later "
                                                             "end_at or a larger max_runs first")
            if row.enabled != enabled:
                self.revisions.revise(session, row, "updated", by, now, before=spec_json(row), after={"enabled": enabled})
            row.enabled = enabled
            row.disabled_reason = None if enabled else reason
            row.updated_at = now
            session.add(row)
            session.commit()
            return skill_model(row)

    def retire_skill(self, skill_id: int, reason: str) -> Skill:
        """Disable a skill whose schedule is done with (a one-shot), forgetting the schedule."""
        with self.session() as session:
            row = skill_row(session, skill_id)
            row.enabled, row.disabled_reason, row.schedule_id = False, reason, None
            session.add(row)
            session.commit()
            return skill_model(row)

    def delete_skill(self, skill_id: int, *, by: str | None = BY_CLIENT, now: datetime | None = None) -> Skill:
        """Delete a skill and its runs and incidents; its revisions stay, the delete's last (by None: the
        undo of a creation, which forgets the skill's revisions too)."""
        with self.session() as session:
            row = skill_row(session, skill_id, lock=True)
            skill = skill_model(row)
            if by is None:
                session.execute(delete(RevisionRow).where(RevisionRow.skill_id == skill_id))  # type: ignore[arg-type]
            else:
                self.revisions.revise(session, row, "deleted", by, now or datetime.now(UTC), before=None, spec=spec_json(row))
            for run in session.exec(select(RunRow).where(RunRow.skill_id == skill_id)):
                session.delete(run)
            for incident in session.exec(select(IncidentRow).where(IncidentRow.skill_id == skill_id)):
                session.delete(incident)
            session.delete(row)
            session.commit()
            return skill

    def get_skill(self, skill_id: int) -> Skill:
        with self.session() as session:
            return skill_model(skill_row(session, skill_id))

    def find_skill(self, ref: str | int, agent_id: str | None = None) -> Skill:
        """A skill by id, or by name (case-insensitive) within one agent or across all agents."""
        if isinstance(ref, str) and ref.isascii() and ref.isdigit() and len(ref) <= 19:
            ref = int(ref)  # ASCII only: "²" is a digit to isdigit(), and int() refuses it
        if isinstance(ref, int):
            if not 0 < ref < 2**63:  # past a database integer: SQLite raised OverflowError, retried
                raise SkillNotFoundError(f"no skill with id {ref if abs(ref) < 10**30 else 'of that size'}")
            return self.get_skill(ref)
        with self.session() as session:
            query = select(SkillRow).where(func.lower(SkillRow.name) == ref.strip().lower())
            if agent_id:
                query = query.where(SkillRow.agent_id == agent_id)
            rows = session.exec(query).all()
            if not rows:
                where = f" for agent '{agent_id}'" if agent_id else ""
                raise SkillNotFoundError(f"no skill named '{ref}'{where}")
            if len(rows) > 1:
                agents = ", ".join(sorted(r.agent_id for r in rows))
                raise SkillNotFoundError(f"several agents have a skill named '{ref}' ({agents}): name the agent")
            return skill_model(rows[0])

    def list_skills(self, flt: SkillFilter | None = None) -> list[Skill]:
        flt = flt or SkillFilter()
        with self.session() as session:
            query = select(SkillRow).order_by(SkillRow.agent_id, SkillRow.name)
            if flt.agent_id is not None:
                query = query.where(SkillRow.agent_id == flt.agent_id)
            if flt.enabled is not None:
                query = query.where(SkillRow.enabled == flt.enabled)
            if flt.trigger_type is not None:
                query = query.where(SkillRow.trigger_type == flt.trigger_type)
            return [skill_model(row) for row in session.exec(query).all()]

    def newest_skills(self, agent_id: str, limit: int, *, instruction_chars: int | None = None) -> list[Skill]:
        """The agent's newest ``limit`` skills (by creation), newest first; each instructions cut past
        ``instruction_chars`` (None: whole). What a registration compares a new skill with, at every registration:
        so this asks only ids and update times, and reads in full just the rows new or changed since its
        last answer (a copy kept per store, a few KB a skill)."""
        with self.session() as session:
            stamps = session.execute(
                select(SkillRow.id, SkillRow.updated_at).where(SkillRow.agent_id == agent_id)
                .order_by(SkillRow.created_at.desc(), SkillRow.id.desc()).limit(limit)  # type: ignore[union-attr]
            ).all()
            with self._newest_lock:
                kept = self._newest.get((agent_id, instruction_chars), {})
                stale = [skill_id for skill_id, updated in stamps
                         if skill_id not in kept or kept[skill_id].updated_at != updated]
            fresh = {row.id: skill_model(row) for row in session.exec(  # type: ignore[union-attr]
                select(SkillRow).where(SkillRow.id.in_(stale)))} if stale else {}  # type: ignore[union-attr]
        if instruction_chars is not None:
            fresh = {key: skill.model_copy(update={"instructions": skill.instructions[:instruction_chars + 1]})
                     for key, skill in fresh.items()}
        with self._newest_lock:
            merged = {skill_id: fresh.get(skill_id) or kept[skill_id] for skill_id, _ in stamps
                      if skill_id in fresh or skill_id in kept}
            self._newest[(agent_id, instruction_chars)] = merged
        return [merged[skill_id] for skill_id, _ in stamps if skill_id in merged]

    def end_skills(self, now: datetime, limit: int = 500) -> list[Skill]:
        """Record as ``ended`` the enabled skills whose ``end_at`` has passed (the Maintenance round's)."""
        with self.session() as session:
            rows = session.exec(select(SkillRow).where(  # type: ignore[call-overload]
                SkillRow.enabled, SkillRow.schedule_id.is_not(None), SkillRow.end_at <= now).limit(limit)).all()
            for row in rows:
                row.enabled, row.disabled_reason, row.updated_at = False, ENDED, now
                session.add(row)
            session.commit()
            return [skill_model(row) for row in rows]

    def mark_notified(self, skill_id: int, at: datetime, digest: str | None = None) -> None:
        """A notice of the skill went out at ``at``; ``digest``: the result it delivered (kept for
        ``deliver: on_change``; None leaves the last one)."""
        with self.session() as session:
            row = session.get(SkillRow, skill_id)
            if row is not None:
                row.last_notified_at = at
                if digest is not None:
                    row.delivered_digest = digest
                session.add(row)
                session.commit()

    def cron_counts(self) -> dict[tuple[str, str], int]:
        """The enabled cron skills of every agent, counted by (cron, time zone): who shares a minute
        (``skills.when.spread.crowd``), asked at a new Agent-tier cron's registration. A cron with no zone
        counts in UTC. Read again only when the skills changed since the last answer (their number, the
        enabled among them, or the newest change): one small query otherwise, whatever their number."""
        enabled = SkillRow.enabled.is_(True)  # type: ignore[attr-defined]
        with self.session() as session:
            stamp = tuple(session.execute(select(func.count(), func.max(SkillRow.updated_at),
                                                 func.count().filter(enabled))).one())
            with self._newest_lock:
                if self._crons is not None and self._crons[0] == stamp:
                    return dict(self._crons[1])
            counts: dict[tuple[str, str], int] = {}
            # The JSON as text, counted before it is read: most crons share a few triggers, each read once.
            as_text = cast(SkillRow.trigger_config, String)  # type: ignore[arg-type]
            query = (select(as_text, func.count()).where(enabled, SkillRow.trigger_type == "cron")
                     .group_by(as_text))
            for text_, count in session.execute(query):
                try:
                    key = self._cron_keys[text_]
                except KeyError:
                    key = self._cron_keys[text_] = _cron_key(text_)
                if key is not None:
                    counts[key] = counts.get(key, 0) + count
        if len(self._cron_keys) > MAX_CRON_KEYS:
            self._cron_keys.clear()
        with self._newest_lock:
            self._crons = stamp, counts
        return dict(counts)

    def skill_names(self, agent_id: str) -> list[str]:
        """The names of an agent's skills, lowercased."""
        with self.session() as session:
            return [name.lower() for name in session.exec(select(SkillRow.name).where(SkillRow.agent_id == agent_id))]

    def set_skips_until(self, skill_id: int, until: datetime | None) -> None:
        """Record when the skip list just written into the skill's schedule runs out (None: it has none)."""
        with self.session() as session:
            session.execute(update(SkillRow).where(SkillRow.id == skill_id).values(skips_until=until))
            session.commit()

    def skips_running_out(self, before: datetime, limit: int) -> list[Skill]:
        """Enabled scheduled skills whose skip list runs out before ``before`` (or was never written), the
        soonest first, at most ``limit``: one indexed query, whatever the number of skills."""
        with self.session() as session:
            skips = (SkillRow.skip_holidays.is_not(None)) | (SkillRow.business_days_only.is_(True))  # type: ignore[union-attr, attr-defined]
            due = SkillRow.skips_until.is_(None) | (SkillRow.skips_until < before)  # type: ignore[union-attr, operator]
            query = (select(SkillRow).where(SkillRow.enabled.is_(True), SkillRow.schedule_id.is_not(None),  # type: ignore[attr-defined, union-attr]
                                            skips, due)
                     .order_by(SkillRow.skips_until.is_not(None), SkillRow.skips_until, SkillRow.id)  # type: ignore[union-attr]
                     .limit(limit))
            return [skill_model(row) for row in session.exec(query).all()]


MAX_CRON_KEYS = 100_000
"""Distinct triggers ``cron_counts`` keeps read (a few MB): past it, it forgets them all and reads again."""


def _cron_key(text: str | None) -> tuple[str, str] | None:
    """(cron, zone) of a stored ``trigger_config``'s JSON text, None when it is not a cron (no zone: UTC)."""
    trigger = json.loads(text) if text else None
    schedule = trigger.get("schedule") if isinstance(trigger, dict) else None
    return (schedule, trigger.get("timezone") or "UTC") if isinstance(schedule, str) else None
