"""The tool hub's ports (``activities.ports``) over fixed tools, for tests that drive an activity object alone:
its catalog, the names in it, no server ever connecting, the default argument rules, and calls answered by a
function the test gives (none given: a call fails the test). ``servers`` stands in for the hub's MCP servers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Iterable
from typing import Any

from skills.run.arguments import ArgumentRules
from skills.run.catalog import ServerState, ToolInfo, ToolResult

Answer = Callable[..., Awaitable[ToolResult]]


class FixedTools:
    def __init__(self, tools: Iterable[ToolInfo | str] = (), call: Answer | None = None) -> None:
        """``tools``: each a ``ToolInfo``, or a name (``<server>_<tool>``) with nothing more said of it."""
        self.tools = [tool if isinstance(tool, ToolInfo) else ToolInfo(name=tool, server=tool.partition("_")[0],
                                                                      tool=tool.partition("_")[2]) for tool in tools]
        self.answer = call
        self.rules = ArgumentRules()

    def catalog(self) -> list[ToolInfo]:
        return list(self.tools)

    def tool_names(self) -> frozenset[str]:
        return frozenset(tool.name for tool in self.tools)

    def waited_for_connects(self, tools: Collection[str] | None = None, timeout: float | None = None) -> bool:
        return False  # no server is connecting

    async def call(self, tool_name: str, arguments: dict[str, Any], *, timeout: float | None = None,
                   idempotency_key: str = "") -> ToolResult:
        if self.answer is None:
            raise AssertionError(f"this test calls no tool ({tool_name})")
        return await self.answer(tool_name, arguments, idempotency_key=idempotency_key)

    async def send(self, name: str, arguments: dict[str, Any], *, idempotency_key: str = "") -> ToolResult:
        """A chat router's call (``activities.ports.AgentTools``), the same as the hub's here."""
        return await self.call(name, arguments, idempotency_key=idempotency_key)


class FixedServers:
    """The hub's MCP servers as fixed states: nothing to wait for, and a rehearsal's calls recorded, not made."""

    def __init__(self, states: list[ServerState]) -> None:
        self.states = states

    def server_states(self) -> list[ServerState]:
        return list(self.states)

    async def settle(self, timeout: float | None = None) -> bool:
        return True

    async def rehearse(self, tool_name: str, arguments: dict[str, Any], *, timeout: float | None = None,
                       idempotency_key: str = "", record_only: bool = False, closed_world: bool = False) -> ToolResult:
        raise AssertionError(f"this test rehearses no call ({tool_name})")
