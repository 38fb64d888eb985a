"""The store's claims of emitted event ids (SQLite and PostgreSQL): the dedupe window, a retried claim, pruning."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlmodel import select

from activities.store import Store
from activities.tables import SeenEventRow

NOW = datetime(2026, 2, 14, 15, 0, tzinfo=UTC)
WINDOW = timedelta(hours=1)


def test_an_id_is_claimed_once_within_the_window(store_url: str) -> None:
    store = Store.open(store_url)
    assert store.claim_event("mail.in", "m-1", "run-a", NOW, WINDOW) is None
    # The same claimer again (a retried activity) still owns it; another is told who did.
    assert store.claim_event("mail.in", "m-1", "run-a", NOW, WINDOW) is None
    store.record_event("mail.in", "m-1", "run-a", {"event": "mail.in", "event_id": "m-1", "started": []})
    earlier = store.claim_event("mail.in", "m-1", "run-b", NOW + timedelta(minutes=59), WINDOW)
    assert earlier is not None and earlier.claimer == "run-a" and earlier.seen_at == NOW
    assert earlier.result == {"event": "mail.in", "event_id": "m-1", "started": []}
    # Another event's id of the same text is another event.
    assert store.claim_event("mail.out", "m-1", "run-c", NOW, WINDOW) is None
    # Only the claimer records its result.
    store.record_event("mail.in", "m-1", "run-b", {"stolen": True})
    assert store.claim_event("mail.in", "m-1", "run-d", NOW, WINDOW).result == earlier.result  # type: ignore[union-attr]


def test_past_the_window_an_id_is_new_and_old_claims_are_pruned(store_url: str) -> None:
    store = Store.open(store_url)
    store.claim_event("mail.in", "m-1", "run-a", NOW, WINDOW)
    store.claim_event("mail.in", "m-2", "run-a", NOW, WINDOW)
    later = NOW + WINDOW + timedelta(seconds=1)
    assert store.claim_event("mail.in", "m-1", "run-b", later, WINDOW) is None
    with store.session() as session:
        rows = {(r.event_id, r.claimer) for r in session.exec(select(SeenEventRow))}
    assert rows == {("m-1", "run-b")}
