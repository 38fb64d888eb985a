"""`skills console`: the owner's console, a web page over the engine (docs/console.md).

    skills console [--host 127.0.0.1] [--port 8771] [--token TOKEN]

It wants the owner's token, the one `skills mcp --http` wants (``--token`` or ``$SKILLS_MCP_TOKEN``), and
listens on loopback unless told otherwise. The HTTP stack (Starlette, uvicorn, Jinja2) is imported when the
command runs, not when `skills` lists its commands.
"""

from __future__ import annotations

import logging
import os
import sys
from zoneinfo import ZoneInfo

import click

from starter.command import (
    CONTEXT_SETTINGS,
    Globals,
    current,
    prepare_process,
    process_command,
    refuse_json,
    serve_until_stopped,
)
from starter.mcp_server import LOOPBACK_HOSTS, TOKEN_ENV

log = logging.getLogger("skills.console")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8771


@click.command("console", context_settings=CONTEXT_SETTINGS,
               short_help="The owner's web console: the week, approvals, failures.")
@click.option("--host", metavar="HOST", default=DEFAULT_HOST, show_default=True,
              help="The host to listen on (loopback unless you mean it).")
@click.option("--port", metavar="PORT", type=click.IntRange(1, 65535), default=DEFAULT_PORT, show_default=True,
              help="The HTTP port.")
@click.option("--token", metavar="TOKEN", help=f"The owner's token, as `skills mcp --http` wants it (default: "
                                               f"${TOKEN_ENV}).")
@process_command
def console_command(host: str, port: int, token: str | None) -> int:
    """A web page for the owner: the week's fires, what waits for your yes (Approve and Deny do what
    `skills approve` and `skills deny` do), what went wrong, and each skill. It wants the owner's token
    (the one `skills mcp --http` wants). Exit 1 if Temporal is down, 2 without a token."""

    refuse_json("console")
    token = token or os.environ.get(TOKEN_ENV)
    if not token:
        raise click.UsageError(f"the console needs the owner's token: --token or ${TOKEN_ENV}")
    globals_ = current()
    prepare_process(globals_.settings(), long_running=True)
    return serve_until_stopped(lambda: _serve(host, port, token, globals_))


async def _serve(host: str, port: int, token: str, globals_: Globals) -> None:
    import uvicorn

    from client import SkillsClient
    from service.console.app import build_app

    skills = await SkillsClient.connect(task_queue=globals_.queue, address=globals_.address,
                                        namespace=globals_.namespace, by="console")
    settings = globals_.settings()
    app = build_app(skills, token, zone=ZoneInfo(settings.timezone), settings=settings)
    shown = f"[{host}]" if ":" in host else host
    log.info("the console at http://%s:%d/ (task queue %s)%s", shown, port, globals_.queue,
             "" if host in LOOPBACK_HOSTS else "; listening beyond loopback: serve it behind TLS")
    print(f"the console at http://{shown}:{port}/ (sign in with the owner's token)", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=5)
    await uvicorn.Server(config).serve()
