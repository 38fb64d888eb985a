"""The run history's retention: run records past ``run_retention_days``, or past ``max_runs_per_skill`` of
one skill, are deleted by the maintenance round, with their Agent conversations.

Bounded work each round: deletes go in batches of :data:`BATCH` rows (one short transaction each, so
runs being recorded meanwhile wait for one batch at most), for at most :data:`TIME_BUDGET`; what is left
goes at the next round. The cap per skill walks :data:`SKILLS_PER_ROUND` skills a round, from where the
last round stopped (kept in the engine state), so 10,000 skills are all seen within a few rounds. Both
walks follow an index (migration 0009): a round reads the rows it deletes and the ones it keeps.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from temporalio import activity

from activities.failures import as_application_errors
from adapters.metrics import EngineMetrics
from adapters.store import Store
from config.settings import Settings
from skills.messages.maintenance import PrunedRuns, RunHistory
from skills.messages.manage import RunsQuery
from skills.naming import RUN_HISTORY

BATCH = 1000
"""Run rows deleted in one transaction at most."""
TIME_BUDGET = 10.0
"""Seconds a round spends deleting at most (the activity's timeout is 60 s)."""
SKILLS_PER_ROUND = 500
"""Skills whose count of runs a round checks at most."""
CURSOR = "run-retention"
"""The engine state that remembers the last skill whose runs the cap walk saw."""


class RetentionActivities:
    def __init__(self, store: Store, settings: Settings, metrics: EngineMetrics | None = None) -> None:
        self.store = store
        self.settings = settings
        self.metrics = metrics or EngineMetrics()

    @activity.defn
    def prune_runs(self) -> PrunedRuns:
        """Delete a bounded share of the run records the retention no longer keeps."""
        pruned = PrunedRuns()
        stop = time.monotonic() + TIME_BUDGET
        if self.settings.run_retention_days:
            before = datetime.now(UTC) - timedelta(days=self.settings.run_retention_days)
            while time.monotonic() < stop:
                deleted = self.store.runs.prune_old_runs(before, BATCH)
                pruned.by_age += deleted
                if deleted < BATCH:
                    break
            # A deleted skill's revisions (what ``skills revert`` re-creates it from) go with its old runs.
            pruned.revisions = self.store.revisions.prune_deleted_revisions(before, BATCH)
        if self.settings.max_runs_per_skill:
            pruned.by_count = self._cap(stop)
        self.metrics.runs_pruned(pruned.by_age, pruned.by_count)
        if pruned.by_age or pruned.by_count:
            activity.logger.info("run history: %d runs past %d days and %d past %d a skill deleted", pruned.by_age,
                                 self.settings.run_retention_days, pruned.by_count, self.settings.max_runs_per_skill)
        return pruned

    def _cap(self, stop: float) -> int:
        now = datetime.now(UTC)
        after = int((self.store.conversations.get_state(CURSOR) or {}).get("after", 0))
        ids = self.store.runs.skill_ids_after(after, SKILLS_PER_ROUND)
        deleted = 0
        for skill_id in ids:
            finished = True
            while True:
                count = self.store.runs.prune_skill_runs(skill_id, self.settings.max_runs_per_skill, BATCH)
                deleted += count
                if count < BATCH:
                    break
                if time.monotonic() >= stop:
                    finished = False  # this skill has more: the next round begins with it
                    break
            if not finished:
                break
            after = skill_id
            if time.monotonic() >= stop:
                break
        else:
            if len(ids) < SKILLS_PER_ROUND:
                after = 0  # the walk saw the last skill: the next round starts over
        self.store.conversations.set_state(CURSOR, {"after": after}, now)
        return deleted

    @activity.defn(name=RUN_HISTORY)
    def run_history(self, query: RunsQuery) -> RunHistory:
        """How far back the run history goes (``skills runs``): the retention, and the oldest run kept."""
        with as_application_errors():
            skill_id = self.store.skills.find_skill(query.skill.ref, query.skill.agent_id).id if query.skill else None
        return RunHistory(retention_days=self.settings.run_retention_days,
                          max_runs_per_skill=self.settings.max_runs_per_skill, oldest=self.store.runs.oldest_run(skill_id))
