"""Fetching a server's skills: every page of ``skills/list``, the entries a path chooses, and each file read and
checked against its digest before anything is written.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

from adapters.folders import control_part
from adapters.mcp_skills.stdio import AnswerCap
from adapters.mcp_skills.wire import (
    EXTENSION_ID,
    MAX_BYTES,
    MAX_FILES,
    MAX_PAGES,
    SkillEntry,
    SkillExchangeError,
    digest_of,
    uri_parts,
)
from skills.spec.limits import describe

if TYPE_CHECKING:
    from mcp import Client


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
