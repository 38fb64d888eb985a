"""Runs and what they do to their skills: a closed run's failure count, retirement, budget and
incident (``skills.run.incidents``), in the run's transaction; and the retention of the run history.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import delete, func, or_, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import aliased
from sqlmodel import Session, select

from adapters.store.base import Repository, insert_or_ignore, run_model, skill_model
from adapters.store.skills import SkillRepository
from adapters.store.tables import IncidentRow, MessageRow, NoticeRow, RunRow, SkillRow
from skills.chat.reply import RUN_PREFIX_CHARS
from skills.messages.run import RunOutcome
from skills.run.backoff import BackoffPolicy
from skills.run.budget import DAY, BudgetPolicy, Usage, over_budget
from skills.run.closing import OPEN, Tally, closed
from skills.run.incidents import Incident, IncidentEvent, IncidentNote, cause_of, reminder_due
from skills.run.notify import Delivers
from skills.run.recall import SELF, Remembered
from skills.spec.models import BUDGET, FAILURES, REHEARSAL, Delivery, RunRecord, Skill
from skills.spec.revisions import BY_ENGINE

TALLY_FIELDS = tuple(field.name for field in fields(Tally))
"""The columns of a skill's row the closing rule reads and writes (``skills.run.closing``)."""


class ScheduledSkill(NamedTuple):
    """An enabled skill with a schedule, as the overdue reckoning reads it (``RunRepository.scheduled_skills_with_last_fire``)."""

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
    spread: bool = False


