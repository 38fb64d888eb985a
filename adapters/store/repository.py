"""The skill store: the tables (``adapters.store.tables``) behind a small synchronous API.

SQLite by default, PostgreSQL through the same code (only the URL changes). The
store is the source of truth for skills; schedules are derived from it. The
table models never leave the store: callers get the plain pydantic models of
``skills.models``.

Its methods are synchronous on purpose: SQLAlchemy blocks, so the worker's activities that call
them are synchronous too and run in its thread pool instead of stalling the event loop that serves
workflows and MCP sessions.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from sqlalchemy import delete, func, or_, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import aliased
from sqlmodel import Session, SQLModel, select

from adapters.store.database import open_database
from adapters.store.tables import (
    LAST_RUN_COLUMNS,
    ApprovalRow,
    GrantRow,
    IncidentRow,
    MessageRow,
    NoticeRow,
    RevisionRow,
    RunRow,
    SeenEventRow,
    SkillRow,
    StateRow,
    TrustRow,
)
from skills.agent import ChatMessage
from skills.approvals import PENDING, Approval, ApprovalRequest, ApprovalStatus
from skills.backoff import BackoffPolicy
from skills.budget import DAY, BudgetPolicy, Usage, over_budget
from skills.errors import SkillNotFoundError, SkillValidationError
from skills.grants import Grant, matches
from skills.incidents import Incident, IncidentEvent, IncidentNote, cause_of, reminder_due
from skills.messages import RunOutcome, SkillFilter
from skills.models import BUDGET, ENDED, FAILURES, FIRED, REHEARSAL, Delivery, RunRecord, Skill, SkillSpec
from skills.naming import schedule_id_for
from skills.notify import Delivers
from skills.recall import SELF, Remembered
from skills.reply import RUN_PREFIX_CHARS
from skills.revisions import (
    BY_CLIENT,
    BY_ENGINE,
    DEFAULT_MAX_REVISIONS,
    Revision,
    RevisionAction,
    by_of,
    diff_specs,
)

OPEN = ("running", "waiting")
"""The statuses of a run not recorded as ended yet."""


HOOKED_SKILLS_LIMIT = 16
"""Skills one hook path may name (a name shared by agents): the most :meth:`Store.hook_digests` returns."""


class ScheduledSkill(NamedTuple):
    """An enabled skill with a schedule, as the overdue reckoning reads it (``Store.scheduled_skills_with_last_fire``)."""

    id: int
    name: str
    schedule_id: str
    trigger_config: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime
    last_fire: datetime | None
    skip_holidays: str | None = None
    business_days_only: bool = False
    jitter_seconds: int = 0


class Store:
    """Skills and their runs, one short transaction per call."""

    def __init__(self, engine: Engine, schedule_prefix: str = "skills") -> None:
        self.engine = engine
        self.schedule_prefix = schedule_prefix
        """Schedule ids are ``<prefix>-<id>-<name>``; the worker gives its task queue."""
        self.max_revisions = DEFAULT_MAX_REVISIONS
        """Revisions kept a skill (the newest); each change drops the older ones. 0: all (the worker sets it)."""
        self._newest: dict[tuple[str, int | None], dict[int, Skill]] = {}
        """``newest_skills``' copies, by agent (and cut): each kept until its row's ``updated_at`` changes."""
        self._newest_lock = threading.Lock()

    @classmethod
    def open(cls, url: str, schedule_prefix: str = "skills") -> Store:
        """The store at ``url``: its database created if missing (PostgreSQL), its schema migrated
        to the newest revision. Raises :class:`StoreUnavailableError` (one line) when it cannot."""
        return cls(open_database(url), schedule_prefix)

    @contextmanager
    def session(self) -> Iterator[Session]:
        with Session(self.engine, expire_on_commit=False) as session:
            yield session

    # --- skills ---------------------------------------------------------------------------

    def create_skill(self, spec: SkillSpec, *, trigger_as_written: dict[str, Any] | None,
                     disabled_reason: str | None, now: datetime, by: str = BY_CLIENT,
                     action: RevisionAction = "created") -> Skill:
        row = SkillRow(created_at=now, updated_at=now, trigger_as_written=trigger_as_written,
                       disabled_reason=disabled_reason if not spec.enabled else None, **_spec_columns(spec))
        with self.session() as session:
            session.add(row)
            try:
                session.flush()
            except IntegrityError as e:
                session.rollback()
                raise _name_taken(spec) from e
            assert row.id is not None
            row.schedule_id = schedule_id_for(self.schedule_prefix, row.id, spec.name) if spec.is_scheduled else None
            self._revise(session, row, action, by, now, before=None)
            self._commit_unique(session, spec)
            return self._skill(session, row)

    def replace_skill(self, skill_id: int, spec: SkillSpec, *, trigger_as_written: dict[str, Any] | None,
                      disabled_reason: str | None, now: datetime, by: str = BY_CLIENT,
                      action: RevisionAction = "updated") -> Skill:
        with self.session() as session:
            row = self._row(session, skill_id, lock=True)
            before = _spec_json(row)
            for key, value in _spec_columns(spec).items():
                setattr(row, key, value)
            row.trigger_as_written = trigger_as_written
            row.disabled_reason = None if spec.enabled else disabled_reason
            row.schedule_id = (schedule_id_for(self.schedule_prefix, skill_id, spec.name)
                               if spec.is_scheduled else None)
            row.updated_at = now
            self._revise(session, row, action, by, now, before=before)
            session.add(row)
            self._commit_unique(session, spec)
            return self._skill(session, row)

    def restore_skill(self, skill: Skill) -> None:
        """Put back a skill exactly as it was (the undo of a registration whose schedule failed), and
        forget the revisions written since, in the same transaction."""
        with self.session() as session:
            row = session.get(SkillRow, skill.id) or SkillRow(id=skill.id)
            for key, value in _spec_columns(skill).items():
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
            row = self._row(session, skill_id, lock=True)
            ended = self._skill(session, row).ended(now) if enabled else None
            if ended is not None:
                raise SkillValidationError.single("enabled", f"its schedule has ended ({ended}): give a later "
                                                             "end_at or a larger max_runs first")
            if row.enabled != enabled:
                self._revise(session, row, "updated", by, now, before=_spec_json(row), after={"enabled": enabled})
            row.enabled = enabled
            row.disabled_reason = None if enabled else reason
            row.updated_at = now
            session.add(row)
            session.commit()
            return self._skill(session, row)

    def retire_skill(self, skill_id: int, reason: str) -> Skill:
        """Disable a skill whose schedule is done with (a one-shot), forgetting the schedule."""
        with self.session() as session:
            row = self._row(session, skill_id)
            row.enabled, row.disabled_reason, row.schedule_id = False, reason, None
            session.add(row)
            session.commit()
            return self._skill(session, row)

    def delete_skill(self, skill_id: int, *, by: str | None = BY_CLIENT, now: datetime | None = None) -> Skill:
        """Delete a skill and its runs and incidents; its revisions stay, the delete's last (by None: the
        undo of a creation, which forgets the skill's revisions too)."""
        with self.session() as session:
            row = self._row(session, skill_id, lock=True)
            skill = self._skill(session, row)
            if by is None:
                session.execute(delete(RevisionRow).where(RevisionRow.skill_id == skill_id))  # type: ignore[arg-type]
            else:
                self._revise(session, row, "deleted", by, now or datetime.now(UTC), before=None, spec=_spec_json(row))
            for run in session.exec(select(RunRow).where(RunRow.skill_id == skill_id)):
                session.delete(run)
            for incident in session.exec(select(IncidentRow).where(IncidentRow.skill_id == skill_id)):
                session.delete(incident)
            session.delete(row)
            session.commit()
            return skill

    def get_skill(self, skill_id: int) -> Skill:
        with self.session() as session:
            return self._skill(session, self._row(session, skill_id))

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
            return self._skill(session, rows[0])

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
            return [_skill_model(row) for row in session.exec(query).all()]

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
            fresh = {row.id: _skill_model(row) for row in session.exec(  # type: ignore[union-attr]
                select(SkillRow).where(SkillRow.id.in_(stale)))} if stale else {}  # type: ignore[union-attr]
        if instruction_chars is not None:
            fresh = {key: skill.model_copy(update={"instructions": skill.instructions[:instruction_chars + 1]})
                     for key, skill in fresh.items()}
        with self._newest_lock:
            merged = {skill_id: fresh.get(skill_id) or kept[skill_id] for skill_id, _ in stamps
                      if skill_id in fresh or skill_id in kept}
            self._newest[(agent_id, instruction_chars)] = merged
        return [merged[skill_id] for skill_id, _ in stamps if skill_id in merged]

    def event_subscribers(self, name: str) -> list[Skill]:
        """The event-type skills subscribed to the event ``name`` (exact match), enabled or not."""
        with self.session() as session:
            query = (select(SkillRow).where(SkillRow.trigger_type == "event")
                     .order_by(SkillRow.agent_id, SkillRow.name))
            return [_skill_model(row) for row in session.exec(query)
                    if (row.trigger_config or {}).get("event") == name]

    # --- hooks (POST /hooks/<skill>) -----------------------------------------------------

    def set_hook(self, skill_id: int, digest: str | None, now: datetime) -> Skill:
        """Set (replacing any earlier one) or, with None, remove the digest of a skill's hook token."""
        with self.session() as session:
            row = self._row(session, skill_id)
            row.hook_digest = digest
            row.updated_at = now
            session.add(row)
            session.commit()
            return self._skill(session, row)

    def hook_digests(self, ref: str) -> list[tuple[int, str]]:
        """The skills ``ref`` names (an id, or a name across agents, case-insensitive) that have a hook
        token, each as its id and its token's digest: the token decides among same-named skills of two
        agents. Only the two columns are read: the work is the same whether a skill matches or not."""
        with self.session() as session:
            query = select(SkillRow.id, SkillRow.hook_digest).where(  # type: ignore[call-overload]
                SkillRow.hook_digest.is_not(None))  # type: ignore[union-attr]
            if ref.isascii() and ref.isdigit() and len(ref) <= 18:
                query = query.where(SkillRow.id == int(ref))
            else:
                query = query.where(func.lower(SkillRow.name) == ref.strip().lower())
            return [(skill_id, digest or "") for skill_id, digest in session.exec(query.limit(HOOKED_SKILLS_LIMIT))]

    # --- events ---------------------------------------------------------------------------

    def claim_event(self, name: str, event_id: str, claimer: str, now: datetime,
                    window: timedelta) -> SeenEventRow | None:
        """Claim an event id for ``claimer``: None when it is now (or already was) the claimer's,
        else the earlier claim still within ``window``. Claims past the window are forgotten."""
        with self.session() as session:
            session.exec(delete(SeenEventRow).where(SeenEventRow.seen_at < now - window))  # type: ignore[call-overload,arg-type]
            # Insert or keep the claim already there: two emits of one id at the same instant (two
            # workers, two engines) both succeed here, and the row says whose it is.
            session.execute(_insert_or_ignore(self.engine, SeenEventRow(name=name, event_id=event_id, seen_at=now,
                                                                        claimer=claimer)))
            session.commit()
            row = session.get(SeenEventRow, (name, event_id))
            return row if row is not None and row.claimer != claimer else None

    def record_event(self, name: str, event_id: str, claimer: str, result: dict[str, Any]) -> None:
        """Keep what the claimer's emit did, for a duplicate's answer."""
        with self.session() as session:
            row = session.get(SeenEventRow, (name, event_id))
            if row is not None and row.claimer == claimer:
                row.result = result
                session.add(row)
                session.commit()

    # --- runs -----------------------------------------------------------------------------

    def start_run(self, run: RunRecord, gaps: list[RunRecord] = ()) -> RunRecord:  # type: ignore[assignment]
        """Insert a run (and the rows accounting for fires before it), or ignore it: idempotent on
        run ids, so a retried activity does not duplicate them, and one row per scheduled fire of
        a skill (the unique ``uq_runs_scheduled_fire``), so no other workflow run records it twice.
        Returns the stored row of that fire: another run id means the fire was someone else's."""
        with self.session() as session:
            scheduled = run.trigger == "schedule"
            existed = scheduled and session.get(RunRow, run.run_id) is not None
            for record in [*gaps, run]:
                session.execute(_insert_or_ignore(self.engine, RunRow(**record.model_dump(mode="python"))))
            if scheduled and not existed and session.get(RunRow, run.run_id) is not None:
                # A new fire of the schedule (a retried begin, or another run's fire, inserts nothing): what
                # max_runs counts. (Asked of the table: drivers do not all count ignored rows alike.)
                session.execute(update(SkillRow).where(SkillRow.id == run.skill_id)  # type: ignore[arg-type]
                                .values(scheduled_runs=SkillRow.scheduled_runs + 1))
            session.commit()
            row = session.get(RunRow, run.run_id)
            if row is None and run.trigger == "schedule" and run.scheduled_at is not None:
                row = session.exec(select(RunRow).where(RunRow.skill_id == run.skill_id, RunRow.trigger == "schedule",
                                                        RunRow.scheduled_at == run.scheduled_at)).one()
            assert row is not None
            return _run_model(row)

    def record_outcome(self, run: RunRecord, policy: BackoffPolicy, budget: BudgetPolicy | None = None,
                       *, if_running: bool = False,
                       settle: Callable[[Delivers | None, RunRecord], RunRecord] | None = None) -> RunOutcome | None:
        """Close a run and apply what it means to its skill, in one transaction: the failure
        count (a success resets it; the limit-th failure disables the skill) and, for the
        scheduled fire of a one-shot, its retirement. Then, for a run that used tokens, the
        budgets: a skill over its day's budget, everyone's, or far above its usual use pauses.

        ``if_running``: only a row still ``running`` is closed (None otherwise), so a closer from
        outside the run (Maintenance) never overwrites what the run recorded meanwhile. ``settle``: what
        the run is recorded as, given its skill as this transaction holds it (``skills.notify.settle``)."""
        with self.session() as session:
            # The skill's row is locked first (a write takes the row lock in PostgreSQL, the write
            # lock in SQLite): runs of one skill finishing at once on several workers count every
            # failure, and retire a one-shot's schedule once.
            session.execute(update(SkillRow).where(SkillRow.id == run.skill_id)  # type: ignore[arg-type]
                            .values(consecutive_failures=SkillRow.consecutive_failures))
            skill = session.get(SkillRow, run.skill_id)
            if settle is not None:
                run = settle(skill, run)
            row = session.get(RunRow, run.run_id)
            if if_running and (row is None or row.status not in OPEN):
                session.rollback()
                return None
            # A retried record (its first attempt committed, its answer lost) must not count twice. A record
            # that changes a closed run's status is no retry: a run recorded a success whose workflow then
            # failed in its own code is recorded again as an error, and that failure counts.
            repeated = (row is not None and row.status not in OPEN and row.finished_at is not None
                        and row.status == run.status)
            row = row or RunRow(run_id=run.run_id)
            for key, value in run.model_dump(mode="python").items():
                setattr(row, key, value)
            session.add(row)
            disabled = retired = None
            if skill is not None and not repeated:
                if run.status not in (*OPEN, "missed"):
                    skill.last_run_at = run.finished_at or run.started_at
                    skill.last_run_status, skill.last_run_summary = run.status, run.summary
                if run.status == "success":
                    skill.consecutive_failures = 0
                elif run.status == "error":
                    skill.consecutive_failures += 1
                    skill.last_failure_at = run.finished_at
                    skill.last_error = run.summary[:1000]
                    if skill.consecutive_failures >= policy.limit and skill.enabled:
                        skill.enabled, skill.disabled_reason, disabled = False, FAILURES, FAILURES
                if run.trigger == "schedule" and (skill.trigger_config or {}).get("at") is not None:
                    # A one-shot fires once, whatever came of it; the skill and its runs stay.
                    if skill.enabled:
                        skill.enabled, skill.disabled_reason = False, FIRED
                        disabled = disabled or FIRED
                    retired, skill.schedule_id = skill.schedule_id, None
                elif (run.trigger == "schedule" and skill.enabled and skill.max_runs is not None
                      and skill.scheduled_runs >= skill.max_runs):
                    # The last of its runs: the schedule (whose remaining actions ran out) is paused, saying why.
                    skill.enabled, skill.disabled_reason = False, ENDED
                    disabled = disabled or ENDED
                session.add(skill)
            incident = _incident(session, skill, run, disabled == FAILURES) if skill is not None and not repeated \
                else None
            session.commit()
            after = self._skill(session, skill) if skill else None
        outcome = RunOutcome(run=_run_model(row), skill=after, disabled=disabled, retired_schedule=retired,
                             retry_after=after.failures.retry_after(policy) if after else None, incident=incident)
        if budget is not None and after is not None and after.enabled and run.prompt_tokens + run.completion_tokens:
            reason = over_budget(self.usage(run, since=(run.finished_at or run.started_at) - DAY), budget)
            if reason is not None:
                paused = self.set_enabled(after.id, False, BUDGET, run.finished_at or run.started_at, by=BY_ENGINE)
                outcome = outcome.model_copy(update={"skill": paused, "disabled": BUDGET, "budget": reason})
        return outcome

    def list_incidents(self, skill_id: int | None = None, *, closed: bool = False, limit: int = 50) -> list[Incident]:
        """The open incidents (``closed``: the closed ones too), of one skill or of all, newest first."""
        with self.session() as session:
            query = select(IncidentRow)
            if skill_id is not None:
                query = query.where(IncidentRow.skill_id == skill_id)
            if not closed:
                query = query.where(IncidentRow.closed_at.is_(None))  # type: ignore[union-attr]
            rows = session.exec(query.order_by(IncidentRow.id.desc()).limit(limit)).all()  # type: ignore[union-attr]
            return [_incident_model(row) for row in rows]

    def end_skills(self, now: datetime, limit: int = 500) -> list[Skill]:
        """Record as ``ended`` the enabled skills whose ``end_at`` has passed (the Maintenance round's)."""
        with self.session() as session:
            rows = session.exec(select(SkillRow).where(  # type: ignore[call-overload]
                SkillRow.enabled, SkillRow.schedule_id.is_not(None), SkillRow.end_at <= now).limit(limit)).all()
            for row in rows:
                row.enabled, row.disabled_reason, row.updated_at = False, ENDED, now
                session.add(row)
            session.commit()
            return [self._skill(session, row) for row in rows]

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

    def record_rehearsal(self, run: RunRecord) -> RunRecord:
        """Close a rehearsal's run as it is: its skill, if stored, is not touched (no failure counted, no
        last run, nothing remembered)."""
        with self.session() as session:
            row = session.get(RunRow, run.run_id) or RunRow(run_id=run.run_id)
            for key, value in run.model_dump(mode="python").items():
                setattr(row, key, value)
            session.add(row)
            session.commit()
            return _run_model(row)

    def record_deliveries(self, run_id: str, deliveries: list[Delivery]) -> None:
        """What became of a run's result at each ``deliver_to`` destination, on its record (once: a retry
        writes the same)."""
        with self.session() as session:
            row = session.get(RunRow, run_id)
            if row is not None:
                row.deliveries = [d.model_dump(mode="json") for d in deliveries]
                session.add(row)
                session.commit()
    def skill_names(self, agent_id: str) -> list[str]:
        """The names of an agent's skills, lowercased."""
        with self.session() as session:
            return [name.lower() for name in session.exec(select(SkillRow.name).where(SkillRow.agent_id == agent_id))]

    def remembered(self, skill: Skill, names: list[str]) -> list[Remembered]:
        """Each named skill's last delivered result (``skills.recall``: its latest run that ended ``success``,
        not ``unchanged``), as stored; ``self`` is ``skill``, a name is one of its agent's skills."""
        found: list[Remembered] = []
        with self.session() as session:
            for name in names:
                if name == SELF:
                    skill_id: int | None = skill.id
                else:
                    skill_id = session.exec(select(SkillRow.id).where(
                        SkillRow.agent_id == skill.agent_id, func.lower(SkillRow.name) == name.lower())).first()
                if skill_id is None:
                    found.append(Remembered(name=name, missing=True))
                    continue
                run = session.exec(
                    select(RunRow).where(RunRow.skill_id == skill_id, RunRow.status == "success",
                                         RunRow.unchanged == False,  # noqa: E712
                                         RunRow.trigger != REHEARSAL)  # what it would have said is not what it said
                    .order_by(RunRow.started_at.desc()).limit(1)).first()  # type: ignore[union-attr]
                found.append(Remembered(name=name, text=run.summary, at=run.finished_at) if run is not None
                             else Remembered(name=name))
        return found

    def previous_scheduled_run(self, skill_id: int, before: datetime) -> RunRecord | None:
        """The newest run this skill's schedule started before ``before``."""
        with self.session() as session:
            query = (select(RunRow)
                     .where(RunRow.skill_id == skill_id, RunRow.trigger == "schedule",
                            RunRow.scheduled_at < before,  # type: ignore[operator]
                            RunRow.status.not_in(("missed",)))  # type: ignore[attr-defined]
                     .order_by(RunRow.scheduled_at.desc())  # type: ignore[union-attr]
                     .limit(1))
            row = session.exec(query).first()
            return _run_model(row) if row else None

    def has_scheduled_runs(self, skill_id: int) -> bool:
        with self.session() as session:
            query = select(RunRow.run_id).where(RunRow.skill_id == skill_id, RunRow.trigger == "schedule").limit(1)
            return session.exec(query).first() is not None

    def usage(self, run: RunRecord, since: datetime) -> Usage:
        """Tokens of this run, of its skill and of every skill since ``since``, and the skill's
        recent runs (this one included in the sums, excluded from ``recent``)."""
        tokens = RunRow.prompt_tokens + RunRow.completion_tokens
        with self.session() as session:
            day = select(func.coalesce(func.sum(tokens), 0)).where(RunRow.started_at >= since)  # type: ignore[operator]
            skill_day = day.where(RunRow.skill_id == run.skill_id)
            recent = (select(tokens).where(RunRow.skill_id == run.skill_id, RunRow.run_id != run.run_id,
                                           RunRow.tier == "agent", tokens > 0)
                      .order_by(RunRow.started_at.desc()).limit(10))  # type: ignore[union-attr]
            return Usage(run=run.prompt_tokens + run.completion_tokens, skill_day=session.exec(skill_day).one(),
                         day=session.exec(day).one(), recent=list(session.exec(recent)))

    def tokens_since(self, since: datetime, skill_id: int | None = None) -> int:
        """Tokens of the runs started since ``since``: all skills', or one's."""
        with self.session() as session:
            query = select(func.coalesce(func.sum(RunRow.prompt_tokens + RunRow.completion_tokens), 0))
            query = query.where(RunRow.started_at >= since)  # type: ignore[operator]
            if skill_id is not None:
                query = query.where(RunRow.skill_id == skill_id)
            return session.exec(query).one()

    def recent_run_tokens(self, skill_id: int, limit: int = 10) -> list[int]:
        """The tokens of a skill's latest Agent-tier runs that used any, newest first."""
        tokens = RunRow.prompt_tokens + RunRow.completion_tokens
        with self.session() as session:
            return list(session.exec(select(tokens).where(RunRow.skill_id == skill_id, RunRow.tier == "agent",
                                                          tokens > 0)
                                     .order_by(RunRow.started_at.desc()).limit(limit)))  # type: ignore[union-attr]

    # --- conversations --------------------------------------------------------------------

    def append_messages(self, conversation_id: str, messages: list[ChatMessage], now: datetime) -> int:
        """Append messages in order; return the sequence number of the last one."""
        with self.session() as session:
            last = session.exec(select(func.max(MessageRow.seq))
                                .where(MessageRow.conversation_id == conversation_id)).one()
            seq = last or 0
            for message in messages:
                seq += 1
                session.add(MessageRow(conversation_id=conversation_id, seq=seq, created_at=now,
                                       **message.model_dump(mode="json")))
            session.commit()
            return seq

    def load_messages(self, conversation_id: str) -> list[ChatMessage]:
        with self.session() as session:
            rows = session.exec(select(MessageRow).where(MessageRow.conversation_id == conversation_id)
                                .order_by(MessageRow.seq))  # type: ignore[arg-type]
            return [ChatMessage.model_validate(row.model_dump(include=_MESSAGE_FIELDS)) for row in rows]

    def get_message(self, conversation_id: str, seq: int) -> ChatMessage | None:
        with self.session() as session:
            row = session.exec(select(MessageRow).where(MessageRow.conversation_id == conversation_id,
                                                        MessageRow.seq == seq)).first()
            return ChatMessage.model_validate(row.model_dump(include=_MESSAGE_FIELDS)) if row else None

    def has_tool_result(self, conversation_id: str, tool_call_id: str) -> bool:
        """Whether a tool call was already answered (a retried activity must not answer twice)."""
        with self.session() as session:
            query = select(MessageRow.id).where(MessageRow.conversation_id == conversation_id,
                                                MessageRow.tool_call_id == tool_call_id)
            return session.exec(query).first() is not None

    # --- engine state ---------------------------------------------------------------------

    def get_state(self, key: str) -> dict[str, Any] | None:
        with self.session() as session:
            row = session.get(StateRow, key)
            return dict(row.value) if row else None

    def set_state(self, key: str, value: dict[str, Any], now: datetime) -> None:
        with self.session() as session:
            row = session.get(StateRow, key) or StateRow(key=key, updated_at=now)
            row.value, row.updated_at = value, now
            session.add(row)
            session.commit()

    # --- business days and holidays: how far each schedule's skip list reaches ---------------

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
            return [_skill_model(row) for row in session.exec(query).all()]

    def running_runs(self, started_before: datetime, limit: int = 500,
                     statuses: tuple[str, ...] = OPEN) -> list[RunRecord]:
        """Runs still open (``running``, or ``waiting`` for an approval; or only those of ``statuses``)
        that started before ``started_before``, oldest first."""
        with self.session() as session:
            query = (select(RunRow).where(RunRow.status.in_(statuses),  # type: ignore[attr-defined]
                                          RunRow.started_at < started_before)  # type: ignore[operator]
                     .order_by(RunRow.started_at).limit(limit))  # type: ignore[arg-type]
            return [_run_model(r) for r in session.exec(query)]

    # --- retention of the run history ------------------------------------------------------

    def prune_old_runs(self, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` closed runs that started before ``before``, oldest first, with their
        Agent conversations; returns how many. Each skill's newest scheduled fire that ran (and the notes
        after it) is kept, however old: ``begin_run`` reckons the fires missed since it."""
        return self._delete_runs(old_runs(before, limit))

    def prune_skill_runs(self, skill_id: int, keep: int, limit: int) -> int:
        """Delete up to ``limit`` closed runs of a skill beyond its newest ``keep`` (by start), with their
        Agent conversations; returns how many. Its newest scheduled fire that ran is kept, as above."""
        return self._delete_runs(runs_beyond(skill_id, keep, limit))

    def skill_ids_after(self, after: int, limit: int) -> list[int]:
        """The next ``limit`` skill ids above ``after``, in order: a bounded slice of a walk over every skill."""
        with self.session() as session:
            query = select(SkillRow.id).where(SkillRow.id > after).order_by(SkillRow.id).limit(limit)  # type: ignore[operator,arg-type]
            return [i for i in session.exec(query) if i is not None]

    def oldest_run(self, skill_id: int | None = None) -> datetime | None:
        """When the oldest run kept (of a skill, or of all) started: how far back the history goes."""
        with self.session() as session:
            query = select(func.min(RunRow.started_at))
            if skill_id is not None:
                query = query.where(RunRow.skill_id == skill_id)
            return session.exec(query).one()

    def scheduled_skills_with_last_fire(self) -> list[ScheduledSkill]:
        """Every enabled skill with a schedule, and the scheduled time of its newest recorded fire (run,
        skip or missed): one statement, each newest fire read from the index of fires (uq_runs_scheduled_fire).
        Only the columns the overdue reckoning reads: 10,000 whole skills would cost seconds to load."""
        with self.session() as session:
            return [ScheduledSkill(*row) for row in session.exec(scheduled_with_last_fire())]

    def _delete_runs(self, candidates: Any) -> int:
        with self.session() as session:
            ids = list(session.exec(candidates))
            if ids:
                session.exec(delete(MessageRow).where(MessageRow.conversation_id.in_(ids)))  # type: ignore[call-overload,attr-defined]
                session.exec(delete(NoticeRow).where(NoticeRow.run_id.in_(ids)))  # type: ignore[call-overload,attr-defined]
                session.exec(delete(RunRow).where(RunRow.run_id.in_(ids)))  # type: ignore[call-overload,attr-defined]
                session.commit()
            return len(ids)

    # --- trust in file skills' executable parts -------------------------------------------

    def trusted(self, names: list[str]) -> dict[str, tuple[str, datetime]]:
        """The digest the owner trusted, and when, of each of ``names`` that has a record."""
        if not names:
            return {}
        with self.session() as session:
            rows = session.exec(select(TrustRow).where(TrustRow.name.in_(names)))  # type: ignore[attr-defined]
            return {row.name: (row.digest, row.trusted_at) for row in rows}

    def set_trust(self, name: str, digest: str, covers: list[str], now: datetime) -> None:
        with self.session() as session:
            row = session.get(TrustRow, name) or TrustRow(name=name, digest=digest, trusted_at=now)
            row.digest, row.covers, row.trusted_at = digest, covers, now
            session.add(row)
            session.commit()

    def remove_trust(self, name: str) -> bool:
        """Forget the owner's trust in ``name``; False if there was none."""
        with self.session() as session:
            row = session.get(TrustRow, name)
            if row is None:
                return False
            session.delete(row)
            session.commit()
            return True

    # --- approvals -------------------------------------------------------------------------

    def add_approval(self, request: ApprovalRequest) -> Approval:
        """Record what waits for the owner's answer; a request already recorded under its
        ``request_key`` (a retried step) is kept as it is and returned."""
        with self.session() as session:
            session.execute(_insert_or_ignore(self.engine, ApprovalRow(**request.model_dump())))
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

    # --- standing grants -----------------------------------------------------------------

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

    def set_run_waiting(self, run_id: str, waiting: bool) -> None:
        """Show an open run as ``waiting`` for an approval, or ``running`` again; a closed run is left alone."""
        before, after = ("running", "waiting") if waiting else ("waiting", "running")
        with self.session() as session:
            session.execute(update(RunRow).where(RunRow.run_id == run_id, RunRow.status == before)  # type: ignore[arg-type]
                            .values(status=after))
            session.commit()

    def record_approval_outcome(self, approval_id: int, outcome: str) -> None:
        """What came of an answered approval (the call's result, the change's answer)."""
        with self.session() as session:
            session.execute(update(ApprovalRow).where(ApprovalRow.id == approval_id)  # type: ignore[arg-type]
                            .values(outcome=outcome))
            session.commit()

    def list_runs(self, skill_id: int | None = None, limit: int = 20) -> list[RunRecord]:
        """Newest first, by the time each run stands for: its scheduled time, else its start."""
        with self.session() as session:
            when = func.coalesce(RunRow.scheduled_at, RunRow.started_at)
            query = select(RunRow).order_by(when.desc(), RunRow.started_at.desc()).limit(limit)  # type: ignore[union-attr]
            if skill_id is not None:
                query = query.where(RunRow.skill_id == skill_id)
            return [_run_model(r) for r in session.exec(query)]

    def find_runs(self, ref: str, limit: int = 2) -> list[RunRecord]:
        """The run whose id is ``ref``; else the runs whose id begins with it (at most ``limit``: more than
        one is ambiguous). A prefix shorter than ``RUN_PREFIX_CHARS`` matches only exactly."""
        with self.session() as session:
            row = session.get(RunRow, ref)
            if row is not None:
                return [_run_model(row)]
            if len(ref) < RUN_PREFIX_CHARS:
                return []
            pattern = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            query = (select(RunRow).where(RunRow.run_id.like(pattern, escape="\\"))  # type: ignore[attr-defined]
                     .order_by(RunRow.started_at.desc()).limit(limit))  # type: ignore[attr-defined]
            return [_run_model(r) for r in session.exec(query)]

    # --- notices a chat delivered, for replies to them -------------------------------------

    def record_notice(self, chat_id: str, message_ids: list[int], run_id: str, now: datetime) -> None:
        """Remember that these messages of ``chat_id`` told of ``run_id`` (again: unchanged)."""
        with self.session() as session:
            for message_id in message_ids:
                if session.get(NoticeRow, (chat_id, message_id)) is None:
                    session.add(NoticeRow(chat_id=chat_id, message_id=message_id, run_id=run_id, sent_at=now))
            try:
                session.commit()
            except IntegrityError:  # another worker recorded it first: the same fact
                session.rollback()

    def notice_run(self, chat_id: str, message_id: int) -> str | None:
        """The run a delivered notice told of, or None (not a notice, or its run was pruned)."""
        with self.session() as session:
            row = session.get(NoticeRow, (chat_id, message_id))
            return row.run_id if row is not None else None

    # --- revisions (skills.revisions) -----------------------------------------------------

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

    def _revise(self, session: Session, row: SkillRow, action: RevisionAction, by: str, now: datetime, *,
                before: dict[str, Any] | None, after: dict[str, Any] | None = None,
                spec: dict[str, Any] | None = None) -> None:
        """Record a change of ``row`` in its transaction: the spec after it (the row's, with ``after`` over it:
        a change not yet set on the row; ``spec``: the one kept instead, a delete's), and what changed since
        ``before``. Revisions past the newest ``max_revisions`` go."""
        assert row.id is not None
        kept = spec if spec is not None else {**_spec_json(row), **(after or {})}
        # A creation's spec is all there is to say, a delete's too: only an update lists what changed.
        changes = diff_specs(before, kept) if before is not None and spec is None else []
        row.revision = (row.revision or 0) + 1
        session.add(RevisionRow(skill_id=row.id, skill_name=row.name, agent_id=row.agent_id, rev=row.revision,
                                at=now, by=by_of(by), action=action, spec=kept,
                                diff=[c.model_dump(mode="json") for c in changes]))
        if self.max_revisions:
            with session.no_autoflush:  # a taken name is the commit's to tell (_commit_unique), not this delete's
                session.execute(delete(RevisionRow).where(
                    RevisionRow.skill_id == row.id,  # type: ignore[arg-type]
                    RevisionRow.rev <= row.revision - self.max_revisions))  # type: ignore[arg-type]

    # --- helpers --------------------------------------------------------------------------

    @staticmethod
    def _row(session: Session, skill_id: int, *, lock: bool = False) -> SkillRow:
        """``lock``: for a change that writes a revision, so two changes at once number theirs one after the
        other (PostgreSQL: SELECT ... FOR UPDATE; SQLite writes one transaction at a time anyway)."""
        row = session.get(SkillRow, skill_id, with_for_update=lock)
        if row is None:
            raise SkillNotFoundError(f"no skill with id {skill_id}")
        return row

    @staticmethod
    def _commit_unique(session: Session, spec: SkillSpec) -> None:
        try:
            session.commit()
        except IntegrityError as e:
            session.rollback()
            raise _name_taken(spec) from e

    @staticmethod
    def _skill(session: Session, row: SkillRow) -> Skill:
        return _skill_model(row)


_MESSAGE_FIELDS = set(ChatMessage.model_fields)


def old_runs(before: datetime, limit: int) -> Any:
    """The closed runs started before ``before`` that the retention may delete, oldest first (ix_runs_started_at)."""
    return (select(RunRow.run_id).where(RunRow.started_at < before, RunRow.status != "running",  # type: ignore[operator]
                                        _deletable())
            .order_by(RunRow.started_at).limit(limit))  # type: ignore[arg-type]


def runs_beyond(skill_id: int, keep: int, limit: int) -> Any:
    """A skill's closed runs past its newest ``keep`` that the retention may delete (ix_runs_skill_started).
    The cap counts the kept fire among the newest; when it is not among them, it stays all the same."""
    beyond = (select(RunRow.run_id).where(RunRow.skill_id == skill_id, RunRow.status != "running")
              .order_by(RunRow.started_at.desc()).offset(keep).limit(limit))  # type: ignore[union-attr]
    return select(RunRow.run_id).where(RunRow.run_id.in_(beyond), _deletable())  # type: ignore[attr-defined]


def scheduled_with_last_fire() -> Any:
    """Every enabled skill with a schedule, and its newest recorded fire's time (uq_runs_scheduled_fire)."""
    fired = aliased(RunRow)
    last = (select(func.max(fired.scheduled_at))
            .where(fired.skill_id == SkillRow.id, fired.trigger == "schedule").scalar_subquery())
    return (select(SkillRow.id, SkillRow.name, SkillRow.schedule_id, SkillRow.trigger_config,  # type: ignore[call-overload]
                   SkillRow.created_at, SkillRow.updated_at, last, SkillRow.skip_holidays,
                   SkillRow.business_days_only, SkillRow.jitter_seconds)
            .where(SkillRow.enabled == True, SkillRow.schedule_id != None)  # noqa: E711,E712
            .order_by(SkillRow.id))


def _deletable() -> Any:
    """Not the skill's newest scheduled fire that ran, nor a note after it: ``previous_scheduled_run`` must
    still find it, or the next fire would account for every fire since the skill's last change again.
    A later fire that ran is found in the index of fires (uq_runs_scheduled_fire), usually its first entry."""
    later = aliased(RunRow)
    ran_later = (select(later.run_id)
                 .where(later.skill_id == RunRow.skill_id, later.trigger == "schedule",
                        later.scheduled_at > RunRow.scheduled_at, later.status != "missed")  # type: ignore[operator]
                 .exists())
    return or_(RunRow.trigger != "schedule", ran_later)


def _insert_or_ignore(engine: Engine, row: SQLModel) -> Any:
    """INSERT ... ON CONFLICT DO NOTHING: a row already stored under any of its unique keys is kept.
    A key the database numbers (an id still None) is left to it."""
    if engine.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    values = {k: v for k, v in row.model_dump().items() if not (k == "id" and v is None)}
    return insert(type(row)).values(**values).on_conflict_do_nothing()


def _name_taken(spec: SkillSpec) -> SkillValidationError:
    return SkillValidationError.single("name", f"agent '{spec.agent_id}' already has a skill named '{spec.name}'")


def _spec_columns(spec: SkillSpec) -> dict[str, Any]:
    data = SkillSpec.model_validate(spec, from_attributes=True).model_dump(mode="json")
    data["end_at"] = spec.end_at  # a datetime column, not JSON
    return {key: data[key] for key in SkillSpec.model_fields}


def _spec_json(row: SkillRow | SkillSpec) -> dict[str, Any]:
    """A skill's spec as JSON (what a revision keeps and compares)."""
    return SkillSpec.model_validate(row, from_attributes=True).model_dump(mode="json")


def _skill_model(row: SkillRow) -> Skill:
    return Skill.model_validate({**row.model_dump(exclude={"hook_digest"}), "has_hook": row.hook_digest is not None})


def _approval_model(row: ApprovalRow) -> Approval:
    return Approval.model_validate(row.model_dump())


def _run_model(row: RunRow) -> RunRecord:
    return RunRecord.model_validate(row.model_dump())


def _incident(session: Session, skill: SkillRow, run: RunRecord, disabled: bool) -> IncidentNote | None:
    """What a closed run does to its skill's incident (``skills.incidents``), in the run's transaction: a
    failure opens one or joins the open one of its cause (another cause closes it and opens its own),
    the failure that disables the skill closes it, a success closes it as recovered. A repeat is told again
    (``reminded``) when the skill's ``remind_after_minutes`` have passed since the incident was last told."""
    at = run.finished_at or run.started_at
    row = session.exec(select(IncidentRow).where(IncidentRow.skill_id == skill.id,
                                                 IncidentRow.closed_at.is_(None))  # type: ignore[union-attr]
                       .order_by(IncidentRow.id.desc())).first()  # type: ignore[union-attr]
    event: IncidentEvent
    if run.status == "success":
        if row is None:
            return None
        row.closed_at, row.closed_by, event = at, "recovered", "recovered"
    elif run.status == "error":
        cause = cause_of(run.summary)
        if row is not None and row.cause == cause:
            row.failures += 1
            row.last_failure_at, row.last_error, event = at, run.summary[:1000], "repeated"
            if reminder_due(skill.remind_after_minutes, row.last_notified_at or row.opened_at, at):
                row.last_notified_at, event = at, "reminded"
        else:
            if row is not None:
                row.closed_at, row.closed_by = at, "cause changed"
                session.add(row)
            row = IncidentRow(skill_id=skill.id, skill_name=skill.name, cause=cause, first_error=run.summary[:1000],
                              last_error=run.summary[:1000], opened_at=at, last_failure_at=at, failures=1,
                              last_notified_at=at)
            event = "opened"
        if disabled:
            row.closed_at, row.closed_by, event = at, "disabled", "disabled"
    else:
        return None  # a skip, a denial: the incident neither grows nor ends
    session.add(row)
    session.flush()
    return IncidentNote(event=event, incident=_incident_model(row))


def _incident_model(row: IncidentRow) -> Incident:
    return Incident.model_validate(row.model_dump())
