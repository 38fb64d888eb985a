"""Run bookkeeping: open a run when a fire starts, close it when it ends, tell the user.

The decisions that depend on stored state (is the skill disabled, is it backing
off, which earlier fires never ran) are taken here, from the store, and come
back to the workflow as data: the workflow stays deterministic and a restart
forgets nothing.
"""

from __future__ import annotations

import asyncio
import statistics
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio import activity

from activities.failures import application_error
from activities.heartbeat import heartbeating
from activities.ports import RunTools, SkillPreparer
from activities.skillfiles import toolset_grant
from activities.trust import untrusted
from adapters.metrics import EngineMetrics
from adapters.skill_folders import dependencies_of, file_skill
from adapters.store import Store
from config.secrets import redact, redact_value
from config.settings import Settings
from skills.errors import FieldError, SkillNotFoundError, SkillsError, SkillValidationError
from skills.messages.manage import RegisterInput
from skills.messages.run import BeginRun, DeliveriesRecord, DeliverInput, NotifyInput, RunOutcome, RunStart
from skills.run.budget import DAY
from skills.run.catalog import destructive_tools
from skills.run.deadline import approval_seconds
from skills.run.notify import settle
from skills.spec.models import BUDGET, FAILURES, REHEARSAL, RunRecord, Skill
from skills.when.calendar import fire_times
from skills.when.fires import MAX_ACCOUNTED, PreviousFire, account_gap

LATE = timedelta(seconds=15)
MONTH = timedelta(days=30)
OVER_CAP = "budget (max_tokens_per_month)"
"""How a skip for a skill's monthly token cap begins."""
"""A scheduled fire that starts this late is a catch-up after an outage (normal lag is ~1 s)."""
CONNECT_WAIT = 10.0
"""Seconds ``begin_run`` (a local activity, 30 s at most) waits for servers still connecting that could offer
a skill's tools, to read their annotations."""


