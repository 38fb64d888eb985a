"""Installing SKILL.md skills into the user folder: `skills install`, `uninstall`.

A source is a local folder, a ``.tar``/``.tar.gz``/``.tgz``/``.zip`` archive, or a git
repository (a URL, or a local repository with ``ref``), with an optional sub-path. It holds one
skill (a folder with a ``SKILL.md``) or a folder of skills.

Nothing from the source is ever executed, and nothing reaches the user folder unless it passed:

1. the source is read into a hidden staging folder inside the user folder (so the last step is
   a rename on one file system); an archive's members are checked from its index *before*
   anything is unpacked: no absolute path or ``..``, no link leading out, no device, FIFO or
   socket, sizes and counts under the limits of :mod:`skills.spec.limits`; a folder is walked without
   following links, with the same rules; a git repository is cloned with hooks off
   (``core.hooksPath=/dev/null``), no submodules and no prompt, then exported with ``git archive``
   and checked as an archive; on every route (an MCP server's too), a control entry
   (:func:`adapters.folders.control_part`: ``.git``, ``.envrc``...) is left out, and a source that
   still carries what git would take for a repository (:func:`adapters.folders.repositories`: a folder
   holding ``HEAD``, ``objects`` and ``refs``, whatever its name; a ``gitdir:`` file) is refused;
2. every skill is validated as ``skills validate`` does (the Agent Skills specification, strictly),
   plus its ``depends`` (against the skills installed and those that pass with it), and a name
   taken in the user folder is refused unless ``force``;
3. each skill that passed gets an ``.install.json`` (where it came from) and is renamed into place.

A problem of step 1 refuses the whole source (:class:`InstallRefusedError`, naming every reason, an
archive's problems the first ten and then how many more). In step 2 each skill stands alone: the others
install and the refused ones are named with their reasons in :attr:`InstallResult.refused`, unless
``all_or_nothing`` (or none passed), which refuses the source. The staging folder goes either way.
"""

from __future__ import annotations

import asyncio
import bz2
import gzip
import lzma
import os
import shutil
import stat
import struct
import subprocess
import tarfile
import tempfile
import uuid
import zipfile
import zlib
from collections.abc import Mapping
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from adapters.folders import (
    Budget,
    FolderRefused,
    Written,
    control_part,
    copy_folder,
    kind_of,
    repositories,
    write_capped,
)
from adapters.mcp_skills import (
    EXTENSION_ID,
    AnswerCap,
    SkillEntry,
    SkillExchangeError,
    download,
    list_entries,
    select,
    skill_path,
    uri_parts,
)
from adapters.skill_files import Skipped, collection, read_text
from adapters.skill_folders import discover, load_skill_file
from skills.errors import InstallRefusedError, SkillFileError, ToolServerError
from skills.skillmd import Catalog, validate_text
from skills.skillmd.depends import ARROW, find_cycle, missing_dependencies
from skills.skillmd.limits import DEFAULT_LIMITS
from skills.skillmd.manifest import SourceName
from skills.spec.limits import MAX_INSTALL_BYTES, MAX_INSTALL_FILE_BYTES, MAX_INSTALL_FILES, describe
from skills.spec.mcpservers import McpServerConfig

SourceKind = Literal["folder", "archive", "git", "mcp"]

RECORD = ".install.json"
"""The file in an installed skill's folder that says where it came from."""

GIT_TIMEOUT = 120.0
"""Seconds a clone (or an archive export) may take."""

ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip")


@dataclass(frozen=True)
class InstallLimits:
    """How much one install may unpack; the defaults are those of :mod:`skills.spec.limits`."""

    max_file_bytes: int = MAX_INSTALL_FILE_BYTES
    max_total_bytes: int = MAX_INSTALL_BYTES
    max_files: int = MAX_INSTALL_FILES


class InstallRecord(BaseModel):
    """What ``.install.json`` holds: where the skill came from, and when it was installed."""

    model_config = ConfigDict(frozen=True)

    source: str
    kind: SourceKind
    path: str | None = None
    ref: str | None = None
    commit: str | None = None
    uri: str | None = None
    """For a skill from an MCP server (``kind`` mcp, ``source`` ``mcp:SERVER``): its SKILL.md's URI there."""
    installed_at: datetime


