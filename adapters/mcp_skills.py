"""The MCP Skills extension (SEP-2640, ``io.modelcontextprotocol/skills``): serving the engine's
SKILL.md skills, and fetching a server's skills to install them.

The wire, as the extension defines it (base protocol 2026-07-28):

- a server declares ``capabilities.extensions["io.modelcontextprotocol/skills"]``;
- ``skills/list`` (paginated) answers ``{"skills": [entry, ...], "nextCursor"?}`` and ``skills/get``
  (``{"uri"}``) answers ``{"skill": entry}``, an unknown URI an ``INVALID_PARAMS`` error;
- an entry is ``{"uri": "skill://<skill-path>/SKILL.md", "frontmatter": {...verbatim...},
  "resources": [{"uri", "digest": "sha256:<hex>", "size"}, ...] | "dynamic"}``: the last segment
  of the skill path is the skill's name, and every file of the skill, SKILL.md included, is listed
  with the digest and size of its bytes;
- every file is an ordinary resource, read with ``resources/read``.

Serving (:class:`Publisher`) reads the skills of this machine's folders (as ``skills list --files``
does) at every request, so a skill installed while the server runs is served at once. A skill's
files are those of its folder, walked without following a link out of it; hidden files (the
installer's ``.install.json`` among them) and ``__pycache__`` are not served. Serving reads bytes
and nothing else: a toolset's command or a script of a served skill is a file like any other, never
run. Fetching (:func:`fetch_skills`) checks every entry and every byte against its digest before
anything is written; the installer then checks the skills as it checks any source.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
import math
import mimetypes
import os
import stat
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import date, datetime, time
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote, unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field

from adapters.folders import control_part
from adapters.skill_files import read_text
from adapters.skill_folders import executable_parts
from skills.errors import FrontmatterError, SkillFileError, SkillsError
from skills.skillmd import Catalog, SkillFile
from skills.skillmd.limits import DEFAULT_LIMITS
from skills.skillmd.parsing import parse_frontmatter
from skills.skillmd.trust import TrustState, trust_state
from skills.spec.limits import describe

if TYPE_CHECKING:
    from mcp import Client

log = logging.getLogger(__name__)

EXTENSION_ID = "io.modelcontextprotocol/skills"
SCHEME = "skill"
MAX_FILES = 512
"""Files one skill may have to be served or fetched (the limit FastMCP's implementation keeps too)."""
MAX_BYTES = 16 * 1024 * 1024
"""Bytes one skill's files may hold in all."""
CHUNK = 64 * 1024
"""Bytes read at a time to digest a served file."""
PAGE_SIZE = 100
"""Skills in one ``skills/list`` page."""
MAX_PAGES = 100
"""Pages a fetch reads before it stops: a server whose cursor never ends cannot hold an install."""


def _never_trusted(skill: SkillFile) -> TrustState:
    """``skill``'s trust as its folder holds it now, with no record of its owner's."""
    return trust_state(skill, None, parts=executable_parts(skill))


class SkillExchangeError(SkillsError):
    """A skill that cannot be served or fetched as the extension says, with the reason."""


# --- the wire -----------------------------------------------------------------------------------


class SkillResource(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    uri: str
    digest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    size: int = Field(ge=0)


class SkillEntry(BaseModel):
    """One skill as ``skills/list`` and ``skills/get`` give it."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    uri: str
    frontmatter: dict[str, Any]
    resources: list[SkillResource] | Literal["dynamic"]
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


def skill_uri(path: str, file: str = "SKILL.md") -> str:
    """``skill://<path>/<file>``, each segment percent-encoded as a URI path wants it."""
    return f"{SCHEME}://" + "/".join(quote(part, safe="") for part in [*path.split("/"), *file.split("/")])


def uri_parts(uri: str) -> tuple[str, ...]:
    """The decoded segments of a ``skill://`` URI (its authority is the first); refused if it is not one,
    or if a segment is empty, ``.``, ``..`` or holds a separator."""
    parsed = urlsplit(uri)
    if parsed.scheme.lower() != SCHEME or not parsed.netloc or parsed.query or parsed.fragment:
        raise SkillExchangeError(f"'{uri}' is not a skill:// URI")
    raw = [parsed.netloc, *parsed.path.split("/")[1:]]
    parts = tuple(unquote(part) for part in raw)
    for part in parts:
        if part in ("", ".", "..") or "/" in part or "\\" in part or "\0" in part:
            raise SkillExchangeError(f"'{uri}' has a segment that is empty, '.', '..' or holds a separator")
    return parts


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


# --- serving ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _File:
    relative: str
    path: Path
    size: int
    digest: str


TRUST_META = "io.github.skills-engine/trust"
"""The key of an entry's ``_meta`` that says whether its owner trusts what the skill runs here:
``{"status": "untrusted", "runs": false}`` (a status of :class:`~skills.skillmd.trust.TrustState`)."""
TRUST_TIMEOUT = 10.0
"""Seconds the worker may take to say the served skills' trust; past it, they are marked as never trusted."""

TrustReader = Callable[[list[SkillFile]], Awaitable[Mapping[str, TrustState]]]


class Publisher:
    """The skills of a catalog, as the extension serves them. ``catalog`` is called at every request;
    ``trust``, when given, says each skill's trust as the owner's worker holds it (:meth:`refresh`)."""

    def __init__(self, catalog: Callable[[], Catalog], trust: TrustReader | None = None) -> None:
        self._catalog = catalog
        self._trust_reader = trust
        self._trust: dict[str, TrustState] = {}
        self._digests: dict[Path, tuple[tuple[int, int, int], str]] = {}
        """Digest of each file served, by path, kept while its stamp (mtime, size, inode) holds."""

    async def refresh(self) -> None:
        """Read the served skills' trust again, before entries are given out. A skill the worker does
        not know, or all of them when it cannot be asked, counts as never trusted: one that runs
        something is marked untrusted, one that runs nothing needs no trust."""
        if self._trust_reader is None:
            return
        skills = list(self._catalog().skills.values())
        try:
            async with asyncio.timeout(TRUST_TIMEOUT):
                known = dict(await self._trust_reader(skills))
        except Exception as exc:  # noqa: BLE001 - whatever keeps the worker from answering, the same mark
            log.warning("the served skills' trust could not be read (%s): each is marked as never trusted", exc)
            known = {}
        self._trust = {skill.name: known.get(skill.name) or await asyncio.to_thread(_never_trusted, skill)
                       for skill in skills}

    def entries(self) -> list[SkillEntry]:
        """Every servable skill's entry, by URI; a skill that cannot be served is left out (and logged)."""
        found = []
        for skill in self._catalog().skills.values():
            try:
                found.append(self.entry(skill))
            except SkillExchangeError as exc:
                log.warning("skill %s is not served: %s", skill.name, exc)
        return sorted(found, key=lambda entry: entry.uri)

    def entry(self, skill: SkillFile) -> SkillEntry:
        uri = skill_uri(skill.name)
        try:
            whole = uri_parts(uri) == (skill.name, "SKILL.md")
        except SkillExchangeError:
            whole = False
        if not whole:
            # Discovery keeps a name that breaks the spec (with a warning): no URI may be made of it,
            # or it would be one the extension's own parser refuses, or another skill's.
            raise SkillExchangeError(f"its name {skill.name!r} is not one segment of a skill:// URI")
        files = self._files(skill)
        state = self._trust.get(skill.name)
        return SkillEntry(
            uri=uri,
            frontmatter=_frontmatter(skill.path),
            resources=[SkillResource(uri=skill_uri(skill.name, f.relative), digest=f.digest, size=f.size)
                       for f in files],
            meta={TRUST_META: {"status": state.status, "runs": state.runs}} if state is not None else None,
        )

    def find(self, uri: str) -> SkillEntry | None:
        """The entry whose SKILL.md URI is ``uri``."""
        try:
            parts = uri_parts(uri)
        except SkillExchangeError:
            return None
        if len(parts) != 2 or parts[1] != "SKILL.md":
            return None
        skill = self._catalog().get(parts[0])
        return self.entry(skill) if skill is not None else None

    def read(self, uri: str) -> tuple[bytes, str] | None:
        """A served file's bytes and MIME type, or None when ``uri`` names no file of a served skill."""
        try:
            parts = uri_parts(uri)
        except SkillExchangeError:
            return None
        skill = self._catalog().get(parts[0]) if len(parts) >= 2 else None
        if skill is None:
            return None
        relative = "/".join(parts[1:])
        for f in self._files(skill):
            if f.relative == relative:
                data = _read_capped(f.path, f.size)
                if len(data) != f.size or digest_of(data) != f.digest:
                    raise SkillExchangeError(f"{relative} changed while it was read")
                return data, _mime_type(relative)
        return None

    def directory(self, uri: str) -> list[dict[str, Any]] | None:
        """``resources/directory/read``: the files and folders directly inside a skill's folder or one
        of its sub-folders (``skill://name`` or ``skill://name/references``), or None."""
        try:
            parts = uri_parts(uri.rstrip("/"))
        except SkillExchangeError:
            return None
        skill = self._catalog().get(parts[0])
        if skill is None:
            return None
        prefix = "/".join(parts[1:])
        children: dict[str, dict[str, Any]] = {}
        for f in self._files(skill):
            if prefix and not f.relative.startswith(prefix + "/"):
                continue
            rest = f.relative[len(prefix) + 1:] if prefix else f.relative
            head, _, tail = rest.partition("/")
            path = f"{prefix}/{head}" if prefix else head
            if tail:
                children.setdefault(head, {"uri": skill_uri(skill.name, path) + "/", "name": head,
                                           "mimeType": "inode/directory"})
            else:
                children[head] = {"uri": skill_uri(skill.name, path), "name": head,
                                  "mimeType": _mime_type(head), "size": f.size}
        if prefix and not children:
            return None
        return [children[name] for name in sorted(children)]

    def _files(self, skill: SkillFile) -> list[_File]:
        found = _walk(skill.folder)
        # Counted and sized from the walk before a byte is read: a skill over the bound is refused from
        # its sizes, whatever they are (a 1 GiB file was read whole to digest it).
        if len(found) > MAX_FILES:
            raise SkillExchangeError(f"it has more than {MAX_FILES} files")
        if sum(stamp[1] for _, _, stamp in found) > MAX_BYTES:
            raise SkillExchangeError(f"its files hold more than {describe(MAX_BYTES)}")
        files = []
        for relative, path, stamp in found:
            cached = self._digests.get(path)
            if cached is None or cached[0] != stamp:
                cached = (stamp, _digest_capped(path, stamp[1]))
                self._digests[path] = cached
            files.append(_File(relative, path, stamp[1], cached[1]))
        return files


def _digest_capped(path: Path, size: int) -> str:
    """The digest of the ``size`` bytes the walk saw, read a chunk at a time: a file that holds more or
    fewer by now changed since, and is not served."""
    hasher = hashlib.sha256()
    read = 0
    with path.open("rb") as stream:
        while chunk := stream.read(min(CHUNK, size + 1 - read)):
            read += len(chunk)
            if read > size:
                break
            hasher.update(chunk)
    if read != size:
        raise SkillExchangeError(f"{path.name} changed while it was read")
    return "sha256:" + hasher.hexdigest()


def _read_capped(path: Path, size: int) -> bytes:
    """At most ``size`` + 1 bytes of ``path``: enough to tell that it grew."""
    with path.open("rb") as stream:
        return stream.read(size + 1)


def _hidden(relative: tuple[str, ...]) -> bool:
    return any(part.startswith(".") or part == "__pycache__" for part in relative)


def _walk(folder: Path) -> list[tuple[str, Path, tuple[int, int, int]]]:
    """Each regular file under ``folder`` by its path relative to it, with its stamp: hidden files and
    folders and ``__pycache__`` left out; a link is followed only to a file inside ``folder`` that is not
    one of those (a link to ``.install.json`` or ``.git/config`` would serve what the walk leaves out)."""
    root = folder.resolve()
    found = []
    for top, dirs, names in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        for name in sorted(names):
            if name.startswith("."):
                continue
            path = Path(top) / name
            try:
                real = path.resolve(strict=True)
                info = real.stat()
            except (OSError, RuntimeError):
                continue
            if not stat.S_ISREG(info.st_mode) or not real.is_relative_to(root) or _hidden(
                    real.relative_to(root).parts):
                continue
            relative = path.relative_to(folder).as_posix()
            found.append((relative, path, (info.st_mtime_ns, info.st_size, info.st_ino)))
    return sorted(found)


def _frontmatter(skill_md: Path) -> dict[str, Any]:
    """The SKILL.md's frontmatter as written, in JSON's types (a YAML date becomes its ISO text)."""
    try:
        data, _ = parse_frontmatter(read_text(skill_md, DEFAULT_LIMITS.max_file_bytes))
    except (FrontmatterError, SkillFileError) as exc:
        raise SkillExchangeError(str(exc)) from None
    return _json_value(data)


def _json_value(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _mime_type(name: str) -> str:
    if name.endswith(".md"):
        return "text/markdown"
    guessed, _ = mimetypes.guess_type(name)
    return guessed or "application/octet-stream"


def build_extension(publisher: Publisher) -> Any:
    """The server side: an ``mcp`` :class:`Extension` that declares the skills extension and answers
    ``skills/list``, ``skills/get`` and ``resources/directory/read`` from ``publisher``."""
    import mcp_types
    from mcp.server.extension import Extension, MethodBinding
    from mcp.shared.exceptions import MCPError
    from mcp_types import INVALID_PARAMS
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    versions = frozenset(MODERN_PROTOCOL_VERSIONS)

    class ListSkillsParams(mcp_types.PaginatedRequestParams):
        pass

    class GetSkillParams(mcp_types.RequestParams):
        uri: str

    class DirectoryParams(mcp_types.RequestParams):
        uri: str

    class ListSkillsResult(mcp_types.PaginatedResult):
        skills: list[dict[str, Any]]

    class GetSkillResult(mcp_types.Result):
        skill: dict[str, Any]

    class DirectoryResult(mcp_types.Result):
        resources: list[dict[str, Any]]

    def wire(entry: SkillEntry) -> dict[str, Any]:
        return entry.model_dump(mode="json", by_alias=True, exclude_none=True)

    async def list_skills(_ctx: Any, params: ListSkillsParams) -> ListSkillsResult:
        await publisher.refresh()
        entries = publisher.entries()
        start = _page_start(params.cursor, len(entries))
        if start is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Invalid cursor: {params.cursor}")
        end = start + PAGE_SIZE
        return ListSkillsResult(skills=[wire(e) for e in entries[start:end]],
                                next_cursor=_cursor(end) if end < len(entries) else None)

    async def get_skill(_ctx: Any, params: GetSkillParams) -> GetSkillResult:
        await publisher.refresh()
        try:
            entry = publisher.find(params.uri)
        except (SkillExchangeError, OSError) as exc:
            raise MCPError(code=INVALID_PARAMS, message=f"Skill {params.uri} cannot be served: {exc}") from None
        if entry is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown skill URI: {params.uri}")
        return GetSkillResult(skill=wire(entry))

    async def read_directory(_ctx: Any, params: DirectoryParams) -> DirectoryResult:
        try:
            children = publisher.directory(params.uri)
        except (SkillExchangeError, OSError) as exc:
            raise MCPError(code=INVALID_PARAMS, message=f"Skill directory {params.uri} cannot be served: "
                                                        f"{exc}") from None
        if children is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown skill directory: {params.uri}")
        return DirectoryResult(resources=children)

    class SkillsExtension(Extension):
        identifier = EXTENSION_ID

        def methods(self) -> Sequence[MethodBinding]:
            return (
                MethodBinding("skills/list", ListSkillsParams, list_skills, protocol_versions=versions),
                MethodBinding("skills/get", GetSkillParams, get_skill, protocol_versions=versions),
                MethodBinding("resources/directory/read", DirectoryParams, read_directory,
                              protocol_versions=versions),
            )

    return SkillsExtension()


def skills_server(publisher: Publisher, **options: Any) -> Any:
    """An ``MCPServer`` (``options`` as its own) that declares the skills extension and serves every
    file of every served skill through ``resources/read``; ``resources/list`` lists each SKILL.md, for
    clients that look for ``skill://.../SKILL.md`` among the resources."""
    import mcp_types
    from mcp.server.lowlevel.helper_types import ReadResourceContents
    from mcp.server.mcpserver import MCPServer

    class SkillsServer(MCPServer):
        async def list_resources(self) -> list[mcp_types.Resource]:
            listed = await super().list_resources()
            return [*listed, *(mcp_types.Resource(uri=entry.uri, name=entry.frontmatter["name"],
                                                  description=entry.frontmatter.get("description"),
                                                  mime_type="text/markdown") for entry in publisher.entries())]

        async def read_resource(self, uri: Any, context: Any = None) -> Any:
            if not str(uri).startswith(f"{SCHEME}://"):
                return await super().read_resource(uri, context)
            from mcp.shared.exceptions import MCPError
            from mcp_types import INVALID_PARAMS

            try:
                found = publisher.read(str(uri))
            except (SkillExchangeError, OSError) as exc:
                # A clean refusal, never an internal error: the skill is over a bound, or changed under us.
                raise MCPError(code=INVALID_PARAMS, message=f"Resource {uri} cannot be served: {exc}") from None
            if found is None:
                from mcp.server.mcpserver.exceptions import ResourceNotFoundError

                raise ResourceNotFoundError(f"Unknown resource: {uri}")
            data, mime_type = found
            try:
                content: str | bytes = data.decode("utf-8") if mime_type.startswith("text/") else data
            except UnicodeDecodeError:
                content = data
            return [ReadResourceContents(content=content, mime_type=mime_type)]

    extensions = [*options.pop("extensions", ()), build_extension(publisher)]
    return SkillsServer(**options, extensions=extensions)


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"skills:{offset}".encode()).decode()


def _page_start(cursor: str | None, count: int) -> int | None:
    if cursor is None:
        return 0
    try:
        text = base64.urlsafe_b64decode(cursor.encode()).decode()
        offset = int(text.removeprefix("skills:")) if text.startswith("skills:") else -1
    except (ValueError, UnicodeDecodeError):
        return None
    return offset if 0 <= offset <= count else None


# --- fetching -----------------------------------------------------------------------------------


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



@dataclass(frozen=True)
class FetchedSkill:
    name: str
    uri: str
    folder: Path
    """Where its files were written, under the target."""


async def list_entries(client: Client) -> list[SkillEntry]:
    """Every entry of ``skills/list``, all pages; refused when the server does not declare the extension."""
    import mcp_types

    extensions = client.server_capabilities.extensions if client.server_capabilities else None
    if not extensions or EXTENSION_ID not in extensions:
        raise SkillExchangeError(f"the server does not publish skills (it declares no {EXTENSION_ID} extension)")

    class ListParams(mcp_types.PaginatedRequestParams):
        pass

    class ListRequest(mcp_types.Request[ListParams, Literal["skills/list"]]):
        method: Literal["skills/list"] = "skills/list"
        params: ListParams

    class ListResult(mcp_types.PaginatedResult):
        skills: list[dict[str, Any]]

    entries: list[SkillEntry] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        page = await client.session.send_request(ListRequest(params=ListParams(cursor=cursor)), ListResult)
        for raw in page.skills:
            try:
                entries.append(SkillEntry.model_validate(raw))
            except ValueError as exc:
                raise SkillExchangeError(f"the server's skills/list holds an entry that is not one: {exc}") from None
        cursor = page.next_cursor
        if cursor is None or cursor in seen:
            return entries
        seen.add(cursor)
    raise SkillExchangeError(f"the server's skills/list went on past {MAX_PAGES} pages")


def skill_path(entry: SkillEntry) -> tuple[str, ...]:
    """The segments of an entry's skill path (its URI without ``SKILL.md``), checked as the extension
    wants: it names a SKILL.md, and its last segment is the frontmatter's name."""
    parts = uri_parts(entry.uri)
    if parts[-1] != "SKILL.md" or len(parts) < 2:
        raise SkillExchangeError(f"'{entry.uri}' does not name a SKILL.md")
    name = entry.frontmatter.get("name")
    if parts[-2] != name:
        raise SkillExchangeError(f"'{entry.uri}': the last segment of its path is not its name ({name!r})")
    return parts[:-1]


def select(entries: list[SkillEntry], path: str | None) -> list[SkillEntry]:
    """The entries whose skill path is ``path`` or lies under it (all of them without one)."""
    if not path:
        return entries
    wanted = tuple(part for part in path.strip("/").split("/") if part)
    chosen = []
    for entry in entries:
        try:
            parts = skill_path(entry)
        except SkillExchangeError:
            continue
        if parts[:len(wanted)] == wanted:
            chosen.append(entry)
    return chosen


async def download(client: Client, entry: SkillEntry, target: Path, *, max_file_bytes: int,
                   budget: list[int], answers: AnswerCap | None = None) -> FetchedSkill:
    """Every file of ``entry`` read, checked against its size and digest, and written under
    ``target/<name>/``; a control entry (:func:`adapters.folders.control_part`) is neither read nor
    written. ``budget`` holds the bytes the whole install may still write (shared by the skills of one
    install); ``answers``, the cap of the client's transport, is set to each file's declared size while
    it is read. Nothing is written for a file that does not match."""
    answers = answers or AnswerCap()
    parts = skill_path(entry)
    name = parts[-1]
    if entry.resources == "dynamic":
        raise SkillExchangeError("its files are 'dynamic' (no manifest to check them against); "
                                 "it is not installed")
    if len(entry.resources) > MAX_FILES:
        raise SkillExchangeError(f"{len(entry.resources)} files; at most {MAX_FILES}")
    declared = sum(r.size for r in entry.resources)
    if declared > min(MAX_BYTES, budget[0]):
        raise SkillExchangeError(f"its files declare {declared:,} bytes; the limit is "
                                 f"{describe(min(MAX_BYTES, budget[0]))}")
    relatives = []
    for resource in entry.resources:
        file_parts = uri_parts(resource.uri)
        if file_parts[:len(parts)] != parts or len(file_parts) == len(parts):
            raise SkillExchangeError(f"'{resource.uri}' is not a file inside the skill")
        if resource.size > max_file_bytes:
            raise SkillExchangeError(f"'{resource.uri}' declares {resource.size:,} bytes; the limit "
                                     f"for one file is {describe(max_file_bytes)}")
        relatives.append("/".join(file_parts[len(parts):]))
    if "SKILL.md" not in relatives:
        raise SkillExchangeError("its files do not include its SKILL.md")
    if len(set(relatives)) != len(relatives):
        raise SkillExchangeError("a file is listed twice")
    listed = set(relatives)
    for relative in relatives:
        for folder_of in PurePosixPath(relative).parents:
            if folder_of.as_posix() in listed:
                raise SkillExchangeError(f"{folder_of} is listed as a file and as a folder ({relative})")
    folder = target / name
    for resource, relative in zip(entry.resources, relatives, strict=True):
        if control_part(relative) is not None:
            continue  # never part of a skill (a .git folder...): not read, not written
        with answers.allowing(resource):
            data = await _read(client, resource.uri, relative)
        if len(data) != resource.size or digest_of(data) != resource.digest:
            raise SkillExchangeError(f"{relative} does not match its digest (got {len(data):,} bytes, "
                                     f"{digest_of(data)[:19]}…; the manifest says {resource.size:,} bytes, "
                                     f"{resource.digest[:19]}…): nothing of it is installed")
        budget[0] -= len(data)
        try:
            _write_new(folder / PurePosixPath(relative), data)
        except OSError as exc:
            raise SkillExchangeError(f"{relative} cannot be written: {exc.strerror or exc}") from None
    return FetchedSkill(name=name, uri=entry.uri, folder=folder)


def _write_new(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "xb") as out:  # never onto something already there
        out.write(data)


async def _read(client: Client, uri: str, relative: str) -> bytes:
    import mcp_types
    from mcp.shared.exceptions import MCPError

    try:
        result = await client.read_resource(uri)
    except MCPError as exc:
        raise SkillExchangeError(f"{relative}: {exc.error.message}") from None
    contents = getattr(result, "contents", None) or []
    if len(contents) != 1:
        raise SkillExchangeError(f"'{uri}': the server answered {len(contents)} contents, not one")
    content = contents[0]
    if isinstance(content, mcp_types.BlobResourceContents):
        try:
            return base64.b64decode(content.blob, validate=True)
        except ValueError:
            raise SkillExchangeError(f"'{uri}': its blob is not base64") from None
    return content.text.encode("utf-8")


__all__ = [
    "EXTENSION_ID",
    "AnswerCap",
    "FetchedSkill",
    "Publisher",
    "SkillEntry",
    "SkillExchangeError",
    "SkillResource",
    "build_extension",
    "skills_server",
    "digest_of",
    "download",
    "list_entries",
    "select",
    "skill_path",
    "skill_uri",
    "uri_parts",
]
