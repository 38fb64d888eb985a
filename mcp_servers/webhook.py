"""Webhook: an MCP server that posts messages to a Slack or Discord incoming webhook.

Environment (read on every call):

- ``WEBHOOK_URL``: the incoming webhook's URL (required; it is a secret, so it is never
  logged or echoed, only its host);
- ``WEBHOOK_FORMAT``: ``slack`` (``{"text": ...}``, also what Mattermost, Rocket.Chat and
  Google Chat accept), ``discord`` (``{"content": ...}``) or ``auto`` (the default: Discord
  for ``discord.com/api/webhooks/...`` URLs, Slack's shape for anything else).

- ``WEBHOOK_KEYS_PATH``: where the idempotency keys of the calls it served are kept
  (``.data/webhook.keys.db`` by default, :mod:`mcp_servers.once`): a call repeated with its key
  gets the first call's answer, and nothing is posted twice. The key also goes with every post
  as an ``Idempotency-Key`` header (a message in parts: ``<key>/<part>`` from the second part on),
  for a receiver that deduplicates too.

A message longer than the service accepts in one post (Discord: 2000 characters, Slack:
40000) is posted in parts, split at line breaks where possible. A refusal comes back as
a tool error with the service's status and answer.

Run it with ``python -m mcp_servers.webhook`` (stdio). The engine names its tool
``webhook_send_message``; in an ``mcpServers`` file::

    "webhook": {"command": "/path/to/.venv/bin/python", "args": ["-m", "mcp_servers.webhook"],
                "env": {"WEBHOOK_URL": "${SLACK_WEBHOOK_URL}"}}
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

import httpx2
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from mcp_servers import run_server
from mcp_servers.once import PartlyDone, ServedKeys, once
from mcp_servers.telegram import split_message
from skills.run.idempotency import HEADER

URL_ENV = "WEBHOOK_URL"
FORMAT_ENV = "WEBHOOK_FORMAT"
KEYS_PATH_ENV = "WEBHOOK_KEYS_PATH"
DEFAULT_KEYS_PATH = Path(".data/webhook.keys.db")
TIMEOUT = httpx2.Timeout(30.0)

Format = Literal["slack", "discord"]
LIMITS: dict[Format, int] = {"slack": 40_000, "discord": 2_000}
BODY_KEY: dict[Format, str] = {"slack": "text", "discord": "content"}


class Posted(BaseModel):
    """What ``send_message`` returns."""

    format: Format
    parts: int
    """How many posts the message took."""


def webhook_format(url: str, configured: str | None) -> Format:
    """The payload shape for ``url``: ``configured`` (slack, discord) unless it is empty or ``auto``."""
    choice = (configured or "auto").strip().lower()
    if choice in ("slack", "discord"):
        return choice  # type: ignore[return-value]
    if choice != "auto":
        raise ToolError(f"{FORMAT_ENV}={configured!r} is not one of slack, discord, auto")
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if host.endswith(("discord.com", "discordapp.com")) or parts.path.startswith("/api/webhooks/"):
        return "discord"
    return "slack"


server = MCPServer(
    "webhook",
    instructions="Posts messages to a chat channel's incoming webhook; use send_message to notify the user.",
    log_level="WARNING",
)


@server.tool(description="Post a message to the configured chat channel (Slack or Discord webhook). Long messages are posted in parts.")
async def send_message(
    message: Annotated[str, Field(description="The text to post.")],
    ctx: Context | None = None,
) -> Annotated[CallToolResult, Posted]:
    url = os.environ.get(URL_ENV, "").strip()
    if not url:
        raise ToolError(f"{URL_ENV} is not set: give the server the incoming webhook's URL")
    if not message.strip():
        raise ToolError("message is empty: give the text to post")
    kind = webhook_format(url, os.environ.get(FORMAT_ENV))
    host = urlsplit(url).hostname or "the webhook"
    parts = split_message(message, LIMITS[kind])

    async def post(key: str | None) -> CallToolResult:
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
            for index, part in enumerate(parts):
                # One key per post: a receiver that deduplicates must not take part 2 for a repeat of part 1.
                headers = {HEADER: key if index == 0 else f"{key}/{index + 1}"} if key else {}
                try:
                    await _post(http, url, {BODY_KEY[kind]: part}, host, sent=index, headers=headers)
                except ToolError as exc:
                    if index:  # parts were posted: a retry must not post them again
                        raise PartlyDone(str(exc)) from None
                    raise
        posted = Posted(format=kind, parts=len(parts))
        in_parts = f" in {len(parts)} parts" if len(parts) > 1 else ""
        return CallToolResult(
            content=[TextContent(type="text", text=f"Posted to the {kind} webhook at {host}{in_parts}.")],
            structured_content=posted.model_dump(),
        )

    keys = ServedKeys.from_env(Path(os.environ.get(KEYS_PATH_ENV) or DEFAULT_KEYS_PATH))
    return await once(ctx, keys, "send_message", {"message": message}, post)


async def _post(http: httpx2.AsyncClient, url: str, body: dict[str, str], host: str, *, sent: int,
                headers: dict[str, str]) -> None:
    already = f" ({sent} earlier parts were posted)" if sent else ""
    try:
        response = await http.post(url, json=body, headers=headers)
    except httpx2.HTTPError as exc:
        # The URL is the secret: name the error and the host, never the text that may quote the URL.
        raise ToolError(f"cannot reach the webhook at {host}: {type(exc).__name__}{already}") from None
    if response.is_success:
        return
    answer = " ".join(response.text.replace(url, "***").split())[:300] or response.reason_phrase
    hint = ""
    if response.status_code == 429:
        retry = response.headers.get("retry-after")
        hint = f"; retry after {retry} s" if retry else "; rate limited"
    elif response.status_code in (401, 403, 404, 410):
        hint = f"; is {URL_ENV} still a live webhook?"
    raise ToolError(f"the webhook at {host} refused the message: HTTP {response.status_code}: {answer}{hint}{already}")


def main(argv: list[str] | None = None) -> None:
    run_server(server, "mcp_servers.webhook", __doc__, 8767, argv)


if __name__ == "__main__":
    main()
