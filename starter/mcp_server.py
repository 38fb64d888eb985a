"""`skills mcp`: the management tools as an MCP server, so any MCP client can create and manage skills.

    skills mcp                                       stdio (what Claude Desktop and most clients start)
    skills mcp --http [--host H] [--port P]          streamable HTTP at http://H:P/mcp, bearer token required
    skills mcp --http --no-auth                      the same without a token, on a loopback host only
    python -m starter.mcp_server ...                 the same options, without the rest of the CLI

The tools are the management tools of ``skills.management.manual.TOOLS`` (``get_tool_catalog``,
``memory_store_skill``, ``memory_update_skill``, ``memory_list_skills``, ``memory_get_skill``,
``memory_next_fires``, ``memory_delete_skill``, ``emit_event``) and the owner's answers of
``OWNER_TOOLS`` (``list_approvals``, ``approve``, ``deny``). Each goes through the
:class:`SkillsClient`, so a change takes the registration road (RegisterSkill or
ChangeSkill: normalizer, validation, store, schedule) and a read is an activity
on the worker. The server keeps no state and never opens the database.

Arguments reach the engine exactly as the model sent them. The advertised schemas
describe the canonical shape, but nothing is dropped or coerced here: a root-level
``cron``, ``toolName`` in a plan or tool names as a JSON string are the normalizer's
to fix, and its notes say what it did. A refusal is an error result that lists every
field problem as ``field: message``, so the model can correct itself in its next call.

The MCP server stack (``mcp.server``, uvicorn) is imported inside the functions that
use it: it takes about half a second to import, and ``skills`` builds its commands from
this module for every command.
"""

from __future__ import annotations

import hmac
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from pydantic import ConfigDict

from adapters.skill_folders import discover
from client import SkillsClient
from client.management import Handler, ManagementTools, answering
from skills.errors import UsageError
from skills.management.manual import CHAT_ONLY_TOOLS, INSTRUCTIONS, OWNER_TOOLS, SCHEMAS, TOOLS
from skills.skillmd.manifest import SourceName
from starter import exit_process
from starter.command import (
    CONTEXT_SETTINGS,
    Globals,
    current,
    prepare_process,
    process_command,
    refuse_json,
    run_command,
    serve_until_stopped,
)

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.tools import Tool

log = logging.getLogger("skills.mcp")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8770
TOKEN_ENV = "SKILLS_MCP_TOKEN"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def build_server(skills: SkillsClient, *, token: str | None = None,
                 skill_folders: Mapping[SourceName, Path] | None = None) -> MCPServer:
    """The management tools as an MCP server; with ``token``, streamable HTTP wants it as a bearer token.
    With ``skill_folders``, it publishes the SKILL.md skills of those folders (the MCP Skills extension)."""
    from adapters.mcp_skills import Publisher, skills_server
    from client.trust import trust_states

    folders = dict(skill_folders or {})
    tools = ManagementTools(skills)
    return skills_server(
        # Each entry says whether the owner's worker trusts what the skill runs (docs/mcp-server.md).
        Publisher(lambda: discover(**folders), trust=lambda found: trust_states(skills, [s.name for s in found])),
        name="skills",
        title="Skills engine",
        instructions=INSTRUCTIONS,
        tools=[_tool(name, answering(name, getattr(tools, name))) for name in [*TOOLS, *OWNER_TOOLS]
               if name not in CHAT_ONLY_TOOLS],
        log_level="WARNING",
        **_bearer_auth(token),
    )


def _tool(name: str, handler: Handler) -> Tool:
    """A tool whose arguments reach ``handler`` as sent, as one dict, under a hand-written schema.

    MCPServer derives a tool's arguments from the function's signature and drops any
    field it does not declare; the normalizer is there to read exactly those fields
    (``cron`` at the root, ``requiredTools``...), so the arguments model keeps them all.
    """
    from mcp.server.mcpserver.tools import Tool
    from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
    from mcp_types import ToolAnnotations

    class Arguments(ArgModelBase):
        model_config = ConfigDict(extra="allow")

        def model_dump_one_level(self) -> dict[str, Any]:
            return {"fields": dict(self.model_extra or {})}

    title, description, hints = TOOLS[name] if name in TOOLS else OWNER_TOOLS[name]
    return Tool(fn=handler, name=name, title=title, description=description, parameters=SCHEMAS[name],
                fn_metadata=FuncMetadata(arg_model=Arguments), is_async=True, annotations=ToolAnnotations(**hints))


# --- bearer token ---------------------------------------------------------------------------


