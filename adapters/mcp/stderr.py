"""A stdio MCP server's stderr: every line to the worker's log (secrets redacted), the last few
kept to explain a server that failed to start."""

from __future__ import annotations

import asyncio
import logging
import os
from collections import deque
from collections.abc import Callable
from contextlib import suppress

logger = logging.getLogger(__name__)


class StderrTail:
    """A stdio server's stderr: each line goes to the log, the last few explain a failed start."""

    def __init__(self, server: str, redact: Callable[[str], str]) -> None:
        self._server = server
        self._redact = redact
        self.lines: deque[str] = deque(maxlen=12)
        read_fd, write_fd = os.pipe()
        self.sink = os.fdopen(write_fd, "w")
        """Handed to the child as its stderr."""
        self._source = os.fdopen(read_fd, "rb")
        self._pump: asyncio.Task[None] | None = None
        self._transport: asyncio.ReadTransport | None = None

    async def start(self) -> None:
        reader = asyncio.StreamReader()
        loop = asyncio.get_running_loop()
        self._transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), self._source
        )
        self._pump = asyncio.create_task(self._read(reader), name=f"mcp-stderr-{self._server}")

    async def _read(self, reader: asyncio.StreamReader) -> None:
        while line := await reader.readline():
            text = self._redact(line.decode(errors="replace").rstrip())
            if text:
                self.lines.append(text)
                logger.info("[%s] %s", self._server, text)

    def child_started(self) -> None:
        # The child holds its own copy now; closing ours lets the reader see EOF when the child exits.
        if not self.sink.closed:
            self.sink.close()

    async def finish(self, wait: float) -> None:
        """Read what the (now stopped) child left, at most ``wait`` seconds, then release the pipe."""
        self.child_started()
        if self._pump is not None:
            with suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._pump), wait)
            self._pump.cancel()
        if self._transport is not None:
            self._transport.close()

    def tail(self) -> str:
        return " | ".join(list(self.lines)[-3:])
