"""The tool catalog: the tools a hub's servers offer, kept current, and read by people and models grouped by
server, one sentence each."""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from adapters.mcp.servers import within
from skills import linear
from skills.run.catalog import CatalogEntry, ServerState, ToolCatalog, ToolHints, ToolInfo

if TYPE_CHECKING:
    from adapters.mcp.servers import ServerPool

logger = logging.getLogger(__name__)


class LiveCatalog:
    """The tools of a pool's connected servers, each named ``<server>_<tool>``, kept current without a restart.

    Every ``catalog_ttl`` seconds (None: never) the tools are listed again and failed servers retried; the
    config file is checked every ``config_poll`` seconds. The list is rebuilt only when a server's status or
    tools changed, so it is cheap to read often, and from another thread (the registration activity).
    """

    def __init__(self, servers: ServerPool, *, catalog_ttl: float | None, config_poll: float) -> None:
        self._servers = servers
        self._catalog_ttl = catalog_ttl
        self._config_poll = config_poll
        self.refreshed_at: datetime | None = None
        self._refreshed_mono = time.monotonic()
        self.refreshing: asyncio.Task[None] | None = None
        self.maintainer: asyncio.Task[None] | None = None
        self._key: tuple[object, ...] = ()
        self._tools: list[ToolInfo] = []
        self._names: frozenset[str] = frozenset()

    def tools(self) -> list[ToolInfo]:
        """Tools of the connected servers, in config order."""
        self._rebuild_if_changed()
        return list(self._tools)

    def names(self) -> frozenset[str]:
        self._rebuild_if_changed()
        return self._names

    def _rebuild_if_changed(self) -> None:
        self._servers.needed()  # a lazy start's first connects: a reader that wants them waits (settle, ...)
        sessions = list(self._servers.sessions.values())
        key = tuple((id(s), s.revision) for s in sessions)
        if key == self._key:
            return
        seen: set[str] = set()
        tools: list[ToolInfo] = []
        for session in sessions:
            if session.status != "connected":
                continue
            for tool in list(session.tools.values()):
                name = f"{session.name}_{tool.name}"
                if name in seen:  # server "a_b" tool "c" against server "a" tool "b_c": the first one wins
                    logger.warning("tool name %s is offered twice; keeping the first", name)
                    continue
                seen.add(name)
                tools.append(
                    ToolInfo(
                        name=name,
                        server=session.name,
                        tool=tool.name,
                        description=tool.description or "",
                        input_schema=tool.input_schema,
                        hints=_hints(tool.annotations),
                    )
                )
        # Several threads may rebuild at once; each publishes a complete, consistent result.
        self._tools, self._names, self._key = tools, frozenset(seen), key

    def grouped(self) -> ToolCatalog:
        """The catalog grouped by server (see :func:`build_catalog`), with every server's state."""
        return build_catalog(self.tools(), self._servers.states(), refreshed_at=self.refreshed_at,
                             config_error=self._servers.config_error)

    def keep_current(self) -> None:
        """Once the first connects have ended: the TTL counts from now, and the upkeep begins (when there is a
        TTL or a config file to follow)."""
        self._refreshed_mono = time.monotonic()
        if self.maintainer is None and (self._catalog_ttl or self._servers.source is not None):
            self.maintainer = asyncio.create_task(self._maintain(), name="mcp-catalog-maintainer")

    async def refresh(self, *, wait: float | None = None) -> bool:
        """Apply a changed config file, list every connected server's tools again, retry failed servers.

        Concurrent callers share one refresh. With ``wait``, return after at most that many
        seconds (the refresh goes on); True when it finished.
        """
        if self.refreshing is None or self.refreshing.done():
            self.refreshing = asyncio.create_task(self._refresh(), name="mcp-catalog-refresh")
        return await within(self.refreshing, wait)

    async def _refresh(self) -> None:
        await self._servers.reload_config()
        await asyncio.gather(*(s.refresh() for s in list(self._servers.sessions.values())))
        self.refreshed_at = datetime.now(UTC)
        self._refreshed_mono = time.monotonic()
        logger.info("MCP tool catalog refreshed: %s", self.grouped().summary)

    async def _maintain(self) -> None:
        """The background task: pick up config changes, and refresh the whole catalog every TTL."""
        while not self._servers.closed:
            due = (
                self._refreshed_mono + self._catalog_ttl - time.monotonic()
                if self._catalog_ttl
                else float("inf")
            )
            poll = self._config_poll if self._servers.source is not None else float("inf")
            await asyncio.sleep(max(0.0, min(poll, due)))
            try:
                if self._catalog_ttl and time.monotonic() >= self._refreshed_mono + self._catalog_ttl:
                    await self.refresh()
                else:
                    await self._servers.reload_config()
            except Exception:  # a bad moment must not end the upkeep for the worker's whole life
                logger.exception("keeping the MCP tool catalog fresh failed; trying again later")


def _hints(annotations: Any) -> ToolHints:
    """A tool's MCP annotations as the engine keeps them (a server may send none)."""
    if annotations is None:
        return ToolHints()
    return ToolHints(read_only=annotations.read_only_hint, destructive=annotations.destructive_hint,
                     idempotent=annotations.idempotent_hint, open_world=annotations.open_world_hint)


def build_catalog(
    tools: list[ToolInfo],
    states: list[ServerState],
    *,
    refreshed_at: datetime | None = None,
    config_error: str | None = None,
) -> ToolCatalog:
    """Group ``tools`` by server, each with the first sentence of its description, under a
    one-line summary (``"15 tools across 2 MCP servers"``); servers not connected are listed with why."""
    grouped: dict[str, list[CatalogEntry]] = {}
    for tool in tools:
        grouped.setdefault(tool.server, []).append(
            CatalogEntry(name=tool.name, description=first_sentence(tool.description), hints=tool.hints.words())
        )
    tool_count, server_count = len(tools), len(grouped)
    return ToolCatalog(
        summary=f"{tool_count} {_plural(tool_count, 'tool')} across {server_count} MCP {_plural(server_count, 'server')}",
        catalog=grouped,
        unavailable={s.name: s.reason or s.status for s in states if s.status != "connected"},
        servers=states,
        refreshed_at=refreshed_at,
        config_error=config_error,
    )


def _plural(count: int, word: str) -> str:
    return word if count == 1 else word + "s"


_SENTENCE_END = linear.compile(r"[.!?]\s")
"""A sentence's end and the space after it (a tool's description is its server's words: RE2, no lookbehind)."""


def first_sentence(text: str, *, limit: int = 200) -> str:
    """The first sentence of a description (up to the first paragraph break), on one line."""
    paragraph = text.strip().split("\n\n", 1)[0]
    flat = " ".join(paragraph.split())
    end = _SENTENCE_END.search(flat)
    sentence = flat if end is None else flat[:end.start() + 1]
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"
