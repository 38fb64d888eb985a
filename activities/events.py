"""Event activities: claim an emitted event id (dedupe) and find its subscribers; remember what it did.

The EmitEvent workflow (``workflows.events``) calls them. The claim is kept in the store, so
the dedupe window (``event_dedupe_window``) may outlast Temporal's retention of the workflow.
"""

from __future__ import annotations

from temporalio import activity

from adapters.store import Store
from config.settings import Settings
from skills.errors import SkillNotFoundError
from skills.naming import run_summary, schedule_id_for
from skills.run.deadline import run_timeout
from skills.spec.models import Skill
from skills.when.events import ClaimEvent, EmitResult, EventClaim, RecordEvent, Subscriber


class EventActivities:
    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings

    @activity.defn
    def claim_event(self, request: ClaimEvent) -> EventClaim:
        """The earlier emit of this id if it is within the dedupe window; otherwise claim it and
        return the skills subscribed to the event (idempotent for the same claimer)."""
        window = self.settings.event_dedupe_window
        until = request.now + window if request.dedupe else None
        if request.dedupe:
            earlier = self.store.events.claim_event(request.name, request.event_id, request.claimer, request.now, window)
            if earlier is not None:
                first = EmitResult.model_validate(earlier.result) if earlier.result else \
                    EmitResult(event=request.name, event_id=request.event_id)
                return EventClaim(duplicate=first.model_copy(update={
                    "duplicate": True, "first_seen_at": earlier.seen_at, "skipped": [],
                    "dedupe_until": earlier.seen_at + window}))
        subscribers = [
            Subscriber(skill_id=skill.id, name=skill.name, agent_id=skill.agent_id, tier=skill.tier,
                       enabled=skill.enabled, disabled_reason=skill.disabled_reason,
                       run_prefix=schedule_id_for(self.settings.task_queue, skill.id, skill.name),
                       summary=run_summary(skill),
                       run_timeout_seconds=run_timeout(skill, self.settings.run_limits).total_seconds())
            for skill in (self.store.events.event_subscribers(request.name) if request.skill_id is None
                          else self._hooked(request.skill_id))
        ]
        activity.logger.info("event %s (%s): %d subscriber(s)", request.name, request.event_id, len(subscribers))
        return EventClaim(subscribers=subscribers, dedupe_until=until)

    def _hooked(self, skill_id: int) -> list[Skill]:
        """A hook's skill, while it has a hook token: a token revoked since the call was let in runs nothing."""
        try:
            skill = self.store.skills.get_skill(skill_id)
        except SkillNotFoundError:
            return []
        return [skill] if skill.has_hook else []

    @activity.defn
    def record_event(self, request: RecordEvent) -> None:
        """Keep what the emit did on its claim, so a duplicate can say what the first one started."""
        result = request.result
        self.store.events.record_event(result.event, result.event_id, request.claimer, result.model_dump(mode="json"))
