"""Approvals and standing grants in the store, on SQLite and PostgreSQL: an approval recorded once per
request and answered once; grants kept, matched, listed, revoked, expired."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from adapters.store import Store
from skills.errors import SkillNotFoundError
from tests.adapters.store.helpers import T0, approval_request

NOW = datetime.now(UTC)


def test_grants_are_matched_listed_revoked_and_expire(store: Store) -> None:
    owner = store.approvals.add_grant(tool="telegram_send_message", skill_id=None, skill_name="", where={"chat_id": "42"},
                                      created_at=NOW, expires_at=None, created_by="cli")
    short = store.approvals.add_grant(tool="mail_send", skill_id=3, skill_name="mailer", where={}, created_at=NOW,
                                      expires_at=NOW + timedelta(hours=1), created_by="cli")
    assert owner.where == {"chat_id": "42"} and short.expires_at == NOW + timedelta(hours=1)
    assert store.approvals.matching_grant("telegram_send_message", 9, {"chat_id": 42, "text": "hi"}, NOW) == owner
    assert store.approvals.matching_grant("telegram_send_message", 9, {"chat_id": "7"}, NOW) is None
    assert store.approvals.matching_grant("mail_send", 3, {}, NOW) == short
    assert store.approvals.matching_grant("mail_send", 4, {}, NOW) is None
    later = NOW + timedelta(hours=2)
    assert store.approvals.matching_grant("mail_send", 3, {}, later) is None  # expired
    assert [g.id for g in store.approvals.list_grants(now=later)] == [owner.id]
    assert [g.id for g in store.approvals.list_grants(now=later, live_only=False)] == [short.id, owner.id]

    revoked, changed = store.approvals.revoke_grant(owner.id, NOW)
    assert changed and revoked.revoked_at == NOW
    assert store.approvals.revoke_grant(owner.id, NOW)[1] is False
    assert store.approvals.matching_grant("telegram_send_message", 9, {"chat_id": "42"}, NOW) is None
    with pytest.raises(SkillNotFoundError, match="no grant"):
        store.approvals.revoke_grant(999, NOW)


def test_an_approval_is_recorded_once_per_request_and_answered_once(store: Store) -> None:
    first = store.approvals.add_approval(approval_request())
    again = store.approvals.add_approval(approval_request(summary="a retried step records it again"))
    assert again == first and first.pending and first.expires_at == T0 + timedelta(hours=1)
    other = store.approvals.add_approval(approval_request("chat:s1:3:0", kind="change", session_id="s1", workflow_id=None))
    assert other.id > first.id
    assert [a.id for a in store.approvals.list_approvals()] == [other.id, first.id]
    assert [a.id for a in store.approvals.list_approvals(session_id="s1")] == [other.id]

    decided, changed = store.approvals.decide_approval(first.id, "approved", now=T0 + timedelta(minutes=3), by="cli")
    assert changed and decided.status == "approved" and decided.decided_by == "cli"
    assert decided.decided_at == T0 + timedelta(minutes=3)
    # A second answer (a Telegram button pressed after `skills deny`) changes nothing, and says so.
    late, changed = store.approvals.decide_approval(first.id, "denied", now=T0 + timedelta(minutes=4), reason="no")
    assert not changed and late.status == "approved" and late.reason is None
    assert [a.id for a in store.approvals.list_approvals()] == [other.id]
    assert {a.id for a in store.approvals.list_approvals(status=None)} == {first.id, other.id}
    store.approvals.record_approval_outcome(first.id, "sent")
    assert store.approvals.get_approval(first.id).outcome == "sent"
    assert store.approvals.find_approval("run-1:step1:0") == store.approvals.get_approval(first.id)
    with pytest.raises(SkillNotFoundError, match="no approval with id 999"):
        store.approvals.get_approval(999)


def test_two_answers_at_once_decide_an_approval_once(store: Store) -> None:
    pending = store.approvals.add_approval(approval_request())
    results: list[bool] = []
    barrier = threading.Barrier(8)

    def answer(i: int) -> None:
        barrier.wait()
        results.append(store.approvals.decide_approval(pending.id, "approved" if i % 2 else "denied", now=T0)[1])

    threads = [threading.Thread(target=answer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(True) == 1
