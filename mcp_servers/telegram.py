"""Telegram: an MCP server that sends messages with the Bot API's ``sendMessage``.

Environment (read on every call, so a test or a restart-free rotation can change it):

- ``TELEGRAM_BOT_TOKEN``: the bot's token from @BotFather (required; never logged or echoed);
- ``TELEGRAM_API_BASE``: the Bot API's address, ``https://api.telegram.org`` by default
  (a local Bot API server, or a fake in tests);
- ``TELEGRAM_CHAT_ID``: the chat a call reaches when it names none (optional);
- ``TELEGRAM_ALLOWED_CHATS``: the chats a call may reach (comma-separated ids or @names);
  ``SKILLS_TELEGRAM_CHATS`` (the chats the adapter answers) when it is not set. The default
  chat is always allowed. A call naming any other chat is refused before anything is sent:
  the ``chat_id`` comes from a model or a plan, and a prompt injection would name its own.

- ``TELEGRAM_KEYS_PATH``: where the idempotency keys of the calls it served are kept
  (``.data/telegram.keys.db`` by default, :mod:`mcp_servers.once`): a call repeated with its key
  gets the first call's answer, and nothing is sent twice.

A message longer than Telegram's 4096 characters is sent as several, split at line
breaks where possible. Telegram's refusals (unknown chat, bad token, flood control)
come back as tool errors that say what Telegram said.

Run it with ``python -m mcp_servers.telegram`` (stdio). The engine names its tool
``telegram_send_message`` (the name plans and notifications use); in an ``mcpServers`` file::

    "telegram": {"command": "/path/to/.venv/bin/python", "args": ["-m", "mcp_servers.telegram"],
                 "env": {"TELEGRAM_BOT_TOKEN": "${TELEGRAM_BOT_TOKEN}",
                         "TELEGRAM_ALLOWED_CHATS": "${SKILLS_TELEGRAM_CHATS}"}}
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import httpx2
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from mcp_servers import run_server
from mcp_servers.once import PartlyDone, ServedKeys, once

TOKEN_ENV = "TELEGRAM_BOT_TOKEN"
API_BASE_ENV = "TELEGRAM_API_BASE"
CHAT_ID_ENV = "TELEGRAM_CHAT_ID"
ALLOWED_CHATS_ENV = "TELEGRAM_ALLOWED_CHATS"
ADAPTER_CHATS_ENV = "SKILLS_TELEGRAM_CHATS"
KEYS_PATH_ENV = "TELEGRAM_KEYS_PATH"
DEFAULT_KEYS_PATH = Path(".data/telegram.keys.db")
DEFAULT_API_BASE = "https://api.telegram.org"
MAX_MESSAGE_CHARS = 4096
"""Telegram's limit for one message's text."""
TIMEOUT = httpx2.Timeout(30.0)


class SentMessage(BaseModel):
    """What ``send_message`` returns."""

    chat_id: str
    message_ids: list[int]
    """One per part: a long message is sent as several."""


def split_message(text: str, limit: int = MAX_MESSAGE_CHARS) -> list[str]:
    """``text`` in parts of at most ``limit`` characters, cut after a line break where there is one."""
    parts: list[str] = []
    while len(text) > limit:
        cut = text.rfind("\n", 0, limit) + 1 or limit
        parts.append(text[:cut])
        text = text[cut:]
    return [*parts, text] if text or not parts else parts


def allowed_destinations(environ: Mapping[str, str]) -> list[str]:
    """The chats a call may reach: TELEGRAM_ALLOWED_CHATS (else SKILLS_TELEGRAM_CHATS), and the default chat."""
    listed = environ.get(ALLOWED_CHATS_ENV) or environ.get(ADAPTER_CHATS_ENV) or ""
    chats = [part.strip() for part in listed.split(",") if part.strip()]
    default = environ.get(CHAT_ID_ENV, "").strip()
    return list(dict.fromkeys([*chats, *([default] if default else [])]))


def _same_chat(chat: str) -> str:
    return chat.lower() if chat.startswith("@") else chat  # Telegram's @names ignore case


def _destination_problem(chat: str, allowed: list[str]) -> str | None:
    if not allowed:
        return (f"no chat is an allowed destination: set {ALLOWED_CHATS_ENV} (comma-separated chat ids), "
                f"{ADAPTER_CHATS_ENV} or {CHAT_ID_ENV} in this server's env")
    if _same_chat(chat) in {_same_chat(c) for c in allowed}:
        return None
    names = ", ".join(allowed[:-1]) + " and " + allowed[-1] if len(allowed) > 1 else allowed[0]
    return (f"chat_id '{chat}' is not an allowed destination: this server sends only to {names} "
            f"({ALLOWED_CHATS_ENV}, or {ADAPTER_CHATS_ENV}, and {CHAT_ID_ENV})")


def _redact(text: str, token: str) -> str:
    return text.replace(token, "***") if token else text


server = MCPServer(
    "telegram",
    instructions="Sends Telegram messages through a bot; use send_message to notify the user.",
    log_level="WARNING",
)


@server.tool(
    description=(
        "Send a message to a Telegram chat. "
        "Omit chat_id to reach the configured default chat; only the owner's allowed chats can be reached. "
        "Long messages are sent in parts."
    )
)
async def send_message(
    message: Annotated[str, Field(description="The text to send.")],
    chat_id: Annotated[
        str | None,
        Field(description="Chat id (a number such as 123456789 or -100...) or @channelname; omit for the default."),
    ] = None,
    parse_mode: Annotated[
        Literal["HTML", "MarkdownV2", "Markdown"] | None,
        Field(description="How Telegram formats the text; plain text when omitted."),
    ] = None,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, SentMessage]:
    token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise ToolError(f"{TOKEN_ENV} is not set: give the server the bot's token from @BotFather")
    chat = (chat_id or os.environ.get(CHAT_ID_ENV, "")).strip()
    if not chat:
        raise ToolError(f"no chat_id given and {CHAT_ID_ENV} is not set: say which chat to send to")
    if not message.strip():
        raise ToolError("message is empty: give the text to send")
    refused = _destination_problem(chat, allowed_destinations(os.environ))
    if refused is not None:
        raise ToolError(refused)

    base = (os.environ.get(API_BASE_ENV) or DEFAULT_API_BASE).rstrip("/")

    async def send(_key: str | None) -> CallToolResult:
        ids: list[int] = []
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
            for part in split_message(message):
                body: dict[str, Any] = {"chat_id": chat, "text": part}
                if parse_mode:
                    body["parse_mode"] = parse_mode
                try:
                    ids.append(await _send(http, f"{base}/bot{token}/sendMessage", body, token, sent=len(ids)))
                except ToolError as exc:
                    if ids:  # parts were sent: a retry must not send them again
                        raise PartlyDone(str(exc)) from None
                    raise
        sent = SentMessage(chat_id=chat, message_ids=ids)
        parts = f" in {len(ids)} parts" if len(ids) > 1 else ""
        return CallToolResult(
            content=[TextContent(type="text", text=f"Sent to Telegram chat {chat}{parts} (message {ids[0]}).")],
            structured_content=sent.model_dump(),
        )

    keys = ServedKeys.from_env(Path(os.environ.get(KEYS_PATH_ENV) or DEFAULT_KEYS_PATH))
    return await once(ctx, keys, "send_message", {"message": message, "chat_id": chat, "parse_mode": parse_mode},
                      send)


async def _send(http: httpx2.AsyncClient, url: str, body: dict[str, Any], token: str, *, sent: int) -> int:
    """POST one sendMessage; the message id, or a ToolError saying what went wrong (without the token)."""
    already = f" ({sent} earlier parts were sent)" if sent else ""
    try:
        response = await http.post(url, json=body)
    except httpx2.HTTPError as exc:
        # The URL holds the token, and some transport errors quote it.
        reason = _redact(str(exc) or type(exc).__name__, token)
        raise ToolError(f"cannot reach the Telegram Bot API: {type(exc).__name__}: {reason}{already}") from None
    try:
        answer = response.json()
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise ToolError(f"unexpected answer from the Telegram Bot API: HTTP {response.status_code}{already}")
    if answer.get("ok") is True and isinstance(answer.get("result"), dict):
        return int(answer["result"].get("message_id", 0))
    code = answer.get("error_code", response.status_code)
    description = _redact(str(answer.get("description") or "no description"), token)
    hint = ""
    if code == 401:
        hint = f"; check {TOKEN_ENV}"
    elif code == 429:
        retry_after = (answer.get("parameters") or {}).get("retry_after")
        hint = f"; Telegram asks to retry after {retry_after} s" if retry_after is not None else ""
    elif code == 400 and "chat not found" in description.lower():
        hint = "; has the user started a chat with the bot (or added it to the group)?"
    raise ToolError(f"Telegram refused the message ({code}): {description}{hint}{already}")


def main(argv: list[str] | None = None) -> None:
    run_server(server, "mcp_servers.telegram", __doc__, 8766, argv)


if __name__ == "__main__":
    main()
