"""Schedule activities: each skill's Temporal Schedule follows the stored skill.

The store is the source of truth; a schedule is always rebuilt from the stored
skill, never patched field by field, so calling `sync` again is always safe.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from temporalio import activity
from temporalio.service import RPCError, RPCStatusCode

from activities.failures import application_error
from adapters.schedules import Schedule, ScheduleWriter, build_schedule, skip_list
from adapters.store import Store
from config.settings import Settings
from search_attributes import SEARCH_ATTRIBUTES, search_attributes
from skills.errors import NamespaceSetupError, SkillNotFoundError
from skills.messages.manage import PreviousSchedule, ScheduleSync, ScheduleSynced, SkipRenewal
from skills.spec.models import Skill
from skills.when.calendar import SKIP_RENEW_BEFORE, due_at_creation, first_fire


class ScheduleActivities:
    def __init__(self, writer: ScheduleWriter, settings: Settings, store: Store) -> None:
        self.writer = writer
        self.settings = settings
        self.store = store

    @activity.defn
    async def sync_schedule(self, request: ScheduleSync) -> ScheduleSynced:
        """Create, replace, update or remove the skill's schedule so it matches the store."""
        previous = request.previous
        try:
            skill: Skill | None = await asyncio.to_thread(self.store.skills.get_skill, request.skill_id)
        except SkillNotFoundError:
            skill = None  # deleted since: its schedule goes too
        return await self.follow(skill, previous)

    async def follow(self, skill: Skill | None, previous: PreviousSchedule | None) -> ScheduleSynced:
        """Create, replace, update or remove the schedule of ``skill`` as stored (None: deleted) so it matches;
        ``previous``: what its schedule was built from (None: a skill just created)."""
        old_id = previous.schedule_id if previous else None
        if old_id and (skill is None or old_id != skill.schedule_id):
            await self.writer.delete(old_id)
        if skill is None or skill.schedule_id is None:
            return ScheduleSynced()
        now = datetime.now(UTC)
        days, until = skip_list(skill, now)
        schedule = build_schedule(skill, self.settings, days)
        # The schedule memo keeps the trigger as written, and a memo can only be set at
        # creation: a new trigger means a new schedule under the same id.
        trigger_changed = previous is not None and old_id == skill.schedule_id and (
            previous.trigger_config != skill.trigger_config or previous.trigger_as_written != skill.trigger_as_written
        )
        if trigger_changed:
            await self.writer.delete(skill.schedule_id)
        due = due_at_creation(skill, now)
        await self._create_or_update(skill, schedule, fire_now=due)
        await self._record_skips(skill, until)
        if previous is None or old_id != skill.schedule_id or trigger_changed:
            # A schedule just created: its next fire from the trigger, as `create` does. Asked of the server,
            # the answer waits for the schedule's own first workflow task (~40 ms on a dev server).
            return ScheduleSynced(schedule_id=skill.schedule_id, next_fire=now if due else first_fire(skill, now))
        return ScheduleSynced(schedule_id=skill.schedule_id, next_fire=await self.writer.next_fire(skill.schedule_id))

    async def create(self, skill: Skill) -> ScheduleSynced:
        """The schedule of a skill just stored (a bulk registration's item): created from the skill in hand,
        with no store read, and its next fire computed from the trigger rather than asked of the server,
        so the create is the only server call."""
        if skill.schedule_id is None or skill.trigger_config is None:
            return ScheduleSynced()
        now = datetime.now(UTC)
        days, until = skip_list(skill, now)
        due = due_at_creation(skill, now)
        await self._create_or_update(skill, build_schedule(skill, self.settings, days), fire_now=due)
        await self._record_skips(skill, until)
        return ScheduleSynced(schedule_id=skill.schedule_id, next_fire=now if due else first_fire(skill, now))

    # --- business days and holidays ----------------------------------------------------------

    @activity.defn
    async def renew_skip_lists(self, request: SkipRenewal) -> list[str]:
        """Rewrite the skip list of each schedule whose list runs out within ``SKIP_RENEW_BEFORE`` (at most
        ``request.limit`` of them, the soonest first: a bounded batch each Maintenance round); only the
        spec changes, so a schedule's state (paused, its note) stays as it is. The names renewed."""
        now = datetime.now(UTC)
        due = await asyncio.to_thread(self.store.skills.skips_running_out, now + SKIP_RENEW_BEFORE, request.limit)
        renewed = []
        for listed in due:
            activity.heartbeat(listed.id)
            try:
                # Read again just before the write: a change since the query is synced with its own spec.
                skill = await asyncio.to_thread(self.store.skills.get_skill, listed.id)
            except SkillNotFoundError:
                continue
            if skill.schedule_id is None or not skill.enabled:
                continue
            days, until = skip_list(skill, now)
            spec = build_schedule(skill, self.settings, days).spec
            if not await self.writer.set_spec(skill.schedule_id, spec):
                # No schedule (deleted behind the engine's back): the sync that recreates it writes the list.
                activity.logger.warning("skip list of skill %s not renewed: schedule %s not found", skill.id,
                                        skill.schedule_id)
                continue
            await self._record_skips(skill, until)
            renewed.append(skill.name)
        return renewed

    async def _record_skips(self, skill: Skill, until: datetime | None) -> None:
        if until != skill.skips_until:
            await asyncio.to_thread(self.store.skills.set_skips_until, skill.id, until)

    @activity.defn
    async def delete_schedule(self, schedule_id: str) -> None:
        await self.writer.delete(schedule_id)

    async def _create_or_update(self, skill: Skill, schedule: Schedule, *, fire_now: bool = False) -> None:
        try:
            await self._write(skill, schedule, fire_now)
        except RPCError as e:
            if e.status == RPCStatusCode.INVALID_ARGUMENT and "search attribute" in e.message:
                raise application_error(NamespaceSetupError(
                    f"Temporal namespace '{self.writer.namespace}' lacks the engine's search attributes "
                    f"({e.message}): run `skills setup` against it (on Temporal Cloud, add "
                    f"{', '.join(f'{name}={kind}' for name, kind in SEARCH_ATTRIBUTES.items())} in the UI or with tcld; "
                    "see docs/deploy.md)")) from e
            raise

    async def _write(self, skill: Skill, schedule: Schedule, fire_now: bool) -> None:
        assert skill.schedule_id is not None
        trigger = skill.trigger_as_written or skill.trigger_config.model_dump(mode="json", exclude_none=True)
        await self.writer.put(skill.schedule_id, schedule, search_attributes=search_attributes(skill),
                              memo={"skill_id": skill.id, "agent_id": skill.agent_id, "trigger": trigger},
                              fire_on_create=fire_now)
        activity.logger.info("schedule %s is in sync with skill %s", skill.schedule_id, skill.id)
