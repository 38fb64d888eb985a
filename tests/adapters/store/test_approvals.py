"""Standing grants in the store, on SQLite and PostgreSQL: kept, matched, listed, revoked, expired."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from adapters.store import Store
from skills.errors import SkillNotFoundError

NOW = datetime.now(UTC)


@pytest.fixture
def store(store_url: str) -> Store:
    return Store.open(store_url, schedule_prefix="q")


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
