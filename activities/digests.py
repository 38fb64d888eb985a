"""The delivery digest's activities: queue a result for its destination's digest, send a digest, say it failed.

``queue_digest`` is a signal-with-start of the destination's ``DeliveryDigest`` workflow; the other two read
what they send from the store (``workflows/digests.py`` says why only references cross the workflow).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from temporalio import activity

from activities.heartbeat import heartbeating
from activities.ports import ToolSender
from adapters.engine_workflows import EngineWorkflows
from adapters.store import Store
from config.secrets import redact
from config.settings import Settings
from skills.errors import SkillNotFoundError
from skills.messages.run import DigestQueue, DigestSend, DigestStart
from skills.naming import DELIVERY_DIGEST, DIGEST_SIGNAL
from skills.run.notify import digest_message
from skills.spec.models import Delivery, Destination, RunRecord


class DigestActivities:
    def __init__(self, workflows: EngineWorkflows, store: Store, settings: Settings,
                 tools: ToolSender) -> None:
        """``tools.call(tool, arguments, idempotency_key=...)``: the tool hub's call, as the notifier's."""
        self.workflows = workflows
        self.store = store
        self.settings = settings
        self.tools = tools

    @activity.defn
    async def queue_digest(self, request: DigestQueue) -> None:
        """Add a run's result to its destination's digest, starting the digest when none gathers."""
        await self.workflows.signal_with_start(
            DELIVERY_DIGEST, DigestStart(key=request.key, minutes=request.minutes),
            workflow_id=f"delivery-digest-{request.key}", signal=DIGEST_SIGNAL, signal_args=[request.item],
            summary=f"digest for {request.label}")

    @activity.defn
    async def send_digest(self, request: DigestSend) -> None:
        """One message with each result, to the destination, with the digest's one key; each run records it."""
        found = await asyncio.to_thread(self._read, request)
        if not found:
            return
        destination = found[0][1]
        text = digest_message([(run.skill_name, redact(run.summary)) for run, _ in found])
        info = activity.info()
        async with heartbeating("digest", destination.tool):
            result = await self.tools.call(destination.tool, {**destination.arguments, "message": text},
                                     idempotency_key=f"{info.workflow_id}:{info.workflow_run_id}:digest")
        if not result.ok:
            raise RuntimeError(f"{destination.tool} refused the digest: {result.text[:300]}")
        await asyncio.to_thread(self._mark, found, "delivered", "")

    @activity.defn
    def digest_failed(self, request: DigestSend) -> None:
        """Every retry of a digest failed: each of its runs says so."""
        self._mark(self._read(request), "failed", request.error)

    def _read(self, request: DigestSend) -> list[tuple[RunRecord, Destination]]:
        """Each item's run and destination, as the store has them: an item whose skill no longer delivers
        to this digest's destination (changed, deleted) or whose run is gone is left out."""
        found = []
        for item in request.items:
            try:
                skill = self.store.skills.get_skill(item.skill_id)
            except SkillNotFoundError:
                continue
            runs = [r for r in self.store.runs.find_runs(item.run_id, limit=1) if r.run_id == item.run_id]
            places = skill.deliver_to
            if not runs or runs[0].skill_id != skill.id or not 0 <= item.destination < len(places):
                continue
            destination = places[item.destination]
            if destination.digest_minutes and destination.key == request.key:
                found.append((runs[0], destination))
        return found

    def _mark(self, found: list[tuple[RunRecord, Destination]], status: str, error: str) -> None:
        now = datetime.now(UTC)
        for run, destination in found:
            deliveries = [d if d.destination != destination.label else
                          Delivery(destination=d.destination, status=status, error=error[:300])  # type: ignore[arg-type]
                          for d in run.deliveries]
            self.store.runs.record_deliveries(run.run_id, deliveries)
        if status == "delivered":
            for skill_id in {run.skill_id for run, _ in found}:
                self.store.skills.mark_notified(skill_id, now)
