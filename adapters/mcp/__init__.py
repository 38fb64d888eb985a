"""The worker's MCP client side: the servers' config, one warm session per server, and the hub.

- :mod:`adapters.mcp.config`: the ``mcpServers`` file (:func:`load_mcp_config`,
  :class:`McpConfigSource`), ``${VAR}`` expansion, the bundled outbox server and
  the argument rules (:func:`load_argument_rules`).
- :mod:`adapters.mcp.catalog`: the catalog kept current (:class:`LiveCatalog`: the TTL, the
  config file's polling) and as people and models read it (:func:`build_catalog`, :func:`first_sentence`).
- :mod:`adapters.mcp.servers`: :class:`ServerPool`, every server's session and its lifecycle (the
  first connects, lazy or not; failed servers retried; the config file's changes applied; a call
  retried once on a broken session).
- :mod:`adapters.mcp.session`: one server's session, owned by its own task, and
  how its failures are described; :mod:`adapters.mcp.stderr`, a stdio server's stderr
  in the log.
- :mod:`adapters.mcp.hub`: :class:`ToolHub`, the one the worker holds: a pool and its catalog,
  and calls routed by ``<server>_<tool>`` through the argument pipeline.

The activities that use the hub are in :mod:`activities.tools`.
"""

from adapters.mcp.catalog import build_catalog, first_sentence
from adapters.mcp.config import (
    McpConfigSource,
    McpServerConfig,
    load_argument_rules,
    load_mcp_config,
    outbox_server,
)
from adapters.mcp.hub import ToolHub

__all__ = [
    "McpConfigSource",
    "McpServerConfig",
    "ToolHub",
    "build_catalog",
    "first_sentence",
    "load_argument_rules",
    "load_mcp_config",
    "outbox_server",
]
