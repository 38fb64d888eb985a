"""The namespace's side of the engine: the custom search attributes its runs set, registered through
Temporal's operator API (``skills setup``, and every worker as it starts)."""

from __future__ import annotations

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest, ListSearchAttributesRequest
from temporalio.client import Client

from search_attributes import SEARCH_ATTRIBUTES

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
