"""The owner's trust in file skills in the store, on SQLite and PostgreSQL: recorded, replaced, forgotten."""

from __future__ import annotations

from datetime import timedelta

from adapters.store import Store
from tests.adapters.store.helpers import T0


def test_trust_is_recorded_replaced_and_forgotten(store: Store) -> None:
    assert store.trust.trusted([]) == {} and store.trust.trusted(["digest"]) == {}
    store.trust.set_trust("digest", "sha256:aa", ["scripts/run.py"], T0)
    store.trust.set_trust("other", "sha256:bb", [], T0)
    assert store.trust.trusted(["digest", "unknown"]) == {"digest": ("sha256:aa", T0)}
    later = T0 + timedelta(days=1)
    store.trust.set_trust("digest", "sha256:cc", ["scripts/run.py", "bin/tool"], later)  # the files changed
    assert store.trust.trusted(["digest", "other"]) == {"digest": ("sha256:cc", later), "other": ("sha256:bb", T0)}
    assert store.trust.remove_trust("digest") is True
    assert store.trust.remove_trust("digest") is False
    assert store.trust.trusted(["digest", "other"]) == {"other": ("sha256:bb", T0)}
