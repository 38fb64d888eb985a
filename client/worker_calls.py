"""What the worker offers, from a client: its live tool catalog, its outbox (through the outbox's own MCP tool)
and whether it can run skills' scripts in its sandbox.

A part of :class:`client.skills_client.SkillsClient` (:mod:`client.base`).
"""

from __future__ import annotations

from typing import Any

from temporalio.client import ActivityFailureError
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

from client.base import ClientBase
from skills.errors import SkillsError
from skills.messages.run import SandboxState
from skills.naming import CALL_TOOL, GET_TOOL_CATALOG, REFRESH_TOOL_CATALOG, SANDBOX_STATE
from skills.run.catalog import CatalogRequest, ToolCatalog


class WorkerCalls(ClientBase):
    """The worker's tool catalog, outbox and sandbox."""

    async def catalog(self, refresh: bool = False) -> ToolCatalog:
        """The worker's live tool catalog (with ``refresh``: re-read the config, list tools again)."""
        activity = REFRESH_TOOL_CATALOG if refresh else GET_TOOL_CATALOG
        return await self.calls.read(activity, CatalogRequest(), ToolCatalog)

    async def outbox(self, limit: int = 20, chat_id: str | None = None) -> list[dict[str, Any]]:
        """The newest messages of the outbox, through its own MCP tool on the worker (newest first)."""
        arguments: dict[str, Any] = {"limit": limit, **({"chat_id": chat_id} if chat_id else {})}
        result = await self.calls.read(CALL_TOOL, {"tool": "outbox_list_messages", "arguments": arguments,
                                                "step_id": "cli"}, dict)
        if not result.get("ok"):
            raise SkillsError(f"the outbox could not be read: {result.get('text')}")
        return list((result.get("structured") or {}).get("messages", []))

    async def sandbox(self) -> SandboxState:
        """Whether a worker of the task queue can run skills' scripts in its sandbox, and if not why and what to do.
        A worker older than this read says nothing (one attempt: it is not retried until the read times out)."""
        try:
            return await self.calls.read(SANDBOX_STATE, None, SandboxState, retry_policy=RetryPolicy(maximum_attempts=1))
        except SkillsError as e:
            cause = e.__cause__.cause if isinstance(e.__cause__, ActivityFailureError) else None
            if isinstance(cause, ApplicationError) and cause.type == "NotFoundError":
                return SandboxState(summary="not reported: the worker that answered is older than this client")
            raise
