"""The stdio transport of a fetch, with every answer capped (:class:`AnswerCap`): the MCP SDK's reads whole
lines, so a server could answer with gigabytes; this one refuses past the cap.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from adapters.mcp_skills.wire import SkillResource

MAX_LIST_ANSWER_BYTES = 32 * 1024 * 1024
"""The most bytes any message of the server may take while no file is being read (a ``skills/list``
page, say): 100 skills of 512 files each, as the extension lists them, take about 10 MiB."""


class AnswerCap:
    """How many bytes the server's next message may take, read by :meth:`stdio_client`: the declared
    size of the file being read (:meth:`allowing`), else :data:`MAX_LIST_ANSWER_BYTES`. A message past it
    is never held: the bytes past the cap are read and dropped up to its end, and the request waiting for
    it gets an error instead (the MCP SDK's own transport holds a line whole, however long)."""

    def __init__(self) -> None:
        self.limit = MAX_LIST_ANSWER_BYTES
        self._reading = False
        self._declared = 0
        self._request: Any = None
        """The id of the request sent while a file is being read: the one an over-long answer answers."""

    @contextmanager
    def allowing(self, resource: SkillResource) -> Iterator[None]:
        """While ``resource`` is read: its declared size as JSON text at worst (a control character
        escaped as six bytes), with the envelope and the URI around it."""
        self._declared = resource.size
        self.limit, self._reading, self._request = 6 * resource.size + 6 * len(resource.uri) + 4096, True, None
        try:
            yield
        finally:
            self.limit, self._reading, self._request = MAX_LIST_ANSWER_BYTES, False, None

    def sent(self, message: Any) -> None:
        if self._reading and getattr(message, "method", None) == "resources/read":
            self._request = message.id

    def refusal(self) -> str:
        """The JSON-RPC error line that answers the request in flight in place of an over-long answer."""
        import json

        declared = f", more than a file declared as {self._declared:,} bytes can take" if self._reading else ""
        return json.dumps({"jsonrpc": "2.0", "id": self._request, "error": {
            "code": -32603, "message": f"the server's answer is over {self.limit:,} bytes{declared}: "
                                       "it was not read further"}})

    def stdio_client(self, server: Any, errlog: Any) -> Any:
        """A stdio transport as the SDK's ``stdio_client``, whose reader keeps this cap."""
        return _capped_stdio_client(server, errlog, self)


@asynccontextmanager
async def _capped_stdio_client(server: Any, errlog: Any, cap: AnswerCap) -> AsyncIterator[Any]:
    # The SDK's stdio_client (mcp 2.x), but for the reader: it reads bytes, and holds at most cap.limit
    # of a line. Its helpers are the SDK's, so the process is started and stopped as the SDK does.
    import anyio
    import anyio.lowlevel
    from mcp.client import stdio
    from mcp.shared.message import SessionMessage

    command = await stdio._get_executable_command(server.command)  # noqa: SLF001
    process = await stdio._create_platform_compatible_process(  # noqa: SLF001
        command=command, args=server.args, env=stdio.get_default_environment() | (server.env or {}),
        errlog=errlog, cwd=server.cwd)
    read_stream_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_stream_reader = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()

    async def deliver(line: bytes | str) -> bool:
        try:
            await read_stream_writer.send(stdio._parse_line(line if isinstance(line, str)  # noqa: SLF001
                                                            else line.decode("utf-8", "replace")))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        return True

    async def stdout_reader() -> None:
        assert process.stdout
        try:
            async with read_stream_writer:
                try:
                    held: list[bytes] = []
                    size = 0
                    dropping = False
                    async for chunk in process.stdout:
                        while chunk:
                            line, newline, chunk = chunk.partition(b"\n")
                            if not dropping:
                                held.append(line)
                                size += len(line)
                                if size > cap.limit:
                                    held, size, dropping = [], 0, True
                                    if not await deliver(cap.refusal()):
                                        return
                            if newline:
                                if not dropping and not await deliver(b"".join(held)):
                                    return
                                held, size, dropping = [], 0, False
                finally:
                    await stdio._drain_stdout(process)  # noqa: SLF001
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError):
            pass  # the transport is closing; the session sees the read stream end

    async def stdin_writer() -> None:
        assert process.stdin
        try:
            async with write_stream_reader:
                async for session_message in write_stream_reader:
                    cap.sent(session_message.message)
                    json = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((json + "\n").encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_stream_writer.aclose()
        finally:
            writer_done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stdout_reader)
        tg.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                read_stream.close()
                write_stream.close()
                with anyio.move_on_after(0.5):
                    await writer_done.wait()
                await stdio._stop_server_process(process)  # noqa: SLF001
                await stdio._aclose_all(read_stream, write_stream, read_stream_writer,  # noqa: SLF001
                                        write_stream_reader)
                await anyio.lowlevel.checkpoint()
            tg.cancel_scope.cancel()
