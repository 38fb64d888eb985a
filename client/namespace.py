"""The namespace's side of the engine: the custom search attributes its runs set, registered through
Temporal's operator API (``skills setup``, and every worker as it starts)."""

from __future__ import annotations

import logging

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest, ListSearchAttributesRequest
from temporalio.client import Client

from search_attributes import SEARCH_ATTRIBUTES

KINDS = {"Keyword": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD, "Bool": IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
         "Int": IndexedValueType.INDEXED_VALUE_TYPE_INT}

logger = logging.getLogger("worker")  # lines of the worker's start, under the name its other lines have


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


async def register_search_attributes(client: Client) -> None:
    """At a worker's start: register the engine's search attributes the namespace lacks (a namespace set up
    by an older release lacks the newer ones, and a run that sets one it lacks could never finish its workflow
    task); where the worker may not (Temporal Cloud), say what to do, and serve anyway."""
    try:
        added = await ensure_search_attributes(client)
    except Exception as e:  # no operator rights (Cloud), or an old server: the owner must add them
        logger.error("could not check or add the engine's search attributes (%s: %s): run `skills setup` "
                     "against namespace %s, or add %s (docs/deploy.md); until then a run that waits for "
                     "approval cannot record that it waits", type(e).__name__, e, client.namespace,
                     ", ".join(f"{name}={kind}" for name, kind in SEARCH_ATTRIBUTES.items()))
        return
    if added:
        logger.info("search attributes added to namespace %s: %s", client.namespace, ", ".join(added))