class RunActivities:
    def __init__(self, store: Store, settings: Settings, tools: RunTools,
                 metrics: EngineMetrics | None = None, *, preparer: SkillPreparer | None = None) -> None:
        """``tools``: the tool hub; its call sends notifications, its catalog (the live tools with their
        annotations) says which of a skill's tools are destructive, and it waits for the servers that could
        offer tools the catalog lacks while they connect.
        ``metrics`` count the runs recorded; ``preparer`` normalizes a definition as a registration does (a
        rehearsal's)."""
        self.store = store
        self.settings = settings
        self.tools = tools
        self.metrics = metrics or EngineMetrics()
        self.preparer = preparer

    @activity.defn
    def begin_run(self, request: BeginRun) -> RunStart:
        """Load the skill as it is now, decide whether this fire may run it, open its run row
        and account for the scheduled times before it that never ran (idempotent)."""
        if request.trigger == REHEARSAL:
            return self._begin_rehearsal(request)
        try:
            skill = self.store.skills.get_skill(request.skill_id)
        except SkillNotFoundError:
            # The skill was deleted after this fire was scheduled: nothing to run or record.
            activity.logger.warning("skill %s no longer exists; fire ignored", request.skill_id)
            return RunStart(skill=None, run=None)
        run = RunRecord(run_id=request.run_id, skill_id=skill.id, skill_name=skill.name,
                        workflow_id=request.workflow_id, trigger=request.trigger,
                        scheduled_at=request.scheduled_at, started_at=request.started_at, tier=skill.tier)
        gaps = self._gaps(skill, run) if request.trigger == "schedule" else []
        stored = self.store.runs.start_run(run, gaps)
        if stored.run_id != run.run_id:
            # This fire is already another workflow run's (a reset or retried workflow, or a
            # missed one-shot recorded by the maintenance round): one record per fire.
            activity.logger.warning("the fire of skill %s at %s is already recorded by run %s; not run again",
                                    skill.id, run.scheduled_at, stored.run_id)
            return RunStart(skill=None, run=None)
        for gap in gaps:
            self.metrics.run_recorded(gap)
        self.metrics.fire_lag(stored, "start")
        skip = self._skip(skill, run)
        return RunStart(skill=skill.without_instructions(), run=stored,
                        skip=skip, skip_notice=self._cap_notice(skill, skip, run),
                        destructive_tools=[] if skip else self._destructive(skill), **self._limits(skill))

    def _limits(self, skill: Skill) -> dict[str, Any]:
        """What a run of ``skill`` is given from this worker's settings, and its SKILL.md parts."""
        return dict(tool_timeout_seconds=self.settings.tool_call_timeout.total_seconds(),
                    script_timeout_seconds=self.settings.script_timeout.total_seconds(),
                    notify_interval_seconds=self.settings.notify_interval.total_seconds(),
                    notifier_tool=self.settings.notifier_tool,
                    llm_timeout_seconds=self.settings.llm_turn_timeout.total_seconds(),
                    run_token_cap=self.settings.run_token_cap,
                    malformed_call_limit=self.settings.malformed_call_limit,
                    approval_timeout_seconds=approval_seconds(skill, self.settings.run_limits),
                    **self._file_parts(skill))

    def _begin_rehearsal(self, request: BeginRun) -> RunStart:
        """A rehearsal opens its run and nothing else: no earlier fires accounted, no skip (a paused skill may
        be rehearsed), the skill as stored, or as its definition normalizes now (refused by field, as its
        registration would be). A definition's skill travels whole in the run, instructions too."""
        if request.rehearse is None:
            try:
                skill = self.store.skills.get_skill(request.skill_id)
            except SkillNotFoundError as e:  # deleted since the client found it: said, not retried
                raise application_error(e) from e
        else:
            if self.preparer is None:
                raise application_error(SkillsError("this worker cannot normalize a definition to rehearse"))
            prepared = self.preparer.prepare_skill(RegisterInput(data=request.rehearse.data, target=request.rehearse.target,
                                                  by=REHEARSAL))
            if prepared.errors or prepared.normalized is None:
                errors = prepared.errors or [FieldError(field="definition", message="not a skill")]
                raise application_error(SkillValidationError(errors),
                                        details=[[e.model_dump() for e in errors]])
            skill = Skill(**prepared.normalized.spec.model_dump(), id=prepared.existing_id or 0,
                          created_at=request.started_at, updated_at=request.started_at)
        run = RunRecord(run_id=request.run_id, skill_id=skill.id, skill_name=skill.name,
                        workflow_id=request.workflow_id, trigger=REHEARSAL, started_at=request.started_at,
                        tier=skill.tier)
        stored = self.store.runs.start_run(run)
        return RunStart(skill=skill if request.rehearse is not None else skill.without_instructions(), run=stored,
                        rehearsal=True, closed_world=request.rehearse is not None and request.rehearse.closed_world,
                        **self._limits(skill))

    def _destructive(self, skill: Skill) -> list[str]:
        """The skill's tools its servers mark destructive now, less those the skill exempts: their calls wait
        for approval at this run. A tool the catalog lacks (its server still connecting) is waited for, a
        little: a destructive tool must not slip through because its server was slow to start."""
        # A delivery's tool too: a destination is a call like any other (workflows.run asks before it sends).
        tools = list(dict.fromkeys([*skill.required_tools, *skill.approval_required_tools,
                                    *(destination.tool for destination in skill.deliver_to)]))
        catalog = self.tools.catalog()
        missing = set(tools) - {tool.name for tool in catalog}
        if missing and self.tools.waited_for_connects(missing, CONNECT_WAIT):
            catalog = self.tools.catalog()
        found = destructive_tools(tools, catalog, skill.approval_exempt_tools)
        if found:
            activity.logger.info("skill %s: calls of %s wait for approval (marked destructive)", skill.name,
                                 ", ".join(found))
        return found

    def _file_parts(self, skill: Skill) -> dict[str, Any]:
        """A file skill's SKILL.md ``toolsets`` and ``depends``, read now (an edit counts at the next fire), or
        why it may not run: its executable parts, or a dependency's, are not trusted as they are now."""
        found = file_skill(self.settings, skill.name) if skill.agent_id == self.settings.file_skills_agent else None
        if found is None:
            return {}
        brought, missing = dependencies_of(self.settings, found)
        if missing:
            activity.logger.warning("skill %s depends on %s, not in the skill folders now (or disabled); it runs without",
                                    skill.name, ", ".join(missing))
        refusal = untrusted(self.store, self.settings, [found, *brought])
        if refusal is not None:
            # Nothing of it is granted: the run fails at once, recorded, before any process could start.
            activity.logger.warning("skill %s not run: %s", skill.name, refusal)
            return {"refused": str(refusal)}
        return {"toolsets": toolset_grant(found), "dependencies": [dep.name for dep in brought],
                "dependency_toolsets": [grant for dep in brought if (grant := toolset_grant(dep)) is not None]}

    @activity.defn
    def finish_run(self, run: RunRecord) -> RunOutcome:
        """Record the run as ``settle`` reads it (quiet, unchanged: decided here, so the workflow's replay of
        an older history sees what was recorded) and apply what it means to its skill. A rehearsal's is
        recorded and means nothing to its skill."""
        run = _redacted(run)
        if run.trigger == REHEARSAL:
            return RunOutcome(run=self.store.runs.record_rehearsal(settle(None, run)), skill=None)
        outcome = self.store.runs.record_outcome(run, self.settings.backoff, self.settings.budget, settle=settle)
        assert outcome is not None  # None only for a closer from outside the run (if_running)
        self.metrics.run_recorded(outcome.run, agent=outcome.skill.agent_id if outcome.skill else None,
                                  disabled=outcome.disabled if outcome.disabled in (FAILURES, BUDGET) else None)
        self.metrics.fire_lag(outcome.run, "done")
        if outcome.skill is not None:
            outcome.skill = outcome.skill.without_instructions()
        return outcome

    @activity.defn
    async def notify_user(self, request: NotifyInput) -> None:
        """Send a message through the notifier tool and remember when (for throttling).

        A notifier may be slow (a chat API, a webhook): the activity heartbeats while it waits."""
        async with heartbeating("notify", self.settings.notifier_tool):
            result = await self.tools.call(self.settings.notifier_tool, {"message": redact(request.message)},
                                           idempotency_key=request.idempotency_key)
        if not result.ok:
            raise RuntimeError(f"{self.settings.notifier_tool} refused the notification: {result.text}")
        sent = delivered_messages(result.structured)
        if request.run_id is not None and sent is not None:
            # A reply to this notice (in Telegram) continues with its run: the chat's prepare reads it back.
            await asyncio.to_thread(self.store.conversations.record_notice, sent[0], sent[1], request.run_id, request.at)
        if request.skill_id is not None:
            await asyncio.to_thread(self.store.skills.mark_notified, request.skill_id, request.at, request.digest)

    @activity.defn
    async def deliver(self, request: DeliverInput) -> None:
        """A run's result to one ``deliver_to`` destination: its send tool with its fixed arguments and the
        result as ``message``, through the argument pipeline (its allowlists) like any call, with the
        delivery's own idempotency key. A refusal raises, so Temporal retries it, then the run says failed."""
        tool = request.destination.tool
        async with heartbeating("deliver", tool):
            result = await self.tools.call(tool, {**request.destination.arguments, "message": redact(request.message)},
                                           idempotency_key=request.idempotency_key)
        if not result.ok:
            raise RuntimeError(f"{tool} refused the delivery: {result.text[:300]}")
        sent = delivered_messages(result.structured)
        if request.run_id is not None and sent is not None:  # a Telegram reply to it continues with its run
            await asyncio.to_thread(self.store.conversations.record_notice, sent[0], sent[1], request.run_id, datetime.now(UTC))

    @activity.defn
    async def record_deliveries(self, request: DeliveriesRecord) -> None:
        """Each destination's outcome on the run's record, counted by the metric; a result delivered anywhere
        is the skill's last delivered one (its digest, for ``deliver: on_change``; its time, for the throttle)."""
        await asyncio.to_thread(self.store.runs.record_deliveries, request.run_id, request.deliveries)
        for delivery in request.deliveries:
            self.metrics.delivered(delivery.destination.split(" ", 1)[0], delivery.status)
        if any(d.status == "delivered" for d in request.deliveries):
            await asyncio.to_thread(self.store.skills.mark_notified, request.skill_id, request.at, request.digest)

    def _skip(self, skill: Skill, run: RunRecord) -> str | None:
        if run.trigger == "manual":
            return None  # a manual run is what the user asked for, now: never skipped
        # A scheduled fire and an event's run alike: disabled, over budget or backing off is skipped.
        if not skill.enabled:
            return f"disabled: {skill.disabled_reason or 'by user'}"
        if skill.tier == "agent":
            used = self.store.runs.tokens_since(run.started_at - DAY)
            if used >= self.settings.daily_tokens:
                return (f"budget: all skills used {used:,} tokens in 24 hours; the daily budget is "
                        f"{self.settings.daily_tokens:,}")
            cap = skill.max_tokens_per_month
            if cap:
                used = self.store.runs.tokens_since(run.started_at - MONTH, skill.id)
                recent = self.store.runs.recent_run_tokens(skill.id)
                typical = int(statistics.median(recent)) if recent else 0
                if used + typical > cap:  # this run would pass the cap: not started
                    return (f"{OVER_CAP}: the skill used {used:,} tokens in 30 days and a run takes about "
                            f"{typical:,}; its max_tokens_per_month is {cap:,}")
        # The start, not the scheduled time: backoff asks whether it is too soon to try again now
        # (and a schedule's times are whole seconds).
        return skill.failures.skip_reason(self.settings.backoff, run.started_at)

    def _cap_notice(self, skill: Skill, skip: str | None, run: RunRecord) -> str | None:
        """A skill past its max_tokens_per_month: told once in 30 days (its first skip), not at every fire."""
        if skip is None or not skip.startswith(OVER_CAP):
            return None
        key = f"monthly-cap-told:{skill.id}"
        told = self.store.conversations.get_state(key)
        if told is not None and datetime.fromisoformat(told["at"]) > run.started_at - MONTH:
            return None
        self.store.conversations.set_state(key, {"at": run.started_at.isoformat()}, run.started_at)
        return (f"⛔ {skill.name}: its fires are skipped, {skip.removeprefix(OVER_CAP + ': ')}. They run again when its "
                f"last 30 days' tokens leave room, or raise max_tokens_per_month (`skills update {skill.id}`).")

    def _gaps(self, skill: Skill, run: RunRecord) -> list[RunRecord]:
        trigger, scheduled = skill.trigger_config, run.scheduled_at
        if trigger is None or trigger.kind not in ("cron", "interval") or scheduled is None:
            return []
        previous = self.store.runs.previous_scheduled_run(skill.id, before=scheduled)
        # Times before the last change of the skill (a new trigger, a resume) were not fires of this schedule.
        since = max(previous.scheduled_at, skill.updated_at) if previous and previous.scheduled_at else skill.updated_at
        # A day the schedule skips (business days, holidays) had no fire to miss. Past fires: neither end_at nor
        # max_runs cuts them.
        expected: list[datetime] = []
        for at, reason in fire_times(trigger, anchor=skill.created_at, now=since, skip_holidays=skill.skip_holidays,
                                     business_days_only=skill.business_days_only):
            if at >= scheduled or len(expected) > MAX_ACCOUNTED:
                break
            if reason is None:
                expected.append(at)
        # Only a jitter of its own: the default spread (skills.when.spread) leaves the scheduled time a fire's
        # own (Temporal records the nominal time), so a fire just before it is one that was missed.
        if skill.jitter_seconds and expected and expected[-1] >= scheduled - timedelta(seconds=skill.jitter_seconds):
            expected.pop()  # this fire's own time: Temporal's jitter delayed it (its scheduled time includes it)
        if not expected:
            return []
        following = next((at for at, reason in fire_times(
            trigger, anchor=skill.created_at, now=scheduled, skip_holidays=skill.skip_holidays,
            business_days_only=skill.business_days_only) if reason is None), None)
        late = run.started_at - scheduled > LATE or bool(following and following <= run.started_at)
        before = PreviousFire(scheduled_at=previous.scheduled_at, started_at=previous.started_at,
                              finished_at=previous.finished_at) if previous and previous.scheduled_at else None
        return [
            RunRecord(run_id=f"{run.run_id}-gap-{i}", skill_id=skill.id, skill_name=skill.name,
                      workflow_id=run.workflow_id, trigger="schedule", scheduled_at=gap.scheduled_at,
                      started_at=gap.scheduled_at, finished_at=gap.scheduled_at, status=gap.status,
                      summary=gap.summary, tier=skill.tier)
            for i, gap in enumerate(account_gap(expected, before, late))
        ]


