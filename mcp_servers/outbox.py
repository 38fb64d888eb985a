"""The outbox: an MCP server that keeps messages in a JSON-lines file.

It is the engine's default notification sink. Every message is one line of
``$SKILLS_OUTBOX_PATH`` (default ``.data/outbox.jsonl``)::

    {"id": "5f0c9a1e2b7d", "at": "2026-02-14T15:05:00.123456+00:00", "chat_id": null, "message": "..."}

Several processes may write at once (a worker restarted beside the old one, two
workers, the CLI), so every append holds an exclusive ``fcntl`` lock and writes its
line in one go; readers hold a shared lock and ignore anything that is not a whole line.

A call that carries an idempotency key (the engine's calls all do) is made once per key: the
key is kept beside the file (``outbox.keys.db``, :mod:`mcp_servers.once`) and written into the
message's line with the message itself, so a repeat finds the first message, even when the server
was killed between storing it and recording the key.

The worker runs it in its own process (:func:`build_server`, reached in memory through the MCP
client: no process to start, no JSON-RPC framing). On its own, run it with
``python -m mcp_servers.outbox`` (stdio), or
``python -m mcp_servers.outbox --transport streamable-http --port 8765``.
The engine names its tools ``outbox_send_message`` and ``outbox_list_messages``.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import uuid
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, BinaryIO

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from mcp_servers import run_server
from mcp_servers.once import ServedKeys, once

OUTBOX_PATH_ENV = "SKILLS_OUTBOX_PATH"
DEFAULT_OUTBOX_PATH = Path(".data/outbox.jsonl")
MAX_LIST_LIMIT = 500


class OutboxMessage(BaseModel):
    """One stored message."""

    id: str
    """Short random id, returned by ``send_message``."""
    at: datetime
    """When it was stored (UTC)."""
    chat_id: str | None = None
    """The conversation it is meant for; ``None`` means the default one."""
    message: str


class StoredMessage(OutboxMessage):
    """One message as its line holds it: with the idempotency key of the call that stored it, if any
    (the engine's calls carry one). Lines without a key stay as they were; listings never show it."""

    idempotency_key: str | None = None

    def line(self) -> str:
        return self.model_dump_json(exclude={"idempotency_key"} if self.idempotency_key is None else None)


class MessageList(BaseModel):
    """The answer of ``list_messages``."""

    messages: list[OutboxMessage]
    """Newest first."""


def outbox_path(environ: Mapping[str, str] | None = None) -> Path:
    """The file the outbox writes to, read from ``environ`` (the process's environment by default) on every
    call so tests can point it anywhere."""
    return Path((os.environ if environ is None else environ).get(OUTBOX_PATH_ENV) or DEFAULT_OUTBOX_PATH)


@contextmanager
def _locked(path: Path, mode: str, lock: int) -> Iterator[BinaryIO]:
    with open(path, mode) as file:
        fcntl.flock(file.fileno(), lock)
        try:
            yield file
        finally:
            fcntl.flock(file.fileno(), fcntl.LOCK_UN)


def append_message(path: Path, message: OutboxMessage) -> None:
    """Append one message as one whole line, safe against other writers."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = ((message.line() if isinstance(message, StoredMessage) else message.model_dump_json()) + "\n").encode()
    with _locked(path, "ab+", fcntl.LOCK_EX) as file:
        # A writer killed mid-line leaves a tail without a newline; start on a fresh
        # line so that our record is never glued to its fragment.
        if file.seek(0, os.SEEK_END) > 0:
            file.seek(-1, os.SEEK_END)
            if file.read(1) != b"\n":
                line = b"\n" + line
        _write_all(file.fileno(), line)
        os.fsync(file.fileno())


def _write_all(fd: int, data: bytes) -> None:
    # os.write may write less than asked (signals, full pipes on odd filesystems);
    # we hold the lock, so finishing the line in several writes is still atomic to readers.
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def keys_path(path: Path) -> Path:
    """Where the outbox at ``path`` keeps the idempotency keys it served: beside it."""
    return path.with_name(path.stem + ".keys.db")


def find_keyed(path: Path, key: str) -> StoredMessage | None:
    """The message stored by the call with idempotency key ``key``, if the file holds one."""
    if not path.exists():
        return None
    with _locked(path, "rb", fcntl.LOCK_SH) as file:
        for raw in file:
            # Every line parsed, no substring test first: a key as JSON writes it may differ from the key.
            if (message := _parse_line(raw)) is not None and message.idempotency_key == key:
                return message
    return None


def read_messages(path: Path, *, limit: int = 20, chat_id: str | None = None) -> list[OutboxMessage]:
    """The newest ``limit`` messages (newest first), optionally only those of one chat."""
    if not path.exists():
        return []
    newest: deque[StoredMessage] = deque(maxlen=limit)
    with _locked(path, "rb", fcntl.LOCK_SH) as file:
        for raw in file:
            message = _parse_line(raw)
            if message is not None and (chat_id is None or message.chat_id == chat_id):
                newest.append(message)
    # As listed: without the keys of the calls that stored them.
    return [OutboxMessage.model_validate(message.model_dump(exclude={"idempotency_key"})) for message in reversed(newest)]


def _parse_line(raw: bytes) -> StoredMessage | None:
    # Only whole, valid lines count: a fragment left by a killed writer is skipped, not fatal.
    if not raw.endswith(b"\n"):
        return None
    try:
        return StoredMessage.model_validate_json(raw)
    except ValueError:
        return None


SEND_DESCRIPTION = (
    "Send a message to the user by storing it in the outbox. "
    "Returns a short confirmation with the message id. "
    "Omit chat_id to reach the default conversation."
)
LIST_DESCRIPTION = "List the newest messages in the outbox, newest first. Filter by chat_id to see one conversation."


async def send_message(message: str, chat_id: str | None = None, ctx: Context | None = None, *,
                       environ: Mapping[str, str] | None = None) -> CallToolResult:
    """The ``send_message`` tool, on the outbox ``environ`` names (the process's environment by default)."""
    if not message.strip():
        raise ToolError("message is empty: give the text to send")
    path = outbox_path(environ)

    async def store(key: str | None) -> CallToolResult:
        stored = StoredMessage(id=uuid.uuid4().hex[:12], at=datetime.now(UTC), chat_id=chat_id, message=message,
                               idempotency_key=key)
        try:
            await asyncio.to_thread(append_message, path, stored)
        except OSError as exc:
            raise ToolError(f"could not write the outbox at {path}: {exc.strerror or exc}") from exc
        return _sent(stored)

    def recover(key: str) -> CallToolResult | None:
        found = find_keyed(path, key)
        return _sent(found) if found is not None else None

    return await once(ctx, ServedKeys.from_env(keys_path(path), environ), "send_message",
                      {"message": message, "chat_id": chat_id}, store, recover)


def _sent(stored: StoredMessage) -> CallToolResult:
    where = f"chat {stored.chat_id}" if stored.chat_id else "the default chat"
    return CallToolResult(
        content=[TextContent(type="text", text=f"Message {stored.id} stored in the outbox for {where}.")],
        structured_content=stored.model_dump(mode="json", exclude={"idempotency_key"}),
    )


async def list_messages(limit: int = 20, chat_id: str | None = None, *,
                        environ: Mapping[str, str] | None = None) -> MessageList:
    """The ``list_messages`` tool, on the outbox ``environ`` names."""
    if not 1 <= limit <= MAX_LIST_LIMIT:
        raise ToolError(f"limit must be between 1 and {MAX_LIST_LIMIT}, got {limit}")
    path = outbox_path(environ)
    try:
        # Off the event loop: in the worker's process it is the worker's loop, and the read waits on a lock.
        return MessageList(messages=await asyncio.to_thread(read_messages, path, limit=limit, chat_id=chat_id))
    except OSError as exc:
        raise ToolError(f"could not read the outbox at {path}: {exc.strerror or exc}") from exc


def build_server(environ: Mapping[str, str] | None = None) -> MCPServer:
    """The outbox server on the file and key window ``environ`` gives (``SKILLS_OUTBOX_PATH``,
    ``SKILLS_IDEMPOTENCY_WINDOW_HOURS``), read at every call; the process's environment by default.

    Every file and database call leaves the event loop, so a worker may run it in its own process."""
    outbox = MCPServer(
        "outbox",
        instructions="Stores messages for the user in a local outbox file; use send_message to notify the user.",
        # The engine's worker collects our stderr into its log; one INFO line per request is noise there.
        log_level="WARNING",
    )

    @outbox.tool(
        name="send_message",
        description=SEND_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                                    open_world_hint=False),
    )
    async def send(
        message: Annotated[str, Field(description="The text to deliver.")],
        chat_id: Annotated[
            str | None, Field(description="Conversation to deliver to; omit for the default.")
        ] = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, OutboxMessage]:
        return await send_message(message, chat_id, ctx, environ=environ)

    @outbox.tool(name="list_messages", description=LIST_DESCRIPTION,
                 annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
    async def listing(
        limit: Annotated[int, Field(description=f"How many messages to return (1 to {MAX_LIST_LIMIT}).")] = 20,
        chat_id: Annotated[str | None, Field(description="Only messages for this conversation.")] = None,
    ) -> MessageList:
        return await list_messages(limit, chat_id, environ=environ)

    return outbox


def main(argv: list[str] | None = None) -> None:
    run_server(build_server(), "mcp_servers.outbox", __doc__, 8765, argv)


if __name__ == "__main__":
    main()
