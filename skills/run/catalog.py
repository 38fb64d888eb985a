"""What the tool side says across workflow and activity boundaries: tool calls, results, the catalog.

Plain pydantic models, apart from the MCP machinery in ``adapters.mcp``, so a
client (the CLI, ``skills mcp``) and workflows can use them without importing it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from skills.run.recall import RecallRef
from skills.spec.mcpservers import ToolsetServer, Transport


class ToolHints(BaseModel):
    """What a server says of its tool (MCP's tool annotations): hints, not guarantees; None: not said."""

    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = None

    def words(self) -> list[str]:
        """The hints as ``skills catalog`` shows them: ``read-only``, ``destructive``, ... (what was said)."""
        said = [("read-only", self.read_only), ("destructive", self.destructive and not self.read_only),
                ("idempotent", self.idempotent), ("open world", self.open_world)]
        return [word for word, value in said if value]

    @property
    def destructive_said(self) -> bool:
        """The server says the tool is destructive: ``destructiveHint: true``, and not read-only.

        MCP reads an absent ``destructiveHint`` as true when ``readOnlyHint`` is false; the engine does not:
        most servers send no annotations at all, and a hint is the server's word, not a guarantee, so
        only an explicit ``true`` counts (docs/approvals.md#destructive-tools)."""
        return self.destructive is True and self.read_only is not True


class ToolInfo(BaseModel):
    """One tool as the engine names it."""

    name: str
    """``<server>_<tool>``, the name skills and LLMs use."""
    server: str
    tool: str
    """The name the server itself uses."""
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=dict)
    hints: ToolHints = Field(default_factory=ToolHints)
    """The server's annotations of the tool (``readOnlyHint``, ``destructiveHint``, ...)."""


def destructive_tools(tools: list[str], catalog: list[ToolInfo], exempt: Collection[str] = ()) -> list[str]:
    """Those of ``tools`` the catalog says are destructive (:attr:`ToolHints.destructive_said`), less
    ``exempt`` (a skill's ``approval_exempt_tools``), in ``tools``' order."""
    said = {tool.name for tool in catalog if tool.hints.destructive_said}
    return [t for t in dict.fromkeys(tools) if t in said and t not in exempt]


ServerStatus = Literal["not started", "connecting", "connected", "failed", "closed"]
"""``not started``: configured, no connect tried yet (a worker's hub connects its servers when first needed);
``connecting``: its connect is under way; ``connected``; ``failed`` (``reason`` says why); ``closed``: gone for good."""

PENDING: frozenset[ServerStatus] = frozenset({"not started", "connecting"})
"""Not connected yet, and not failed: the server's tools are still to come."""

NOT_STARTED = "connects when first needed"
"""The ``reason`` of a server ``not started`` in a hub that connects when first needed."""


class ServerState(BaseModel):
    """How one configured server is doing."""

    name: str
    transport: Transport
    status: ServerStatus
    reason: str | None = None
    """Why it failed (secrets from ``${VAR}`` are masked), or when it will connect (:data:`NOT_STARTED`)."""
    tools: int = 0
    timeout: float | None = None
    """Seconds a call of its tools may take."""
    since: datetime | None = None
    """When it entered this status."""


class ToolResult(BaseModel):
    """The answer of one tool call."""

    ok: bool
    """False when the server flagged the result as an error (``isError``)."""
    text: str = ""
    """The text content blocks, joined by newlines."""
    structured: dict[str, Any] | None = None
    """The structured content, when the tool returns one."""
    adjusted: list[str] = Field(default_factory=list)
    """What the argument pipeline changed before the call, in words (``'limit': "10" → 10``)."""
    change: dict[str, Any] | None = None
    """A management tool that changed a skill says what (action, id, name, when it fires next)."""
    rehearsed: bool = False
    """A rehearsal recorded the call instead of making it (``ToolHub.rehearse``)."""
    arguments: dict[str, Any] | None = None
    """A rehearsed call's arguments as they would have been sent (after the argument pipeline)."""

    @property
    def is_error(self) -> bool:
        return not self.ok


class CatalogEntry(BaseModel):
    name: str
    description: str
    """First sentence of the tool's description."""
    hints: list[str] = Field(default_factory=list)
    """What its server says of it: ``read-only``, ``destructive``, ``idempotent``, ``open world``."""


class SkillToolset(BaseModel):
    """One MCP server of a SKILL.md's ``toolsets``: not the worker's, connected only while its skill runs."""

    skill: str
    server: str
    transport: Transport
    connected: bool = False
    """A session is open now (its skill ran lately); otherwise it is connected at the skill's next run."""
    tools: list[str] = Field(default_factory=list)
    """Its tools (``<server>_<tool>``), known while a session is open."""
    shadows: bool = False
    """The worker has a server of the same name: for this skill's runs, ``<server>_*`` is this one."""


class ToolCatalog(BaseModel):
    """What ``get_tool_catalog`` returns: a summary line, tools grouped by server, and how every server is doing."""

    summary: str
    """For example ``"142 tools across 8 MCP servers"``."""
    catalog: dict[str, list[CatalogEntry]]
    """Tools grouped by server."""
    unavailable: dict[str, str] = Field(default_factory=dict)
    """Servers that are configured but not connected, and why."""
    servers: list[ServerState] = Field(default_factory=list)
    """Every configured server, in config order, with its state."""
    refreshed_at: datetime | None = None
    """When the tools were last listed by a full refresh (TTL or on demand); None: only at start."""
    config_error: str | None = None
    """Why the changed config file was not applied (the servers of the last good one keep running)."""
    skill_toolsets: list[SkillToolset] = Field(default_factory=list)
    """The file skills' own servers (SKILL.md ``toolsets``), by skill: their tools serve that skill's runs only."""

    def tool_names(self) -> set[str]:
        return {entry.name for entries in self.catalog.values() for entry in entries}