class RunRepository(Repository):
    """Runs, their incidents, and what the engine reads back from them."""

    def __init__(self, engine: Engine, skills: SkillRepository) -> None:
        super().__init__(engine)
        self.skills = skills
        """What pauses a skill a run put over its budget."""

    def start_run(self, run: RunRecord, gaps: list[RunRecord] = ()) -> RunRecord:  # type: ignore[assignment]
        """Insert a run (and the rows accounting for fires before it), or ignore it: idempotent on
        run ids, so a retried activity does not duplicate them, and one row per scheduled fire of
        a skill (the unique ``uq_runs_scheduled_fire``), so no other workflow run records it twice.
        Returns the stored row of that fire: another run id means the fire was someone else's."""
        with self.session() as session:
            scheduled = run.trigger == "schedule"
            existed = scheduled and session.get(RunRow, run.run_id) is not None
            for record in [*gaps, run]:
                session.execute(insert_or_ignore(self.engine, RunRow(**record.model_dump(mode="python"))))
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
            return run_model(row)

    def record_outcome(self, run: RunRecord, policy: BackoffPolicy, budget: BudgetPolicy | None = None,
                       *, if_running: bool = False,
                       settle: Callable[[Delivers | None, RunRecord], RunRecord] | None = None) -> RunOutcome | None:
        """Close a run and apply what it means to its skill, in one transaction: the failure
        count (a success resets it; the limit-th failure disables the skill) and, for the
        scheduled fire of a one-shot, its retirement. Then, for a run that used tokens, the
        budgets: a skill over its day's budget, everyone's, or far above its usual use pauses.

        ``if_running``: only a row still ``running`` is closed (None otherwise), so a closer from
        outside the run (Maintenance) never overwrites what the run recorded meanwhile. ``settle``: what
        the run is recorded as, given its skill as this transaction holds it (``skills.run.notify.settle``)."""
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
                after_run = closed(Tally(**{name: getattr(skill, name) for name in TALLY_FIELDS}), run, policy)
                for name in TALLY_FIELDS:
                    setattr(skill, name, getattr(after_run.tally, name))
                disabled, retired = after_run.disabled, after_run.retired_schedule
                session.add(skill)
            incident = _incident(session, skill, run, disabled == FAILURES) if skill is not None and not repeated \
                else None
            session.commit()
            after = skill_model(skill) if skill else None
        outcome = RunOutcome(run=run_model(row), skill=after, disabled=disabled, retired_schedule=retired,
                             retry_after=after.failures.retry_after(policy) if after else None, incident=incident)
        if budget is not None and after is not None and after.enabled and run.prompt_tokens + run.completion_tokens:
            reason = over_budget(self.usage(run, since=(run.finished_at or run.started_at) - DAY), budget)
            if reason is not None:
                paused = self.skills.set_enabled(after.id, False, BUDGET, run.finished_at or run.started_at, by=BY_ENGINE)
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

    def record_rehearsal(self, run: RunRecord) -> RunRecord:
        """Close a rehearsal's run as it is: its skill, if stored, is not touched (no failure counted, no
        last run, nothing remembered)."""
        with self.session() as session:
            row = session.get(RunRow, run.run_id) or RunRow(run_id=run.run_id)
            for key, value in run.model_dump(mode="python").items():
                setattr(row, key, value)
            session.add(row)
            session.commit()
            return run_model(row)

    def record_deliveries(self, run_id: str, deliveries: list[Delivery]) -> None:
        """What became of a run's result at each ``deliver_to`` destination, on its record (once: a retry
        writes the same)."""
        with self.session() as session:
            row = session.get(RunRow, run_id)
            if row is not None:
                row.deliveries = [d.model_dump(mode="json") for d in deliveries]
                session.add(row)
                session.commit()

    def remembered(self, skill: Skill, names: list[str]) -> list[Remembered]:
        """Each named skill's last delivered result (``skills.run.recall``: its latest run that ended ``success``,
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
            return run_model(row) if row else None

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

    def running_runs(self, started_before: datetime, limit: int = 500,
                     statuses: tuple[str, ...] = OPEN) -> list[RunRecord]:
        """Runs still open (``running``, or ``waiting`` for an approval; or only those of ``statuses``)
        that started before ``started_before``, oldest first."""
        with self.session() as session:
            query = (select(RunRow).where(RunRow.status.in_(statuses),  # type: ignore[attr-defined]
                                          RunRow.started_at < started_before)  # type: ignore[operator]
                     .order_by(RunRow.started_at).limit(limit))  # type: ignore[arg-type]
            return [run_model(r) for r in session.exec(query)]

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

    def set_run_waiting(self, run_id: str, waiting: bool) -> None:
        """Show an open run as ``waiting`` for an approval, or ``running`` again; a closed run is left alone."""
        before, after = ("running", "waiting") if waiting else ("waiting", "running")
        with self.session() as session:
            session.execute(update(RunRow).where(RunRow.run_id == run_id, RunRow.status == before)  # type: ignore[arg-type]
                            .values(status=after))
            session.commit()

    def list_runs(self, skill_id: int | None = None, limit: int = 20) -> list[RunRecord]:
        """Newest first, by the time each run stands for: its scheduled time, else its start."""
        with self.session() as session:
            when = func.coalesce(RunRow.scheduled_at, RunRow.started_at)
            query = select(RunRow).order_by(when.desc(), RunRow.started_at.desc()).limit(limit)  # type: ignore[union-attr]
            if skill_id is not None:
                query = query.where(RunRow.skill_id == skill_id)
            return [run_model(r) for r in session.exec(query)]

    def find_runs(self, ref: str, limit: int = 2) -> list[RunRecord]:
        """The run whose id is ``ref``; else the runs whose id begins with it (at most ``limit``: more than
        one is ambiguous). A prefix shorter than ``RUN_PREFIX_CHARS`` matches only exactly."""
        with self.session() as session:
            row = session.get(RunRow, ref)
            if row is not None:
                return [run_model(row)]
            if len(ref) < RUN_PREFIX_CHARS:
                return []
            pattern = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            query = (select(RunRow).where(RunRow.run_id.like(pattern, escape="\\"))  # type: ignore[attr-defined]
                     .order_by(RunRow.started_at.desc()).limit(limit))  # type: ignore[attr-defined]
            return [run_model(r) for r in session.exec(query)]


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
                   SkillRow.business_days_only, SkillRow.jitter_seconds, SkillRow.spread)
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


def _incident(session: Session, skill: SkillRow, run: RunRecord, disabled: bool) -> IncidentNote | None:
    """What a closed run does to its skill's incident (``skills.run.incidents``), in the run's transaction: a
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
