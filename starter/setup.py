"""`skills setup`: prepare the store and any Temporal namespace for the engine.

The store's database is created if missing and migrated to the newest schema (what every
worker also does when it starts; a deployment runs this once, as a Job, before the workers).
The dev launcher registers the search attributes from temporal-dev.yaml; on a
real cluster (or Temporal Cloud, where they are added in the UI or with tcld)
this does the same through the operator API. Safe to run again.
"""

from __future__ import annotations

import asyncio

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest, ListSearchAttributesRequest
from temporalio.client import Client

from client import connect
from config.settings import Settings
from skills.naming import SEARCH_ATTRIBUTES

KINDS = {"Keyword": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD, "Bool": IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
         "Int": IndexedValueType.INDEXED_VALUE_TYPE_INT}


async def ensure_search_attributes(client: Client) -> list[str]:
    """Register the engine's search attributes that the namespace lacks; return the ones added."""
    existing = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=client.namespace)
    )
    known = set(existing.custom_attributes) | set(existing.system_attributes)
    missing = {name: KINDS[kind] for name, kind in SEARCH_ATTRIBUTES.items() if name not in known}
    if missing:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(namespace=client.namespace, search_attributes=missing)
        )
    return sorted(missing)


def prepare_store(settings: Settings) -> str:
    """Create the store's database if missing and migrate it; one line saying where and at what revision."""
    from activities import migrations
    from activities.store import Store

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
