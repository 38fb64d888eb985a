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
    from skills.run.arguments import ArgumentRules, PreparedArguments
    from skills.run.catalog import ServerState, ToolInfo, ToolResult


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


class Catalog(Protocol):
    """The tools offered now with their descriptions, schemas and annotations (destructive, read-only...)."""

    def catalog(self) -> list[ToolInfo]: ...


class ToolCatalog(ConnectingTools, Catalog, Protocol):
    """The catalog, and a wait for the servers still connecting that could add to it."""


class RegistrationTools(ToolCatalog, Protocol):
    """What a registration checks a skill against: the catalog's names, schemas and annotations, judged with the
    argument pipeline's rules."""

    rules: ArgumentRules


class OfferedTools(Catalog, ToolSender, Protocol):
    """The MCP tools a chat's router offers beside the engine's own, and their calls."""


class AgentTools(Catalog, Protocol):
    """What an Agent run or a chat turn is offered (``activities.chat.ToolRouter``: the MCP tools and the engine's
    own), and a call of one by name with the call's idempotency key."""

    async def send(self, name: str, arguments: dict[str, Any], *, idempotency_key: str = "") -> ToolResult: ...


class ServerStates(Protocol):
    """The MCP servers as the hub keeps them: their states, a wait for their first connects, a rehearsal's call
    (made only for a read-only tool, else recorded)."""

    def server_states(self) -> list[ServerState]: ...

    async def settle(self, timeout: float | None = None) -> bool: ...

    async def rehearse(self, tool_name: str, arguments: dict[str, Any], *, timeout: float | None = None,
                       idempotency_key: str = "", record_only: bool = False,
                       closed_world: bool = False) -> ToolResult: ...


class RunTools(ToolCatalog, ToolSender, Protocol):
    """What a run's bookkeeping needs of the tools: their annotations at its start, and a call to notify."""


class SkillPreparer(Protocol):
    """A definition normalized and validated as a registration does, against the live catalog, nothing stored
    (``activities.registration.RegistrationActivities`` does it)."""

    def prepare_skill(self, request: RegisterInput) -> Prepared: ...