MAX_NOTICE_PARTS = 16
"""A notice is at most a few messages (1,500 characters, Telegram's parts are 4,096): more is not a notifier's answer."""


def delivered_messages(structured: dict[str, Any] | None) -> tuple[str, list[int]] | None:
    """The chat and message ids a notifier says it sent (the telegram server's ``chat_id`` and ``message_ids``),
    or None for a notifier that says no such thing (the outbox, a webhook)."""
    if not isinstance(structured, dict):
        return None
    chat, ids = structured.get("chat_id"), structured.get("message_ids")
    if not isinstance(chat, (str, int)) or isinstance(chat, bool) or not str(chat).strip() or len(str(chat)) > 64:
        return None
    if not isinstance(ids, list) or not ids or len(ids) > MAX_NOTICE_PARTS:
        return None
    if not all(isinstance(i, int) and not isinstance(i, bool) and 0 < i < 2**53 for i in ids):
        return None
    return str(chat).strip(), ids


def _redacted(run: RunRecord) -> RunRecord:
    """The run as it may be stored: no configured secret in its summary or its tool results."""
    calls = [call.model_copy(update={"result": redact(call.result), "arguments": redact_value(call.arguments)})
             for call in run.tool_calls]
    deliveries = [d.model_copy(update={"message": redact(d.message)}) for d in run.deliveries]
    return run.model_copy(update={"summary": redact(run.summary), "tool_calls": calls, "deliveries": deliveries})