class StaticTokenVerifier:
    """The SDK's TokenVerifier for one shared secret (``--token`` or ``$SKILLS_MCP_TOKEN``)."""

    def __init__(self, token: str) -> None:
        self._token = token.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        from mcp.server.auth.provider import AccessToken

        # Constant time, so the token cannot be guessed byte by byte from response times.
        if not hmac.compare_digest(token.encode(), self._token):
            return None
        return AccessToken(token=token, client_id="skills-mcp", scopes=[])


def _bearer_auth(token: str | None) -> dict[str, Any]:
    if token is None:
        return {}
    from mcp.server.auth.settings import AuthSettings

    # AuthSettings wants an issuer, but a static token has no authorization server: with no
    # resource_server_url and no provider, nothing publishes this URL.
    settings = AuthSettings(issuer_url="http://localhost", resource_server_url=None)
    return {"auth": settings, "token_verifier": StaticTokenVerifier(token)}


# --- the command ----------------------------------------------------------------------------


@click.command("mcp", context_settings=CONTEXT_SETTINGS,
               short_help="The management tools as an MCP server (stdio or HTTP).")
@click.option("--http", is_flag=True, help="Serve streamable HTTP instead of stdio.")
@click.option("--host", metavar="HOST", default=DEFAULT_HOST, show_default=True, help="The HTTP host to listen on.")
@click.option("--port", metavar="PORT", type=click.IntRange(1, 65535), default=DEFAULT_PORT, show_default=True,
              help="The HTTP port.")
@click.option("--token", metavar="TOKEN", help=f"The bearer token HTTP clients must send (default: ${TOKEN_ENV}).")
@click.option("--no-auth", is_flag=True, help="Serve HTTP without a token (loopback hosts only).")
@process_command
def mcp_command(http: bool, host: str, port: int, token: str | None, no_auth: bool) -> int:
    """The management tools (memory_store_skill, ...) as an MCP server, over stdio or streamable
    HTTP with a bearer token. Exit 1 if Temporal is down, 2 on options that cannot work."""
    refuse_json("mcp")
    options = ServeOptions(http=http, host=host, port=port, token=token, no_auth=no_auth)
    try:
        bearer = _http_token(options)
    except UsageError as e:
        raise click.UsageError(str(e)) from None
    globals_ = current()
    # stderr only (and the SDK's own log lines too): on stdio, stdout is the protocol.
    prepare_process(globals_.settings(), long_running=True)
    return serve_until_stopped(lambda: _serve(options, bearer, globals_))


@dataclass
class ServeOptions:
    http: bool = False
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    token: str | None = None
    no_auth: bool = False


def _http_token(args: ServeOptions) -> str | None:
    """The token HTTP requires; refuse options that would serve HTTP unprotected off loopback."""
    if args.token and args.no_auth:
        raise UsageError("--token and --no-auth exclude each other")
    if not args.http:
        if args.token or args.no_auth:
            raise UsageError("--token and --no-auth apply to --http only")
        return None
    if args.no_auth:
        if args.host not in LOOPBACK_HOSTS:
            raise UsageError(f"--no-auth is only allowed on a loopback host ({', '.join(LOOPBACK_HOSTS)}), "
                             f"not {args.host}: give a token")
        return None
    token = args.token or os.environ.get(TOKEN_ENV)
    if not token:
        raise UsageError(f"streamable HTTP needs a bearer token: --token or ${TOKEN_ENV} "
                         "(or --no-auth, on a loopback host)")
    return token


async def _serve(args: ServeOptions, token: str | None, globals_: Globals) -> None:
    task_queue = globals_.queue
    skills = await SkillsClient.connect(task_queue=task_queue, address=globals_.address,
                                        namespace=globals_.namespace, by="mcp")
    server = build_server(skills, token=token, skill_folders=globals_.settings().skill_folders())
    if not args.http:
        log.info("serving the skills management tools on stdio (task queue %s)", task_queue)
        await server.run_stdio_async()
        return
    import uvicorn

    host = f"[{args.host}]" if ":" in args.host else args.host
    log.info("serving the skills management tools at http://%s:%d/mcp (task queue %s, %s)", host, args.port,
             task_queue, "bearer token required" if token else "no authentication")
    # Bound so that a client holding a stream open cannot keep a stopping server alive.
    config = uvicorn.Config(server.streamable_http_app(host=args.host), host=args.host, port=args.port,
                            log_level="warning", timeout_graceful_shutdown=5)
    await uvicorn.Server(config).serve()


def run(argv: list[str] | None = None) -> int:
    return run_command(mcp_command, argv, "python -m starter.mcp_server")


def main(argv: list[str] | None = None) -> None:
    exit_process(run(argv))


if __name__ == "__main__":
    main()
