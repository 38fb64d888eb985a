"""What the activities need of the world, each a small typed port: the wiring hands them an object that does it
(the MCP tool hub, ``adapters.mcp.ToolHub``, does all of these), never one of its bound methods, so a reader
(or a type checker) follows a call from an activity to the adapter that answers it.

The Temporal client's ports are adapters' own: ``adapters.engine_workflows.EngineWorkflows`` and
``adapters.schedules.ScheduleWriter``.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from skills.messages.manage import Prepared, RegisterInput
    from skills.run.arguments import PreparedArguments
    from skills.run.catalog import ToolInfo, ToolResult


class ToolNames(Protocol):
    """The tools the worker's MCP servers offer now (``<server>_<tool>``)."""

    def tool_names(self) -> Collection[str]: ...


class ConnectingTools(ToolNames, Protocol):
    """The tools offered now, and a wait for servers still connecting (their tools are about to be offered)."""

    def waited_for_connects(self, tools: Collection[str] | None = None, timeout: float | None = None) -> bool: ...


class ToolSender(Protocol):
    """A call of one MCP tool, with the run's idempotency key sent along (a server that honours it acts once)."""

    async def call(self, tool_name: str, arguments: dict[str, Any], *, timeout: float | None = None,
                   idempotency_key: str = "") -> ToolResult: ...


class ArgumentPreparer(Protocol):
    """A tool's arguments put through the engine's pipeline (the references a skill may not name, resolved)."""

    async def prepare(self, tool_name: str, arguments: dict[str, Any]) -> PreparedArguments: ...


class ToolCatalog(ConnectingTools, Protocol):
    """The tools offered now with their descriptions and annotations (which are destructive, read-only...)."""

    def catalog(self) -> list[ToolInfo]: ...


class RunTools(ToolCatalog, ToolSender, Protocol):
    """What a run's bookkeeping needs of the tools: their annotations at its start, and a call to notify."""


class SkillPreparer(Protocol):
    """A definition normalized and validated as a registration does, against the live catalog, nothing stored
    (``activities.registration.RegistrationActivities`` does it)."""

    def prepare_skill(self, request: RegisterInput) -> Prepared: ...
