"""`skills setup`: prepare the store and any Temporal namespace for the engine.

The store's database is created if missing and migrated to the newest schema (what every
worker also does when it starts; a deployment runs this once, as a Job, before the workers).
The dev launcher registers the search attributes from temporal-dev.yaml; on a
real cluster (or Temporal Cloud, where they are added in the UI or with tcld)
this does the same through the operator API. Safe to run again.
"""

from __future__ import annotations

import asyncio

from client import connect
from client.namespace import ensure_search_attributes
from config.settings import Settings


def prepare_store(settings: Settings) -> str:
    """Create the store's database if missing and migrate it; one line saying where and at what revision."""
    from adapters.store import Store, migrations

    store = Store.open(settings.store_url, schedule_prefix=settings.task_queue)
    try:
        return f"store {settings.masked_database_url} at schema revision {migrations.current(store.engine)}"
    finally:
        store.engine.dispose()


async def run_setup(settings: Settings, address: str | None = None, namespace: str | None = None) -> int:
    """Migrate the store, then connect (``--address``/``--namespace`` over Temporal's env config)
    and add what is missing."""
    print(await asyncio.to_thread(prepare_store, settings), flush=True)
    client = await connect(address, namespace)
    added = await ensure_search_attributes(client)
    print(f"search attributes added: {', '.join(added)}" if added else "search attributes already registered")
    return 0
