"""One MCP server's connection settings: an entry of an ``mcpServers`` config.

Pure data, shared by the worker's MCP config (``adapters/mcp/config.py``) and a SKILL.md's
``toolsets`` (``skills/skillmd/manifest.py``): one shape, one set of rules.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from skills.spec.limits import TOOLSET_TIMEOUT_SECONDS

BUNDLED = ("outbox", "telegram", "webhook")
"""The engine's own MCP servers (the ``mcp_servers`` package)."""

Transport = Literal["stdio", "http", "in-process"]
"""How a server is reached: a process of its own over stdio, a URL, or (a bundled server the worker runs
itself) in the worker's own process."""


class McpServerConfig(BaseModel):
    """One entry of ``mcpServers``: a stdio command or a streamable-HTTP URL.

    Values may contain ``${VAR}`` (or ``${VAR:-default}``) in ``args``, ``env``, ``url``
    and ``headers``. They stay unexpanded here, so tokens never reach Temporal payloads
    or logs; they are read from the environment each time the server is connected.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["stdio", "http", "streamable-http", "streamableHttp"] | None = None
    """The transport, as some desktop clients write it; otherwise inferred from ``command`` or ``url``."""
    command: str | None = None
    """Executable that starts a stdio server."""
    args: list[str] = Field(default_factory=list)
    """Arguments of ``command``."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment of the stdio server (PATH, HOME and the like are inherited)."""
    cwd: Path | None = None
    """Working directory of the stdio server."""
    url: str | None = None
    """Endpoint of a streamable-HTTP server, e.g. ``http://127.0.0.1:8000/mcp``."""
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers sent with every request, e.g. ``{"Authorization": "Bearer ${API_TOKEN}"}``."""
    timeout: float | None = Field(default=None, gt=TOOLSET_TIMEOUT_SECONDS.low, le=TOOLSET_TIMEOUT_SECONDS.high,
                                  allow_inf_nan=False)
    """Seconds one call of this server's tools may take; the hub's ``call_timeout`` by default.
    A call is also bounded by its activity's start-to-close timeout (``SKILLS_TOOL_CALL_TIMEOUT``)."""

    trust_hints: bool = False
    """Whether a chat proposal's rehearsal may act on this server's ``readOnlyHint: true`` before the owner
    answers: the owner vouches that its read-only tools only read (docs/chat-confirmation.md). Without it
    such a rehearsal records every call of this server's tools and makes none. The bundled servers
    (``mcp_servers``) are the engine's own and trusted without it."""

    @property
    def hints_trusted(self) -> bool:
        return self.trust_hints or self.bundled

    @property
    def bundled(self) -> bool:
        """A bundled server of the engine (``python -m mcp_servers.outbox``, ``.telegram``, ``.webhook``)."""
        return self.command is not None and self.args[:2] in (["-m", f"mcp_servers.{name}"] for name in BUNDLED)

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either `command` (a stdio server) or `url` (a streamable-HTTP server)")
        if self.command is not None and (self.headers or self.type not in (None, "stdio")):
            raise ValueError("`headers` and an HTTP `type` need `url`, not `command`")
        if self.url is not None and (self.args or self.env or self.cwd or self.type == "stdio"):
            raise ValueError("`args`, `env`, `cwd` and type 'stdio' need `command`, not `url`")
        return self

    @property
    def transport(self) -> Transport:
        return "stdio" if self.command is not None else "http"


class ToolsetServer(McpServerConfig):
    """One server of a SKILL.md's ``toolsets``: an ``mcpServers`` entry, read from the skill's file only
    (never from a payload), started in the worker's sandbox (docs/skill-files.md#toolsets)."""

    network: bool = True
    """Whether a stdio server's sandbox has the network (``false``: no interface but loopback)."""
