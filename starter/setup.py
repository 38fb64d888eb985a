"""`skills setup`: prepare any Temporal namespace for the engine.

The dev launcher registers the search attributes from temporal-dev.yaml; on a
real cluster (or Temporal Cloud, where they are added in the UI or with tcld)
this does the same through the operator API, and is safe to run again.
"""

from __future__ import annotations

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest, ListSearchAttributesRequest
from temporalio.client import Client

from client import connect
from skills.naming import SEARCH_ATTRIBUTES

KINDS = {"Keyword": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD}


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


async def run_setup(address: str | None = None, namespace: str | None = None) -> int:
    """Connect (``--address``/``--namespace`` over Temporal's env config) and add what is missing."""
    client = await connect(address, namespace)
    added = await ensure_search_attributes(client)
    print(f"search attributes added: {', '.join(added)}" if added else "search attributes already registered")
    return 0
