"""Whether the engine falls behind: skills overdue (a scheduled fire with no run or recorded skip past
``overdue_after``), and the LLM endpoint's state, as gauges. The maintenance round sets them each round;
``skills doctor`` asks for the same list.

Bounded for 10,000 skills: one statement reads every scheduled skill's trigger with its newest recorded
fire (an index lookup each); a skill that fired within the threshold cannot be overdue, and the next fire
of the others is remembered between rounds, so a round computes next fires only for skills whose newest
fire is older than the threshold and changed since the last round.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from temporalio import activity

from activities.agent import ENDPOINT_STATE
from adapters.metrics import EngineMetrics
from adapters.store import Store
from config.settings import Settings
from skills.messages.maintenance import OverdueQuery, OverdueSkill, OverdueSkills, SkillBrief
from skills.naming import FIND_OVERDUE_SKILLS
from skills.spec.models import TriggerConfig
from skills.when.calendar import fire_times
from skills.when.spread import spread_seconds

if TYPE_CHECKING:
    from adapters.store.runs import ScheduledSkill


class WatchActivities:
    def __init__(self, store: Store, settings: Settings, metrics: EngineMetrics | None = None,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.store = store
        self.clock = clock
        """Where "now" comes from: the wall clock in the worker, a fixed time in tests."""
        self.settings = settings
        self.metrics = metrics or EngineMetrics()
        self._due: dict[tuple[int, datetime, datetime], datetime | None] = {}
        """Each skill's next fire after its newest recorded one, from the last round: a cron's next time
        costs milliseconds, and most skills did not fire between two rounds."""

    @activity.defn(name=FIND_OVERDUE_SKILLS)
    def find_overdue_skills(self, query: OverdueQuery) -> OverdueSkills:
        """The skills overdue now, the longest overdue first; sets ``skills_overdue`` and, when an LLM is
        configured, ``skills_llm_endpoint_up`` (from the state the endpoint check keeps)."""
        now = self.clock()
        threshold = self.settings.overdue_after
        holding = {run.skill_id for run in self.store.runs.running_runs(started_before=now) if run.trigger == "schedule"}
        found: list[OverdueSkill] = []
        due_after: dict[tuple[int, datetime, datetime], datetime | None] = {}
        for skill in self.store.runs.scheduled_skills_with_last_fire():
            # Times before the skill's last change (a new trigger, a resume) were not fires of this schedule.
            since = max(skill.last_fire, skill.updated_at) if skill.last_fire else skill.updated_at
            if since + threshold > now or skill.id in holding or skill.trigger_config is None:
                # Its next fire, after `since`, cannot be late enough yet; or its fires are skipped behind a
                # run still going (that skill is stuck: skills_stuck).
                continue
            key = (skill.id, since, skill.created_at)
            if key in self._due:
                due = self._due[key]
            else:
                due = _next_fire(skill, since)
            due_after[key] = due
            # A spread fire may come up to its spread after its time, and still be on time.
            spread = spread_seconds(TriggerConfig.model_validate(skill.trigger_config), skill.jitter_seconds,
                                    skill.spread)
            if due is not None and due + threshold + timedelta(seconds=spread) <= now:
                found.append(OverdueSkill(skill=SkillBrief(id=skill.id, name=skill.name, schedule_id=skill.schedule_id),
                                          due_at=due, last_fire=skill.last_fire))
        self._due = due_after  # the next round computes only the skills that fired or changed since
        found.sort(key=lambda o: o.due_at)
        self.metrics.overdue_skills(len(found), now.timestamp())
        if self.settings.llm_configured:
            state = self.store.conversations.get_state(ENDPOINT_STATE)
            if state is not None:
                self.metrics.llm_endpoint(bool(state.get("up")))
        return OverdueSkills(count=len(found), skills=found[:query.limit], threshold_seconds=threshold.total_seconds())


def _next_fire(skill: ScheduledSkill, since: datetime) -> datetime | None:
    """The skill's next fire after ``since`` that its schedule does not skip (business days, holidays):
    a fire on a skipped day never comes, so it is never overdue."""
    trigger = TriggerConfig.model_validate(skill.trigger_config)
    fires = fire_times(trigger, anchor=skill.created_at, now=since, skip_holidays=skill.skip_holidays,
                       business_days_only=skill.business_days_only)
    return next((at for at, reason in fires if reason is None), None)