class InstalledSkill(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    path: Path
    """The installed skill's folder."""
    replaced: bool = False
    """Whether an installed skill of that name was replaced (``force``)."""
    scheduled: bool = False
    """Whether it carries a ``trigger_config``: the next sync registers it."""
    warnings: list[str] = []
    notes: list[str] = []


class RefusedSkill(BaseModel):
    """A skill of the source that was not installed, with every reason."""

    model_config = ConfigDict(frozen=True)

    name: str | None
    """Its name, when its SKILL.md could be read far enough to say."""
    folder: str
    """Its folder in the source (``SKILL.md`` when the source is the skill)."""
    reasons: list[str]

    @property
    def label(self) -> str:
        """How a refusal names it: its folder in a collection, else (one skill, or one from a server) its name."""
        return self.name if self.name and (self.folder == "SKILL.md" or "://" in self.folder) else self.folder


class InstallResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    installed: list[InstalledSkill]
    record: InstallRecord
    refused: list[RefusedSkill] = []
    """The source's skills that did not pass: the others were installed without them."""
    skipped: list[str] = []
    """Folders of the source that were not looked into, and why (``.curated/: a hidden folder of 30 skills``)."""


class UninstallResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    path: Path
    scheduled: bool = False
    """Whether it carried a schedule: the next sync disables its stored skill (``file removed``)."""
    revealed: str | None = None
    """The skill of the same name that shows again now, if any (``bundled /path``)."""


# --- the public functions ---------------------------------------------------------------------


def install(
    source: str,
    *,
    folders: dict[SourceName, Path],
    path: str | None = None,
    ref: str | None = None,
    force: bool = False,
    all_or_nothing: bool = False,
    limits: InstallLimits = InstallLimits(),  # noqa: B008 - frozen
    mcp_servers: Mapping[str, McpServerConfig] | None = None,
    mcp_timeout: float = 60.0,
) -> InstallResult:
    """Install the skill (or skills) of ``source`` into ``folders["user"]``; see the module's docstring.
    ``mcp_servers`` (the MCP config) is where an ``mcp:SERVER[/PATH]`` source finds its server."""
    user_dir = Path(folders["user"]).expanduser().absolute()
    kind = source_kind(source, ref)
    reasons: list[str] = []
    if kind == "mcp":
        server, path = _mcp_source(source, path, ref, mcp_servers or {})
    if path is not None:
        reasons += _subpath_problems(path)
    if reasons:
        raise InstallRefusedError(reasons)
    created = _make_dirs(user_dir)
    stage = user_dir / f".install-{uuid.uuid4().hex[:12]}"
    try:
        stage.mkdir()
        unpacked = stage / "source"
        fetched = _Fetched()
        if kind == "mcp":
            fetched = _fetch_from_server(server, (mcp_servers or {})[server], path, unpacked, limits, mcp_timeout)
            commit, root = None, unpacked
        else:
            commit = _unpack(kind, source, unpacked, path=path, ref=ref, limits=limits)
            root = unpacked / path if path else unpacked
        if not root.is_dir():
            raise InstallRefusedError([f"'{path}' is not a folder in {source}"])
        _refuse_repositories(root, limits)
        record = InstallRecord(source=f"mcp:{server}" if kind == "mcp" else _display_source(kind, source), kind=kind,
                               path=path, ref=ref, commit=commit, installed_at=datetime.now(UTC))
        if fetched.refused and not any(root.iterdir()):
            raise InstallRefusedError([f"{r.label}: {reason}" for r in fetched.refused for reason in r.reasons])
        plans, refused, skipped = _check_skills(root, unpacked, user_dir, folders, force=force,
                                                from_server=kind == "mcp")
        refused = [*fetched.refused, *refused]
        if refused and (all_or_nothing or not plans):
            raise InstallRefusedError([*(f"{r.label}: {reason}" for r in refused for reason in r.reasons),
                                       *(f"left out {line}" for line in skipped)])
        installed = [_place(plan, stage, user_dir, record.model_copy(update={"uri": fetched.uris.get(plan.name)}))
                     for plan in plans]
    except FolderRefused as refused:
        _clean_up(stage, created)
        raise InstallRefusedError(refused.reasons) from None
    except OSError as exc:
        _clean_up(stage, created)
        raise InstallRefusedError([f"could not install from {source}: {exc}"]) from exc
    except BaseException:
        _clean_up(stage, created)
        raise
    _remove_tree(stage)
    return InstallResult(installed=installed, record=record, refused=refused, skipped=skipped)


def uninstall(name: str, *, folders: dict[SourceName, Path]) -> UninstallResult:
    """Remove the user-folder skill ``name``; a bundled or project skill is refused with the reason."""
    catalog = _all_skills(folders)
    user_dir = Path(folders["user"]).expanduser().absolute()
    found = _user_skill(name, user_dir)
    if found is None:
        owner = catalog.get(name)
        if owner is not None:
            where = {"bundled": "it ships with the engine (disable it with default_enabled, or shadow it)",
                     "project": "it belongs to the project: remove it from the project's folder"}
            raise InstallRefusedError([f"'{name}' is a {owner.source} skill ({owner.folder}), not one in the user "
                                       f"folder {user_dir}: {where.get(owner.source, '')}"])
        raise InstallRefusedError([f"no skill named '{name}' in the user folder {user_dir}"])
    skill, _ = load_skill_file(found / "SKILL.md", "user")
    scheduled = bool(skill and skill.manifest.metadata.trigger_config)
    # Renamed away first, then removed: a half-removed folder never looks like a skill.
    trash = user_dir / f".uninstall-{uuid.uuid4().hex[:12]}"
    os.rename(found, trash)
    _remove_tree(trash)
    after = _all_skills(folders).get(name)
    revealed = f"{after.source} {after.folder}" if after is not None else None
    return UninstallResult(name=name, path=found, scheduled=scheduled, revealed=revealed)


def read_record(folder: Path) -> InstallRecord | None:
    """Where an installed skill came from (its ``.install.json``); None for a skill put there by hand."""
    try:
        return InstallRecord.model_validate_json((Path(folder) / RECORD).read_text())
    except (OSError, ValueError):
        return None


def describe_record(record: InstallRecord | None) -> str:
    """One line: ``git https://host/repo.git (skills/x @ v1, commit 1a2b3c4)``, ``mcp mcp:docs
    (skill://pdf/SKILL.md)``, or ``-``."""
    if record is None:
        return "-"
    details = [d for d in (record.uri or record.path, f"@ {record.ref}" if record.ref else None,
                           f"commit {record.commit[:10]}" if record.commit else None) if d]
    return f"{record.kind} {record.source}" + (f" ({', '.join(details)})" if details else "")


def source_kind(source: str, ref: str | None = None) -> SourceKind:
    """What ``source`` is: a git URL (or a local repository with ``ref``), an archive, or a folder."""
    lowered = source.lower()
    if lowered.startswith("mcp:"):
        return "mcp"
    if lowered.startswith(("file://", "http://", "https://", "ssh://", "git://", "git@")) or lowered.endswith(".git"):
        if lowered.startswith(("http://", "https://")) and lowered.endswith(ARCHIVE_SUFFIXES):
            raise InstallRefusedError([f"{source}: archives are installed from a local file; download it first"])
        return "git"
    local = Path(source).expanduser()
    if local.is_dir():
        return "git" if ref is not None else "folder"
    if local.is_file() and lowered.endswith(ARCHIVE_SUFFIXES):
        return "archive"
    if local.exists():
        raise InstallRefusedError([f"{source}: not a folder, a .tar/.tar.gz/.tgz/.zip archive or a git URL"])
    raise InstallRefusedError([f"{source}: no such folder or archive (and not a git URL)"])


# --- unpacking, with every check before a byte is written ---------------------------------------


HEADER_ALLOWANCE = 4 * 1024
"""Bytes of tar headers an entry may bring besides its data (a header block, a long name or pax record,
padding): with the limits, this bounds how far into a decompressed archive reading may go."""


# --- from an MCP server that publishes skills (the MCP Skills extension) -----------------------------


@dataclass
class _Fetched:
    uris: dict[str, str] = field(default_factory=dict)
    """Each fetched skill's SKILL.md URI on the server, by name."""
    refused: list[RefusedSkill] = field(default_factory=list)
    """Skills that could not be fetched as the extension says (a file off its digest, no manifest...)."""


def _mcp_source(source: str, path: str | None, ref: str | None,
                servers: Mapping[str, McpServerConfig]) -> tuple[str, str | None]:
    """``mcp:SERVER[/PATH]``: the server's name (an entry of the MCP config) and the skill path, if any."""
    name, _, inside = source[len("mcp:"):].partition("/")
    if ref is not None:
        raise InstallRefusedError([f"{source}: --ref is for git repositories, not MCP servers"])
    if path is not None and inside:
        raise InstallRefusedError([f"{source}: give the path once, in the source (mcp:SERVER/PATH) or as --path"])
    if not name:
        raise InstallRefusedError([f"{source}: name a server of the MCP config: mcp:SERVER[/PATH]"])
    if name not in servers:
        known = ", ".join(sorted(servers)) or "none"
        raise InstallRefusedError([f"{source}: no server '{name}' in the MCP config (SKILLS_MCP_CONFIG); "
                                   f"it has: {known}"])
    return name, (inside.strip("/") or path or None)


def _fetch_from_server(name: str, config: McpServerConfig, path: str | None, target: Path,
                       limits: InstallLimits, timeout: float) -> _Fetched:
    """The server's skills (those under ``path``) written under ``target/<name>/``, each file checked
    against its digest; a skill that fails is refused by name and leaves nothing behind."""
    from mcp.client import advertise

    from adapters.mcp.session import one_off_client

    answers = AnswerCap()

    async def fetch() -> _Fetched:
        fetched = _Fetched()
        async with one_off_client(name, config, timeout=timeout, extensions=[advertise(EXTENSION_ID, {})],
                                  stdio=answers.stdio_client) as client:
            async with asyncio.timeout(timeout):
                entries = await list_entries(client)
            chosen = select(entries, path)
            if not chosen:
                paths = sorted("/".join(skill_path(e)) for e in entries if _has_path(e))
                where = f" under '{path}'" if path else ""
                raise InstallRefusedError([f"mcp:{name} publishes no skill{where}" + (
                    f"; it publishes {', '.join(paths[:10])}" + (f" and {len(paths) - 10} more" if len(paths) > 10
                                                                  else "") if paths else "")])
            _refuse_over_limits(name, chosen, limits)
            names: dict[str, list[str]] = {}
            for entry in chosen:
                names.setdefault(str(entry.frontmatter.get("name")), []).append(entry.uri)
            budget = [limits.max_total_bytes]
            for entry in chosen:
                label = str(entry.frontmatter.get("name") or entry.uri)
                if len(names.get(label, ())) > 1:
                    fetched.refused.append(RefusedSkill(name=label, folder=entry.uri, reasons=[
                        f"the server publishes {len(names[label])} skills named '{label}' "
                        f"({', '.join(names[label])}): install one by its path"]))
                    continue
                try:
                    async with asyncio.timeout(timeout):
                        skill = await download(client, entry, target, max_file_bytes=limits.max_file_bytes,
                                               budget=budget, answers=answers)
                except SkillExchangeError as exc:
                    if _has_path(entry):
                        _remove_tree(target / skill_path(entry)[-1])  # what it wrote, if anything
                    fetched.refused.append(RefusedSkill(name=label, folder=entry.uri, reasons=[str(exc)]))
                    continue
                fetched.uris[skill.name] = skill.uri
        return fetched

    target.mkdir(parents=True, exist_ok=True)
    try:
        return asyncio.run(fetch())
    except (SkillExchangeError, ToolServerError) as exc:
        raise InstallRefusedError([f"mcp:{name}: {exc}"]) from None
    except TimeoutError:
        raise InstallRefusedError([f"mcp:{name}: no answer within {timeout:g} s"]) from None


def _refuse_over_limits(server: str, chosen: list[SkillEntry], limits: InstallLimits) -> None:
    """The whole install refused, before a file is read, when the manifests of the chosen skills add up
    to more entries or bytes than one install may write: the bound an archive's index is held to."""
    files = size = 0
    folders: set[tuple[str, ...]] = set()
    for entry in chosen:
        where = skill_path(entry) if _has_path(entry) else (entry.uri,)
        folders.add(where)
        if entry.resources == "dynamic":
            continue
        for resource in entry.resources:
            files += 1
            size += resource.size
            try:
                parts = uri_parts(resource.uri)
            except SkillExchangeError:
                continue  # refused with its skill, later
            folders.update(parts[:end] for end in range(len(where) + 1, len(parts)))
    entries = files + len(folders)
    fewer = f"install fewer at a time (mcp:{server}/PATH)"
    if entries > limits.max_files:
        raise InstallRefusedError([f"mcp:{server}: the chosen skills hold {entries:,} entries ({files:,} files "
                                   f"and {len(folders):,} folders); one install may write at most "
                                   f"{limits.max_files:,}: {fewer}"])
    if size > limits.max_total_bytes:
        raise InstallRefusedError([f"mcp:{server}: the chosen skills declare {size:,} bytes; one install may "
                                   f"write at most {describe(limits.max_total_bytes)}: {fewer}"])


def _has_path(entry: SkillEntry) -> bool:
    try:
        skill_path(entry)
    except SkillExchangeError:
        return False
    return True


def _refuse_repositories(root: Path, limits: InstallLimits) -> None:
    """The whole source refused when what it staged holds a repository under any name (git's discovery
    asks every folder whether it is one, and runs what its config says): by what the staged files are,
    the same for every route, before any of it is placed."""
    budget = Budget(limits)
    for reason in repositories(root):
        budget.refuse(reason)
    budget.refuse_if_any()


def _unpack(kind: SourceKind, source: str, target: Path, *, path: str | None, ref: str | None,
            limits: InstallLimits) -> str | None:
    if kind == "folder":
        copy_folder(Path(source).expanduser(), target, limits)
        return None
    if kind == "archive":
        _extract_archive(Path(source).expanduser(), target, limits)
        return None
    return _export_git(source, target, path=path, ref=ref, limits=limits)


def _extract_archive(archive: Path, target: Path, limits: InstallLimits) -> None:
    if archive.name.lower().endswith(".zip"):
        _extract_zip(archive, target, limits)
    else:
        _extract_tar(archive, target, limits)


class _CappedStream:
    """A decompressed tar stream that refuses to be read or skipped past ``cap`` bytes.

    tarfile reads a long-name or pax header whole, at the size the header claims: a few KB of gzip
    can claim gigabytes. No archive within the limits needs more than ``cap``, so reading stops there.
    """

    def __init__(self, stream: Any, cap: int) -> None:
        self._stream = stream
        self._cap = cap

    def _check(self, end: int) -> None:
        if end > self._cap:
            raise InstallRefusedError([f"the archive unpacks to more than {describe(self._cap)} of headers and "
                                       "data, more than any source within the limits needs"])

    def read(self, size: int | None = -1) -> bytes:
        position = self._stream.tell()
        if size is None or size < 0:
            size = self._cap + 1 - position
        self._check(position + size if size > 0 else position)
        return self._stream.read(size)

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        if whence == os.SEEK_CUR:
            offset += self._stream.tell()
        elif whence != os.SEEK_SET:
            raise OSError("a tar stream is not seekable from its end")
        self._check(offset)
        return self._stream.seek(offset)

    def tell(self) -> int:
        return self._stream.tell()


def _open_tar_stream(archive: Path, stack: ExitStack, cap: int) -> _CappedStream:
    """The archive's tar stream, decompressed here (not by tarfile) so that its length can be capped."""
    raw = stack.enter_context(archive.open("rb"))
    magic = raw.read(6)
    raw.seek(0)
    stream: Any = raw
    if magic.startswith(b"\x1f\x8b"):
        stream = stack.enter_context(gzip.GzipFile(fileobj=raw, mode="rb"))
    elif magic.startswith(b"BZh"):
        stream = stack.enter_context(bz2.BZ2File(raw))
    elif magic.startswith(b"\xfd7zXZ\x00"):
        stream = stack.enter_context(lzma.LZMAFile(raw))
    return _CappedStream(stream, cap)


def _extract_tar(archive: Path, target: Path, limits: InstallLimits) -> None:
    cap = limits.max_total_bytes + (limits.max_files + 1) * HEADER_ALLOWANCE + 20 * 512  # + end blocks, record padding
    try:
        with ExitStack() as stack:
            tar = stack.enter_context(tarfile.open(fileobj=_open_tar_stream(archive, stack, cap), mode="r:"))
            budget = Budget(limits)
            names: dict[str, tarfile.TarInfo] = {}
            links: list[str] = []
            # Entry by entry (not getmembers(), which reads the whole index first), stopping at a total limit.
            while not budget.full and (member := tar.next()) is not None:
                budget.entry()
                if budget.full:
                    break
                name = _member_name(member.name, budget)
                if name is None or control_part(name) is not None:
                    continue
                if member.issym() or member.islnk():
                    link = member.linkname
                    base = PurePosixPath(name).parent if member.issym() else PurePosixPath()
                    if not _stays_inside(base, link):
                        budget.refuse(f"{member.name} is a link that points outside the skill (to {link})")
                    else:
                        links.append(name)
                elif member.isfile():
                    budget.add(member.name, member.size)
                elif not member.isdir():
                    budget.refuse(f"{member.name} is {_tar_kind(member)}, not a file or a folder")
                names[name] = member
            # A link is installed as a copy of the file it reaches, so it costs that file's bytes.
            copies: dict[str, str] = {}
            folders = {parent.as_posix() for name in names for parent in PurePosixPath(name).parents}
            for name in links:
                if budget.full:
                    break
                found, reason = _link_file(name, names, folders)
                if found is None:
                    budget.refuse(reason)
                else:
                    copies[name] = found
                    budget.add(names[name].name, names[found].size, link=True)
            budget.refuse_if_any()
            target.mkdir()
            written = Written(limits.max_total_bytes)
            for name, member in names.items():
                destination = target / name
                if member.isdir():
                    destination.mkdir(parents=True, exist_ok=True)
                elif member.isfile():
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    reader = tar.extractfile(member)
                    assert reader is not None
                    with reader:
                        write_capped(reader, destination, limits.max_file_bytes, member.name, written)
            # Links last, as copies of the file they reach (checked above to stay inside): no link is installed.
            for name, found in copies.items():
                pointed = target / found
                if pointed.resolve().is_relative_to(target.resolve()) and pointed.is_file():
                    (target / name).parent.mkdir(parents=True, exist_ok=True)
                    with pointed.open("rb") as reader:
                        write_capped(reader, target / name, limits.max_file_bytes, names[name].name, written)
    except (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile) as exc:
        raise InstallRefusedError([f"{archive}: not a readable tar archive ({exc})"]) from None


MAX_LINK_HOPS = 40
"""Links followed to reach a file, as the kernel's own limit."""


def _link_file(name: str, members: dict[str, tarfile.TarInfo], folders: set[str]) -> tuple[str | None, str]:
    """The archive file that the link ``name`` reaches (through other links), or None and the reason;
    ``folders`` are the folders the members' paths imply (an archive need not list them)."""
    current, seen = name, {name}
    for _ in range(MAX_LINK_HOPS):
        member = members[current]
        base = PurePosixPath(current).parent if member.issym() else PurePosixPath()
        reached = _normalised(base / member.linkname)
        found = members.get(reached)
        if (found is not None and found.isdir()) or (found is None and reached in folders):
            return None, f"{members[name].name} is a link to a folder; copy the folder instead"
        if found is None:
            return None, f"{members[name].name} is a link to {reached}, which is not a file in the source"
        if found.isfile():
            return reached, ""
        if not (found.issym() or found.islnk()) or reached in seen:
            break
        seen.add(reached)
        current = reached
    return None, f"{members[name].name} is a link in a loop of links"


def _normalised(path: PurePosixPath) -> str:
    """``path`` with ``.`` and ``..`` worked out (it was checked to stay inside)."""
    parts: list[str] = []
    for part in path.parts:
        if part == "..":
            if parts:
                parts.pop()
        elif part not in ("", ".", "/"):
            parts.append(part)
    return "/".join(parts)


def _extract_zip(archive: Path, target: Path, limits: InstallLimits) -> None:
    _check_zip_index(archive, limits)
    try:
        with zipfile.ZipFile(archive) as zipped:
            budget = Budget(limits)
            names: dict[str, zipfile.ZipInfo] = {}
            for info in zipped.infolist():
                budget.entry()
                if budget.full:
                    break
                name = _member_name(info.filename, budget)
                if name is None or control_part(name) is not None:
                    continue
                mode = info.external_attr >> 16
                if stat.S_ISLNK(mode):
                    budget.refuse(f"{info.filename} is a link; links are not installed from a zip archive")
                elif info.is_dir():
                    pass  # counted above; a folder writes no bytes
                elif stat.S_IFMT(mode) not in (0, stat.S_IFREG):  # 0: no type recorded, a plain file
                    budget.refuse(f"{info.filename} is {kind_of(mode)}, not a file or a folder")
                else:
                    budget.add(info.filename, info.file_size)
                names[name] = info
            budget.refuse_if_any()
            target.mkdir()
            written = Written(limits.max_total_bytes)
            for name, info in names.items():
                destination = target / name
                if info.is_dir():
                    destination.mkdir(parents=True, exist_ok=True)
                    continue
                destination.parent.mkdir(parents=True, exist_ok=True)
                with zipped.open(info) as reader:
                    # Capped while writing too: the sizes in a zip's index are the archive's own claim.
                    write_capped(reader, destination, limits.max_file_bytes, info.filename, written)
    except (zipfile.BadZipFile, zipfile.LargeZipFile) as exc:
        raise InstallRefusedError([f"{archive}: not a readable zip archive ({exc})"]) from None


def _check_zip_index(archive: Path, limits: InstallLimits) -> None:
    """The entry count and index size from a zip's end record, then the entries the index holds, before
    ``ZipFile`` reads the whole index."""
    with archive.open("rb") as raw:
        # zipfile's own reader of the end record (zip64 too); ZipFile() would go on to read every entry.
        end = zipfile._EndRecData(raw)  # type: ignore[attr-defined]  # noqa: SLF001
    if end is None:
        raise InstallRefusedError([f"{archive}: not a readable zip archive (File is not a zip file)"])
    entries, index_bytes = end[zipfile._ECD_ENTRIES_TOTAL], end[zipfile._ECD_SIZE]  # type: ignore[attr-defined]  # noqa: SLF001
    if entries > limits.max_files:
        raise InstallRefusedError([f"the source holds {entries:,} entries (its index says); "
                                   f"the limit is {limits.max_files:,}"])
    most = (limits.max_files + 1) * HEADER_ALLOWANCE
    if index_bytes > most:
        raise InstallRefusedError([f"the archive's index is {index_bytes:,} bytes; {entries:,} entries need at most "
                                   f"{describe(most)}"])
    # ZipFile reads entries until the index's bytes end, whatever the count says: count them as it will.
    start = end[zipfile._ECD_LOCATION] - index_bytes  # type: ignore[attr-defined]  # noqa: SLF001
    if end[zipfile._ECD_SIGNATURE] == zipfile.stringEndArchive64:  # type: ignore[attr-defined]  # noqa: SLF001
        start -= zipfile.sizeEndCentDir64 + zipfile.sizeEndCentDir64Locator  # type: ignore[attr-defined]
    if _zip_index_entries(archive, start, index_bytes, limits.max_files) > limits.max_files:
        raise InstallRefusedError([f"the source holds more than {limits.max_files:,} entries, the limit"])


def _zip_index_entries(archive: Path, start: int, size: int, most: int) -> int:
    """The entries in the ``size`` bytes of a zip's index at ``start``, counted up to ``most`` + 1, a header at a
    time (nothing kept); an index that does not parse is left to ``ZipFile`` to refuse."""
    header_size, signature = zipfile.sizeCentralDir, zipfile.stringCentralDir  # type: ignore[attr-defined]
    counted, position = 0, start
    with archive.open("rb") as raw:
        while 0 <= position < start + size and counted <= most:
            raw.seek(position)
            header = raw.read(header_size)
            if len(header) < header_size or not header.startswith(signature):
                break
            counted += 1
            name, extra, comment = struct.unpack_from("<3H", header, 28)  # the lengths of what follows
            position += header_size + name + extra + comment
    return counted


def _export_git(url: str, target: Path, *, path: str | None, ref: str | None, limits: InstallLimits) -> str:
    """Clone (hooks off, no submodules, no prompt), export the tree with ``git archive``, check it as an archive."""
    with tempfile.TemporaryDirectory(prefix="skills-install-git-") as scratch:
        clone = Path(scratch) / "repo"
        base = ["clone", "--quiet", "--no-checkout", "--no-recurse-submodules", "--depth", "1"]
        if ref is not None:
            attempt = _git([*base, "--branch", ref, "--", url, str(clone)], check=False)
            if attempt.returncode != 0:
                # A commit id is not a branch or tag: fetch the history and ask for it.
                shutil.rmtree(clone, ignore_errors=True)
                _git(["clone", "--quiet", "--no-checkout", "--no-recurse-submodules", "--", url, str(clone)])
        else:
            _git([*base, "--", url, str(clone)])
        revision = ref or "HEAD"
        commit = _git(["-C", str(clone), "rev-parse", "--verify", "--end-of-options", f"{revision}^{{commit}}"],
                      what=f"ref '{revision}'").stdout.strip()
        tree = Path(scratch) / "tree.tar"
        arguments = ["-C", str(clone), "archive", "--format=tar", f"--output={tree}", commit]
        if path:
            arguments += ["--", path]
        _git(arguments, what=f"path '{path}'" if path else None)
        _extract_tar(tree, target, limits)
        return commit


def _git(arguments: list[str], *, check: bool = True, what: str | None = None) -> subprocess.CompletedProcess[str]:
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
        "GIT_TERMINAL_PROMPT": "0",  # never wait for a password
        "GIT_ASKPASS": "true",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    command = ["git", "-c", "core.hooksPath=/dev/null", "-c", "submodule.recurse=false",
               "-c", "core.fsmonitor=false", "-c", "protocol.file.allow=always", *arguments]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=GIT_TIMEOUT, env=environment,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise InstallRefusedError(["git is not installed: it is needed to install from a git repository"]) from None
    except subprocess.TimeoutExpired:
        raise InstallRefusedError([f"git {arguments[0]} did not finish within {GIT_TIMEOUT:g} s"]) from None
    if check and done.returncode != 0:
        detail = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit status {done.returncode}"
        subject = f"{what}: " if what else ""
        raise InstallRefusedError([f"git {arguments[0] if arguments[0] != '-C' else arguments[2]} failed: "
                                   f"{subject}{detail}"])
    return done


def _member_name(name: str, budget: Budget) -> str | None:
    """An archive member's path, normalised, or None (with the reason) when it could leave the folder."""
    cleaned = name.replace("\\", "/")
    posix = PurePosixPath(cleaned)
    if posix.is_absolute() or (len(cleaned) > 1 and cleaned[1] == ":"):
        budget.refuse(f"{name} has an absolute path")
        return None
    if ".." in posix.parts:
        budget.refuse(f"{name} contains '..' (it would be written outside the skill)")
        return None
    parts = [p for p in posix.parts if p not in ("", ".")]
    if not parts:
        return None  # the archive's root itself
    return "/".join(parts)


def _stays_inside(base: PurePosixPath, link: str) -> bool:
    if not link or PurePosixPath(link).is_absolute():
        return False
    depth = len(base.parts)
    for part in PurePosixPath(link).parts:
        if part == "..":
            depth -= 1
            if depth < 0:
                return False
        elif part != ".":
            depth += 1
    return True


def _tar_kind(member: tarfile.TarInfo) -> str:
    if member.ischr() or member.isblk():
        return "a device file"
    if member.isfifo():
        return "a FIFO"
    return "a special file"


def _subpath_problems(path: str) -> list[str]:
    posix = PurePosixPath(path.replace("\\", "/"))
    if posix.is_absolute():
        return [f"--path '{path}' must be relative to the source"]
    if ".." in posix.parts:
        return [f"--path '{path}' must not contain '..'"]
    return []


# --- what is installed, checked as `skills validate` does ---------------------------------------


@dataclass(frozen=True)
class _Plan:
    name: str
    folder: Path
    """The staged skill folder."""
    replaces: Path | None
    scheduled: bool
    warnings: list[str]
    notes: list[str]


def _check_skills(root: Path, source_root: Path, user_dir: Path, folders: dict[SourceName, Path], *,
                  force: bool, from_server: bool = False) -> tuple[list[_Plan], list[RefusedSkill], list[str]]:
    """Each skill of ``root`` checked on its own: (those that pass, those refused with every reason,
    the folders left out and why). Only a source with no skill at all is refused here."""
    found = collection(root)
    skipped = [_skipped_line(s, source_root) for s in found.skipped]
    if not found.skills:
        raise InstallRefusedError(["no SKILL.md found: give a skill folder, or a folder of skill folders",
                                   *(f"left out {line}" for line in skipped)])
    refusals: dict[str, list[str]] = {}
    checked: list[_Found] = []
    for folder in found.skills:
        label = folder.relative_to(root).as_posix() if folder != root else "SKILL.md"
        refusals[label] = []
        try:
            text = read_text(folder / "SKILL.md", DEFAULT_LIMITS.max_file_bytes)
        except SkillFileError as exc:
            refusals[label].append(str(exc))
            continue
        skill, _ = load_skill_file(folder / "SKILL.md", "user")
        dir_name = folder.name if folder != root else (skill.name if skill else None)
        problems = validate_text(text, dir_name)
        refusals[label] += [p.message for p in problems if p.severity == "error"]
        if skill is not None:
            checked.append(_Found(folder, label, skill, [p.message for p in problems if p.severity == "warning"]))
    labels: dict[str, list[str]] = {}
    for item in checked:
        labels.setdefault(item.skill.name, []).append(item.label)
    for name, same in labels.items():
        if len(same) > 1:
            for label in same:
                refusals[label].append(f"two skills in the source are named '{name}' ({', '.join(same)})")
    replaces: dict[str, Path | None] = {}
    for item in checked:
        existing = replaces[item.label] = _user_skill(item.skill.name, user_dir) or (
            user_dir / item.skill.name if (user_dir / item.skill.name).exists() else None)
        if existing is not None and not force:
            origin = read_record(existing)
            refusals[item.label].append(f"a skill of that name is already installed ({existing}"
                                        + (f", from {describe_record(origin)}" if origin else "")
                                        + "); give --force to replace it")
    catalog = _all_skills(folders)
    if from_server:
        # A skill from a server never shadows one of this machine's, nor is hidden by one: its name
        # would then mean two skills, and which one runs would depend on the precedence of folders.
        for item in checked:
            owner = catalog.get(item.skill.name)
            if owner is not None and owner.source != "user":
                refusals[item.label].append(f"a {owner.source} skill of that name is on this machine "
                                            f"({owner.folder}); a skill from an MCP server never shadows one")
    _refuse_unmet_dependencies(checked, refusals, catalog)
    plans: list[_Plan] = []
    for item in checked:
        if refusals[item.label]:
            continue
        name = item.skill.name
        notes = []
        owner = catalog.get(name)
        if owner is not None and owner.source == "project":
            notes.append(f"the project's skill of the same name ({owner.folder}) takes precedence over it")
        elif owner is not None and owner.source == "bundled":
            notes.append(f"it shadows the bundled skill of the same name ({owner.folder})")
        plans.append(_Plan(name=name, folder=item.folder, replaces=replaces[item.label], warnings=item.warnings,
                           notes=notes, scheduled=bool(item.skill.manifest.metadata.trigger_config)))
    names = {item.label: item.skill.name for item in checked}
    refused = [RefusedSkill(name=names.get(label), folder=label, reasons=reasons)
               for label, reasons in refusals.items() if reasons]
    return plans, refused, skipped


@dataclass(frozen=True)
class _Found:
    folder: Path
    label: str
    """The skill's folder as the source names it (``SKILL.md`` for a source that is one skill)."""
    skill: Any
    warnings: list[str]


def _refuse_unmet_dependencies(checked: list[_Found], refusals: dict[str, list[str]], catalog: Catalog) -> None:
    """A skill whose ``depends`` names a skill neither installed nor passing in this source is refused,
    and so, in turn, is any that depends on it; a cycle is refused whole."""
    refused_names = {item.skill.name for item in checked if refusals[item.label]}
    while True:
        passing = [item for item in checked if not refusals[item.label]]
        graph = {**catalog.dependencies, **{item.skill.name: list(item.skill.manifest.depends) for item in passing}}
        changed = False
        for item in passing:
            name = item.skill.name
            reasons = [f"it depends on '{dep}', which is refused" if dep in refused_names
                       else f"Skill '{name}' depends on unknown skill '{dep}'" for dep in missing_dependencies(name, graph)]
            cycle = find_cycle(name, graph)
            if cycle is not None:
                reasons.append(f"Skill dependencies form a cycle: {ARROW.join(cycle)}")
            if reasons:
                refusals[item.label] += reasons
                refused_names.add(name)
                changed = True
        if not changed:
            return


def _skipped_line(skipped: Skipped, source_root: Path) -> str:
    where = skipped.folder.relative_to(source_root).as_posix()
    hint = f"; to install {'it' if skipped.holds == 1 else 'them'}, give --path {where}" if skipped.holds else ""
    return f"{where}/: {skipped.why}{hint}"


def _place(plan: _Plan, stage: Path, user_dir: Path, record: InstallRecord) -> InstalledSkill:
    (plan.folder / RECORD).write_text(record.model_dump_json(indent=2) + "\n")
    destination = user_dir / plan.name
    old = None
    if plan.replaces is not None:
        old = stage / f"replaced-{plan.name}"
        os.rename(plan.replaces, old)
    try:
        os.rename(plan.folder, destination)
    except OSError:
        if old is not None:
            os.rename(old, plan.replaces)  # put the previous one back
        raise
    return InstalledSkill(name=plan.name, path=destination, replaced=old is not None, scheduled=plan.scheduled,
                          warnings=plan.warnings, notes=plan.notes)


# --- plumbing -----------------------------------------------------------------------------------


def _all_skills(folders: dict[SourceName, Path]) -> Catalog:
    catalog = discover(**folders)
    return discover(**folders, enable=catalog.disabled) if catalog.disabled else catalog


def _user_skill(name: str, user_dir: Path) -> Path | None:
    """The user-folder skill named ``name`` (normally the folder of that name), if there is one."""
    folder = user_dir / name
    if (folder / "SKILL.md").is_file():
        return folder
    if user_dir.is_dir():
        for child in sorted(user_dir.iterdir()):
            if child.name.startswith(".") or not (child / "SKILL.md").is_file():
                continue
            skill, _ = load_skill_file(child / "SKILL.md", "user")
            if skill is not None and skill.name == name:
                return child
    return None


def _make_dirs(folder: Path) -> list[Path]:
    """Create ``folder`` and missing parents; the ones created, deepest first (to remove them after a refusal)."""
    missing = []
    current = folder
    while not current.exists():
        missing.append(current)
        current = current.parent
    folder.mkdir(parents=True, exist_ok=True)
    return missing


def _clean_up(stage: Path, created: list[Path]) -> None:
    """After a refusal: the staging folder goes, and so do the folders the install created."""
    _remove_tree(stage)
    with suppress(OSError):
        for folder in created:
            folder.rmdir()


def _remove_tree(folder: Path) -> None:
    if folder.exists():
        shutil.rmtree(folder, ignore_errors=True)


def _display_source(kind: SourceKind, source: str) -> str:
    if kind == "git" and ("://" in source or source.startswith("git@")):
        return source
    return str(Path(source).expanduser().absolute())


__all__ = [
    "RECORD",
    "InstallLimits",
    "InstallRecord",
    "InstallResult",
    "InstalledSkill",
    "RefusedSkill",
    "UninstallResult",
    "describe_record",
    "install",
    "read_record",
    "source_kind",
    "uninstall",
]
