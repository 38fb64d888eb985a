"""Unpacking a tar or zip archive with every check before a byte is written: no path out, no link out, no device,
sizes and counts within the limits, read from the index first (a zip's) or entry by entry under a cap (a
tar's).
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import stat
import struct
import tarfile
import zipfile
import zlib
from contextlib import ExitStack
from pathlib import Path, PurePosixPath
from typing import Any

from adapters.folders import (
    Budget,
    Written,
    control_part,
    kind_of,
    write_capped,
)
from adapters.installer.records import InstallLimits
from skills.errors import InstallRefusedError
from skills.spec.limits import describe

HEADER_ALLOWANCE = 4 * 1024
"""Bytes of tar headers an entry may bring besides its data (a header block, a long name or pax record,
padding): with the limits, this bounds how far into a decompressed archive reading may go."""


def extract_archive(archive: Path, target: Path, limits: InstallLimits) -> None:
    if archive.name.lower().endswith(".zip"):
        _extract_zip(archive, target, limits)
    else:
        extract_tar(archive, target, limits)


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


def extract_tar(archive: Path, target: Path, limits: InstallLimits) -> None:
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