class ToolsetGrant(BaseModel):
    """A SKILL.md skill's ``toolsets``, granted to one of its runs (or to a chat turn that matched it): MCP
    servers connected for that skill alone, whose tools (``<server>_<tool>``) join that sandbox only.

    By reference: the skill, its servers' names and a digest of their config, never the config itself.
    The worker reads the config from the SKILL.md in its own folders and refuses a grant whose digest does
    not match (the file changed since the run began, or the grant is forged), so no payload says what runs.
    """

    skill: str
    servers: list[str] = Field(default_factory=list)
    """The names of the skill's toolset servers."""
    digest: str = ""
    """:func:`toolsets_digest` of the skill's ``toolsets`` when the grant was made."""

    @model_validator(mode="before")
    @classmethod
    def _by_reference(cls, data: Any) -> Any:
        # A grant in flight from before grants were by reference carries whole entries: keep their names and
        # digest (so a run whose file did not change goes on), and drop the rest: it is never run from here.
        if isinstance(data, dict) and isinstance(data.get("servers"), dict):
            data = {key: value for key, value in data.items() if key != "folder"}
            entries = data["servers"]
            data["servers"] = list(entries)
            data.setdefault("digest", toolsets_digest(entries))
        return data

    def owner(self, tool: str) -> str | None:
        """The server of this grant that ``tool`` (``<server>_<tool>``) belongs to, if any."""
        return next((server for server in self.servers if tool.startswith(server + "_")), None)


def toolsets_digest(servers: Mapping[str, Any]) -> str:
    """The digest of a ``toolsets`` block (server name -> entry, as a model or as the SKILL.md has it): the
    same for the same servers however they are written; an entry that is not valid digests as written."""
    canonical: dict[str, Any] = {}
    for name, entry in servers.items():
        try:
            server = entry if isinstance(entry, ToolsetServer) else ToolsetServer.model_validate(entry)
            canonical[name] = server.model_dump(mode="json", exclude_defaults=True)
        except ValidationError:
            canonical[name] = {"invalid": json.dumps(entry, sort_keys=True, default=str)}
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def upgraded_grant(data: Any, skill_field: str) -> Any:
    """A payload written before grants (``toolsets`` a bare mapping of servers, ``skill_folder`` beside it)
    in today's shape, so a run in flight across a worker upgrade replays and retries: no servers is no
    grant, else a grant of the skill named by ``skill_field`` (a dotted path into ``data``), by reference."""
    if not isinstance(data, dict) or "skill_folder" not in data and not _bare_servers(data.get("toolsets")):
        return data
    data = dict(data)
    servers, _folder = data.pop("toolsets", None) or {}, data.pop("skill_folder", None)
    skill: Any = data
    for part in skill_field.split("."):
        skill = skill.get(part) if isinstance(skill, dict) else None
    data["toolsets"] = {"skill": skill or "?", "servers": servers} if servers else None
    return data


def _bare_servers(value: Any) -> bool:
    return isinstance(value, dict) and not ({"skill", "servers"} <= value.keys())


def granted(grants: list[ToolsetGrant], tool: str) -> ToolsetGrant | None:
    """The grant whose servers own ``tool``: a skill's own server comes before the worker's of that name."""
    return next((grant for grant in grants if grant.owner(tool) is not None), None)


class ToolCallInput(BaseModel):
    """One tool call of a run."""

    tool: str
    """``<server>_<tool>``."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    step_id: str = ""
    """The plan step (or LLM tool-call id) this call belongs to; for logs and heartbeats."""
    idempotency_key: str = ""
    """Sent to the server with the call (``skills.run.idempotency``), the same on every retry; empty: none."""
    toolsets: ToolsetGrant | None = None
    """The run's skill's SKILL.md ``toolsets``, by reference: a tool one of them owns is called on that server,
    connected for that skill from its SKILL.md; None for most skills."""
    recall: RecallRef | None = None
    """A Direct step's remembered results (``{{last.result}}``, ``{{skill:NAME.last}}``), by reference: the
    activity reads them from the store and fills the arguments' markers (``skills.run.recall``)."""
    rehearsal: bool = False
    """A rehearsal's call: made only when its tool is read-only (``ToolHub.rehearse``), else recorded."""
    record_only: bool = False
    """A rehearsal's call that needs the owner's approval in a real run: recorded, read-only or not."""
    closed_world: bool = False
    """A rehearsal's call made only if its tool is read-only and says ``openWorldHint: false``."""

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        return upgraded_grant(data, "skill")


class ToolCallOutput(ToolResult):
    """The tool's result and how long the call took."""

    duration_ms: int


class CatalogRequest(BaseModel):
    """Options of ``get_tool_catalog`` and ``refresh_tool_catalog`` (all optional)."""

    wait_seconds: float = 20.0
    """How long a refresh (or a changed config file) may hold the answer back while servers
    connect; servers still connecting then are shown as ``connecting``. Below the client's 30 s."""
