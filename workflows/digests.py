"""DeliveryDigest: a destination's results gathered for ``digest_minutes`` and sent as one message.

A ``deliver_to`` destination may set ``digest_minutes``: the results of every skill that delivers to it
within that window go out together, once, with one idempotency key (one message a morning instead of
five). One workflow per destination (its id is the destination's key), started by the first result and
signalled by the next (``queue_digest``, a signal-with-start). Only references cross it: each result is
a run id, a skill id and the destination's place in that skill's ``deliver_to``; ``send_digest`` reads
the results and the destination from the store, so a payload can neither add text to the owner's digest
nor send one elsewhere. Results that come while a digest is being sent go in the next one.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

from skills.naming import DELIVERY_DIGEST, DIGEST_SIGNAL

with workflow.unsafe.imports_passed_through():
    from activities.digests import DigestActivities
    from skills.messages.run import DigestItem, DigestSend, DigestStart
    from workflows.failures import activity_cause
    from workflows.options import FAIL_ON_BUG, NOTIFY, STORE


@workflow.defn(name=DELIVERY_DIGEST, failure_exception_types=FAIL_ON_BUG)
class DeliveryDigest:
    def __init__(self) -> None:
        self._items: list[DigestItem] = []
        self._seen: set[str] = set()

    @workflow.signal(name=DIGEST_SIGNAL)
    def add(self, item: DigestItem) -> None:
        """A result for the digest; the same run's again (a retried queue_digest) is taken once."""
        if item.run_id not in self._seen:
            self._seen.add(item.run_id)
            self._items.append(item)

    @workflow.run
    async def run(self, start: DigestStart) -> int:
        for item in start.pending:
            self.add(item)
        await workflow.wait_condition(lambda: bool(self._items))
        await workflow.sleep(timedelta(minutes=start.minutes), summary=f"gather for {start.minutes:g} min")
        batch = list(self._items)
        send = DigestSend(key=start.key, items=batch)
        try:
            await workflow.execute_activity_method(DigestActivities.send_digest, send, **NOTIFY,
                                                   summary=f"digest of {len(batch)} results")
        except ActivityError as e:
            await workflow.execute_activity_method(
                DigestActivities.digest_failed, DigestSend(key=start.key, items=batch, error=activity_cause(e)),
                **STORE)
        rest = self._items[len(batch):]
        if rest:  # came while this one was sent: the next digest
            workflow.continue_as_new(DigestStart(key=start.key, minutes=start.minutes, pending=rest))
        return len(batch)
