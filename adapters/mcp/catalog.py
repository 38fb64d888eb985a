"""The tool catalog as people and models read it: tools grouped by server, one sentence each."""

from __future__ import annotations

from datetime import datetime

from skills import linear
from skills.run.catalog import CatalogEntry, ServerState, ToolCatalog, ToolInfo


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
