"""The tool activities: call one MCP tool, read or refresh the live tool catalog.

They run on the worker's :class:`~adapters.mcp.ToolHub`, which keeps the MCP
sessions warm (see :mod:`adapters.mcp`).

Wiring in the worker (the hub must start in the worker's event loop)::

    from adapters.mcp import ToolHub, outbox_server
    from activities.tools import ToolActivities

    hub = ToolHub.from_config(settings.mcp_config, defaults={"outbox": outbox_server(settings.outbox_path)},
                              call_timeout=settings.tool_call_timeout.total_seconds(), rules=rules)
    async with hub:
        tools = ToolActivities(hub, call_timeout=settings.tool_call_timeout)
        worker = Worker(client, ..., activities=[tools.call_tool, tools.get_tool_catalog, ...])
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from datetime import timedelta

from temporalio import activity

from activities.failures import application_error
from activities.heartbeat import heartbeating
from adapters.mcp import ToolHub
from adapters.mcp.toolsets import SkillToolsets
from adapters.store import Store
from config.secrets import redact
from skills.errors import SkillNotFoundError, ToolCallError
from skills.naming import (
    CALL_TOOL,
    GET_SERVER_STATES,
    GET_TOOL_CATALOG,
    MANAGEMENT_TOOLS,
    REFRESH_TOOL_CATALOG,
    management_tool_problem,
)
from skills.run.catalog import (
    CatalogRequest,
    ServerState,
    SkillToolset,
    ToolCallInput,
    ToolCallOutput,
    ToolCatalog,
    ToolResult,
    ToolsetGrant,
)
from skills.run.plans import recall_names
from skills.run.recall import RecallRef, bounded, fill_markers
from skills.run.rehearsal import rehearsed
from skills.spec.mcpservers import ToolsetServer

MAX_RESULT_CHARS = 64_000
"""A tool result lands in workflow history (payloads are capped at 2 MB, histories at 50 MB): keep it modest."""


class ToolActivities:
    """The tool activities, bound to a started :class:`ToolHub`."""

    def __init__(self, hub: ToolHub, *, call_timeout: timedelta | None = None,
                 toolsets: SkillToolsets | None = None,
                 declared_toolsets: Callable[[], dict[str, dict[str, ToolsetServer]]] | None = None,
                 store: Store | None = None) -> None:
        """``call_timeout`` caps every call, on top of each server's own timeout. ``toolsets`` holds the
        sessions of skills' own MCP servers (SKILL.md ``toolsets``, shared with the Agent tier's
        activities); one is made when not given. ``declared_toolsets()`` reads the file skills'
        toolsets now, by skill, for the catalog."""
        self._hub = hub
        self._store = store
        """Where a Direct step's remembered results are read (``skills.run.recall``); None: such a step fails."""
        self._declared_toolsets = declared_toolsets
        self._call_timeout = call_timeout
        self.toolsets = toolsets or SkillToolsets(
            call_timeout=call_timeout.total_seconds() if call_timeout else 60.0, metrics=hub.metrics)

    @activity.defn(name=CALL_TOOL)
    async def call_tool(self, call: ToolCallInput) -> ToolCallOutput:
        """Call one MCP tool. An error result comes back as ``ok=False``; the workflow decides what it means."""
        started = time.monotonic()
        if call.tool in MANAGEMENT_TOOLS:  # a Direct step or a pre-flight check, whatever its stored row says
            raise application_error(ToolCallError(management_tool_problem(call.tool)))
        if call.recall is not None:
            texts = await asyncio.to_thread(self._recalled, call.recall)
            call = call.model_copy(update={"arguments": fill_markers(call.arguments, call.recall.nonce, texts)})
        try:
            # Long tool calls must heartbeat, or a heartbeat timeout would fail them and
            # cancellation would never reach them.
            async with heartbeating(call.step_id, call.tool):
                if call.toolsets is not None and call.toolsets.owner(call.tool) is not None:
                    # A skill's own toolset server: its tools' hints are not known here, so a rehearsal records.
                    result = rehearsed(call.arguments) if call.rehearsal else await self.toolsets.call(
                        call.toolsets, call.tool, call.arguments, timeout=self._timeout(),
                        idempotency_key=call.idempotency_key)
                elif call.rehearsal:
                    result = await self._hub.rehearse(call.tool, call.arguments, timeout=self._timeout(),
                                                      idempotency_key=call.idempotency_key,
                                                      record_only=call.record_only, closed_world=call.closed_world)
                else:
                    result = await self._hub.call(call.tool, call.arguments, timeout=self._timeout(),
                                                  idempotency_key=call.idempotency_key)
        except ToolCallError as exc:
            activity.logger.warning("tool %s (step %s) failed: %s", call.tool, call.step_id, exc)
            raise application_error(exc) from exc
        duration_ms = round((time.monotonic() - started) * 1000)
        if result.adjusted:
            activity.logger.info("tool %s (step %s): arguments adjusted: %s", call.tool, call.step_id,
                                 "; ".join(result.adjusted))
        activity.logger.info(
            "tool %s (step %s): %s in %d ms",
            call.tool,
            call.step_id,
            "ok" if result.ok else "error",
            duration_ms,
        )
        return ToolCallOutput(**_bounded(result).model_dump(), duration_ms=duration_ms)

    def _recalled(self, ref: RecallRef) -> list[str]:
        """The texts ``ref``'s markers stand for, read from the store now: each named skill's last delivered
        result, redacted and bounded (empty when it has none yet). Only names the skill's stored plan uses
        are read, whatever the input says."""
        if ref.skill_id == 0:  # a rehearsal of a skill not made yet: nothing remembered
            return ["" for _ in ref.names]
        try:
            if self._store is None:
                raise SkillNotFoundError("this worker has no store to read remembered results from")
            skill = self._store.skills.get_skill(ref.skill_id)
        except SkillNotFoundError as exc:
            raise application_error(ToolCallError(f"remembered results: {exc}")) from None
        planned = {name for step in skill.execution_plan or [] for name in recall_names(step.parameters)}
        unplanned = [name for name in ref.names if name not in planned]
        if unplanned:
            raise application_error(ToolCallError(
                f"remembered results: the plan of skill {skill.id} does not use {unplanned[0][:100]!r}"))
        return [bounded(redact(item.text)) if item.text is not None else ""
                for item in self._store.runs.remembered(skill, ref.names)]

    @activity.defn
    async def open_toolsets(self, grant: ToolsetGrant) -> list[str]:
        """Connect a skill's own toolset servers (kept open for its run) and name their tools, which join
        an Agent loop's sandbox. A server that cannot start fails this with its reason."""
        try:
            async with heartbeating(grant.skill, "connecting toolsets"):
                return [tool.name for tool in await self.toolsets.tools(grant)]
        except ToolCallError as exc:
            activity.logger.warning("toolsets of skill %s: %s", grant.skill, exc)
            raise application_error(exc) from exc

    @activity.defn(name=GET_TOOL_CATALOG)
    async def get_tool_catalog(self, request: CatalogRequest | None = None) -> ToolCatalog:
        """The live tool catalog: every tool of every connected server, first sentence of each description.

        A config file changed since the last look is applied first (within ``wait_seconds``).
        """
        wait, began = (request or CatalogRequest()).wait_seconds, time.monotonic()
        await self._hub.settle(wait)  # servers still on their first connect: their tools are wanted
        await self._hub.reload_config(wait=max(0.0, wait - (time.monotonic() - began)))
        return self._with_toolsets(self._hub.tool_catalog())

    @activity.defn(name=REFRESH_TOOL_CATALOG)
    async def refresh_tool_catalog(self, request: CatalogRequest | None = None) -> ToolCatalog:
        """Refresh now (config file, tool lists, failed servers), then answer as ``get_tool_catalog``."""
        await self._hub.refresh(wait=(request or CatalogRequest()).wait_seconds)
        return self._with_toolsets(self._hub.tool_catalog())

    @activity.defn(name=GET_SERVER_STATES)
    async def get_server_states(self, request: CatalogRequest | None = None) -> list[ServerState]:
        """Every configured server's state: not started (connects when first needed), connecting, connected, or
        failed and why. Asking starts no connect."""
        await self._hub.reload_config(wait=(request or CatalogRequest()).wait_seconds)
        return self._hub.server_states()

    def _with_toolsets(self, catalog: ToolCatalog) -> ToolCatalog:
        """``catalog`` with the file skills' own toolset servers, each under its skill."""
        if self._declared_toolsets is None:
            return catalog
        open_tools = self.toolsets.open_tools()
        worker = {state.name for state in catalog.servers}
        found = [SkillToolset(skill=skill, server=server, transport=config.transport,
                              connected=(skill, server) in open_tools, tools=open_tools.get((skill, server), []),
                              shadows=server in worker)
                 for skill, servers in sorted(self._declared_toolsets().items())
                 for server, config in servers.items()]
        return catalog.model_copy(update={"skill_toolsets": found})

    def _timeout(self) -> float | None:
        timeout = self._call_timeout.total_seconds() if self._call_timeout else None
        start_to_close = activity.info().start_to_close_timeout
        if start_to_close:
            # End the call a little before Temporal ends the attempt, so the failure says "ToolTimeoutError".
            cap = start_to_close.total_seconds() * 0.9
            timeout = cap if timeout is None else min(timeout, cap)
        return timeout


def _bounded(result: ToolResult) -> ToolResult:
    text, structured = result.text, result.structured
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + f"\n[... {len(result.text) - MAX_RESULT_CHARS} more characters cut]"
    if structured is not None and len(json.dumps(structured, default=str)) > MAX_RESULT_CHARS:
        structured = None
        text += "\n[structured content omitted: too large for workflow history]"
    return result.model_copy(update={"text": text, "structured": structured})
