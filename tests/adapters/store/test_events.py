"""The store's claims of emitted event ids (SQLite and PostgreSQL): the dedupe window, a retried claim, pruning."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from sqlmodel import select

from adapters.store import Store
from adapters.store.tables import SeenEventRow

NOW = datetime(2026, 2, 14, 15, 0, tzinfo=UTC)
WINDOW = timedelta(hours=1)


def test_an_id_is_claimed_once_within_the_window(store_url: str) -> None:
    store = Store.open(store_url)
    assert store.events.claim_event("mail.in", "m-1", "run-a", NOW, WINDOW) is None
    # The same claimer again (a retried activity) still owns it; another is told who did.
    assert store.events.claim_event("mail.in", "m-1", "run-a", NOW, WINDOW) is None
    store.events.record_event("mail.in", "m-1", "run-a", {"event": "mail.in", "event_id": "m-1", "started": []})
    earlier = store.events.claim_event("mail.in", "m-1", "run-b", NOW + timedelta(minutes=59), WINDOW)
    assert earlier is not None and earlier.claimer == "run-a" and earlier.seen_at == NOW
    assert earlier.result == {"event": "mail.in", "event_id": "m-1", "started": []}
    # Another event's id of the same text is another event.
    assert store.events.claim_event("mail.out", "m-1", "run-c", NOW, WINDOW) is None
    # Only the claimer records its result.
    store.events.record_event("mail.in", "m-1", "run-b", {"stolen": True})
    assert store.events.claim_event("mail.in", "m-1", "run-d", NOW, WINDOW).result == earlier.result  # type: ignore[union-attr]


def test_past_the_window_an_id_is_new_and_old_claims_are_pruned(store_url: str) -> None:
    store = Store.open(store_url)
    store.events.claim_event("mail.in", "m-1", "run-a", NOW, WINDOW)
    store.events.claim_event("mail.in", "m-2", "run-a", NOW, WINDOW)
    later = NOW + WINDOW + timedelta(seconds=1)
    assert store.events.claim_event("mail.in", "m-1", "run-b", later, WINDOW) is None
    with store.session() as session:
        rows = {(r.event_id, r.claimer) for r in session.exec(select(SeenEventRow))}
    assert rows == {("m-1", "run-b")}


def test_simultaneous_claims_of_one_id_from_many_engines_elect_one(store_url: str) -> None:
    """Eight emits of one id at the same instant, over four engines (four workers): one claim wins,
    the others are told whose it is, and none fails (no primary-key clash to retry)."""
    stores = [Store.open(store_url) for _ in range(4)]
    start = threading.Barrier(8)
    answers: dict[str, SeenEventRow | None] = {}
    failures: list[BaseException] = []

    def claim(i: int) -> None:
        start.wait()
        try:
            answers[f"run-{i}"] = stores[i % 4].events.claim_event("mail.in", "same", f"run-{i}", NOW, WINDOW)
        except BaseException as e:  # noqa: BLE001 - what a thread raised is the test's finding
            failures.append(e)

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    [winner] = [claimer for claimer, answer in answers.items() if answer is None]
    assert all(answer.claimer == winner for answer in answers.values() if answer is not None)
    assert len(answers) == 8
