"""Serving this machine's SKILL.md skills over the extension (:class:`Publisher`, read at every request), as a
server of the MCP SDK or of any that takes its handlers.
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
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time
from pathlib import Path
from typing import Any

from adapters.mcp_skills.wire import (
    CHUNK,
    EXTENSION_ID,
    MAX_BYTES,
    MAX_FILES,
    PAGE_SIZE,
    SCHEME,
    SkillEntry,
    SkillExchangeError,
    SkillResource,
    digest_of,
    skill_uri,
    uri_parts,
)
from adapters.skill_files import read_text
from adapters.skill_folders import executable_parts
from skills.errors import FrontmatterError, SkillFileError
from skills.skillmd import Catalog, SkillFile
from skills.skillmd.limits import DEFAULT_LIMITS
from skills.skillmd.parsing import parse_frontmatter
from skills.skillmd.trust import TrustState, trust_state
from skills.spec.limits import describe

log = logging.getLogger(__name__)


def _never_trusted(skill: SkillFile) -> TrustState:
    """``skill``'s trust as its folder holds it now, with no record of its owner's."""
    return trust_state(skill, None, parts=executable_parts(skill))


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
