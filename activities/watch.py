"""Whether the engine falls behind: skills overdue (a scheduled fire with no run or recorded skip past
``overdue_after``), and the LLM endpoint's state, as gauges. The maintenance round sets them each round;
``skills doctor`` asks for the same list.

Bounded for 10,000 skills: one statement reads every scheduled skill with its newest recorded fire (an
index lookup each), then one next-fire computation a skill, in memory.
"""

from __future__ import annotations

from datetime import UTC, datetime

from temporalio import activity

from activities.agent import ENDPOINT_STATE
from activities.metrics import EngineMetrics
from activities.store import Store
from config.settings import Settings
from skills.messages import OverdueQuery, OverdueSkill, OverdueSkills, SkillBrief
from skills.triggers import trigger_next_times


class WatchActivities:
    def __init__(self, store: Store, settings: Settings, metrics: EngineMetrics | None = None) -> None:
        self.store = store
        self.settings = settings
        self.metrics = metrics or EngineMetrics()

    @activity.defn(name="find_overdue_skills")
    def find_overdue(self, query: OverdueQuery) -> OverdueSkills:
        """The skills overdue now, the longest overdue first; sets ``skills_overdue`` and, when an LLM is
        configured, ``skills_llm_endpoint_up`` (from the state the endpoint check keeps)."""
        now = datetime.now(UTC)
        threshold = self.settings.overdue_after
        holding = {run.skill_id for run in self.store.running_runs(started_before=now) if run.trigger == "schedule"}
        found: list[OverdueSkill] = []
        for skill, last_fire in self.store.scheduled_skills_with_last_fire():
            trigger = skill.trigger_config
            if trigger is None or skill.id in holding:
                continue  # a skill whose fires are skipped behind a run still going is stuck (skills_stuck)
            # Times before the skill's last change (a new trigger, a resume) were not fires of this schedule.
            since = max(last_fire, skill.updated_at) if last_fire else skill.updated_at
            due = trigger_next_times(trigger, anchor=skill.created_at, after=since, count=1)
            if due and due[0] + threshold <= now:
                found.append(OverdueSkill(skill=SkillBrief(id=skill.id, name=skill.name, schedule_id=skill.schedule_id),
                                          due_at=due[0], last_fire=last_fire))
        found.sort(key=lambda o: o.due_at)
        self.metrics.overdue_skills(len(found), now.timestamp())
        if self.settings.llm_configured:
            state = self.store.get_state(ENDPOINT_STATE)
            if state is not None:
                self.metrics.llm_endpoint(bool(state.get("up")))
        return OverdueSkills(count=len(found), skills=found[:query.limit], threshold_seconds=threshold.total_seconds())
