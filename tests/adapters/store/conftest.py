"""The store every test of this package opens, once on each backend (``store_url``)."""

from __future__ import annotations

import pytest

from adapters.store import Store


@pytest.fixture
def store(store_url: str) -> Store:
    return Store.open(store_url, schedule_prefix="q")
