"""Copying a skill folder safely: the one copy that the script sandbox, the toolset sandbox and the
installer share.

Every entry is counted and every size added up before anything is written, so a folder of a million
entries or of a hundred gigabytes is refused after reading what the limits allow, not after filling
the disk. Links are never followed into: a link to a file inside the folder is copied as that file,
a link that leaves the folder or points to a folder is refused (``strict``, the installer: the owner
hears why) or left out (the sandboxes: a folder already on disk is copied as safely as it can be).
Devices, FIFOs and sockets are never copied, nor a ``.git`` folder; ``strict`` (the installer) leaves
out every control entry (:func:`control_part`) too: what git, a shell or an editor would run from one
must never land in an installed skill. A name is not all git goes by: :func:`repositories` finds what
it (or another version control system) would take for a repository by what a folder holds, whatever
it is called, and the installer refuses a source that carries one.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from skills.spec.limits import describe

MAX_REASONS = 10
"""Problems a refusal names; the rest are counted (``and 1,990 more problems``): a hostile archive can
have one per entry, and a message of megabytes helps nobody."""

MAX_REASON_CHARS = 300
"""A reason longer than this (a pax name has no length limit) keeps its start and its end."""

CHUNK = 64 * 1024

CONTROL_NAMES = frozenset({
    # Version control: a repository's config runs commands (core.fsmonitor, core.sshCommand, a
    # filter) when git, or a shell prompt that calls it, looks at the folder.
    ".git", ".hg", ".svn", ".bzr", "_darcs", ".jj", ".pijul", "git~1",
    # What a repository around the skill's folder would read from it: submodule URLs, filters, an LFS
    # endpoint.
    ".gitmodules", ".gitattributes", ".lfsconfig",
    # What a shell (direnv, autoenv) or an editor (tasks run on opening a folder) runs or loads on entering.
    ".envrc", ".env", ".vscode", ".idea",
    # The installer's own record of where a skill came from.
    ".install.json",
})
"""Names of files and folders that are never part of a skill, at any depth: not copied, not unpacked, not
fetched. Other hidden files are (a skill may keep a ``.gitkeep``); serving leaves out every hidden one."""

_IGNORED = dict.fromkeys([0x200C, 0x200D, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF])
"""Code points HFS+ ignores in a name (git's own list, is_hfs_dotgit): ``.g\u200cit`` opens ``.git`` there."""


def _folded(name: str) -> str:
    """``name`` as a case-insensitive file system opens it: ``.GIT``, ``.git.`` (NTFS drops trailing dots and
    spaces) and ``.g\u200cit`` (HFS+ ignores the character) are ``.git``."""
    return name.translate(_IGNORED).rstrip(". ").casefold()


def control_part(relative: str) -> str | None:
    """The part of ``relative`` (a ``/``-separated path) that makes it a control entry, or None. Matched
    as a case-insensitive file system would open it (:func:`_folded`)."""
    for part in relative.split("/"):
        if _folded(part) in CONTROL_NAMES or part.casefold() in CONTROL_NAMES:
            return part
    return None


REPOSITORY_SIGNATURES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    # git's own test (setup.c, is_git_directory): HEAD, and objects and refs that it may enter. The name
    # of the folder plays no part: discovery asks it of every folder from the working one up.
    ("git", ("head", "objects", "refs"), "runs what its config says (core.fsmonitor on `git status`)"),
    # The same test, for a folder whose commondir file says where its objects and refs are.
    ("git", ("head", "commondir"), "runs what its config says (core.fsmonitor on `git status`)"),
    # The others find a repository by their folder's name alone (.hg, .svn, .bzr: the names above); their
    # store under another name is refused too, should a tool or a rename ever give it that name.
    ("hg", ("requires", "store"), "runs the hooks its hgrc names"),
    ("svn", ("wc.db", "pristine"), ""),
    ("bzr", ("branch-format", "branch"), ""),
    ("bzr", ("branch-format", "repository"), ""),
)
"""What a folder holds that makes it a repository, by system: the names (folded, :func:`_folded`) it holds
together, as files or folders (git takes ``objects`` that it may enter: a folder, or an executable file);
and what such a repository runs, for the refusal."""

GITDIR = b"gitdir:"
"""How a ``.git`` file that points to a repository elsewhere starts (a submodule's, a linked worktree's)."""

SNIFF = 64
"""Bytes of a file read to tell whether it is such a pointer."""


def repositories(root: Path) -> list[str]:
    """What under ``root`` (itself included) a version control system would take for a repository, by its
    content, whatever its name: a folder holding one of :data:`REPOSITORY_SIGNATURES`, a file that starts
    with ``gitdir:``. One reason each, naming its path relative to ``root`` (``./`` for ``root``). Links are
    not followed; a file that is not a regular one is not opened."""
    found: list[str] = []
    for top, dirnames, filenames in os.walk(root):
        dirnames.sort()
        here = Path(top)
        where = here.relative_to(root).as_posix()
        folder = "./" if where == "." else f"{where}/"
        held = {_folded(name): name for name in sorted(dirnames + filenames)}
        for system, signature, runs in REPOSITORY_SIGNATURES:
            if all(name in held for name in signature):
                names = [held[name] for name in signature]
                listed = f"{', '.join(names[:-1])} and {names[-1]}"
                found.append(f"{folder} holds {listed}: {system} takes it for a repository"
                             + (f" and {runs}" if runs else "") + "; a skill may not carry a repository")
                break
        for name in sorted(filenames):
            if _points_to_repository(here / name):
                relative = (here / name).relative_to(root).as_posix()
                found.append(f"{relative} starts with 'gitdir:', a pointer to a git repository (as a .git file "
                             "is); a skill may not carry one")
    return found


def _points_to_repository(path: Path) -> bool:
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return False
        start = os.read(descriptor, SNIFF)
    finally:
        os.close(descriptor)
    return start.lstrip(b"\xef\xbb\xbf \t\r\n").lower().startswith(GITDIR)


class CopyLimits(Protocol):
    """How much a copy may write: entries, bytes of one file, bytes in all."""

    @property
    def max_files(self) -> int: ...
    @property
    def max_file_bytes(self) -> int: ...
    @property
    def max_total_bytes(self) -> int: ...


@dataclass(frozen=True)
class Limits:
    max_files: int
    max_file_bytes: int
    max_total_bytes: int


class FolderRefused(Exception):
    """The copy (or an unpacking that counts with :class:`Budget`) was refused; ``reasons`` says why.
    Nothing was written to the target, or what was is the caller's to remove."""

    def __init__(self, reasons: list[str]) -> None:
        self.reasons = reasons
        super().__init__("; ".join(reasons))


@dataclass
class Budget:
    """What a source will write, counted entry by entry; :attr:`full` once a total limit is passed, so
    reading stops there. Every entry read counts, whatever becomes of it (refused, skipped, a folder):
    otherwise a source of refused entries would be read to its end."""

    limits: CopyLimits
    files: int = 0
    total: int = 0
    over: str | None = None
    """The total limit passed, if any: one reason, not one per entry."""
    reasons: list[str] = field(default_factory=list)
    more: int = 0
    """Problems past :data:`MAX_REASONS`, counted and not kept."""

    @property
    def full(self) -> bool:
        return self.over is not None

    def refuse(self, reason: str) -> None:
        if len(self.reasons) >= MAX_REASONS:
            self.more += 1
        elif len(reason) > MAX_REASON_CHARS:
            half = MAX_REASON_CHARS // 2
            self.reasons.append(f"{reason[:half]}…({len(reason) - 2 * half:,} characters)…{reason[-half:]}")
        else:
            self.reasons.append(reason)

    def entry(self) -> None:
        self.files += 1
        if self.files > self.limits.max_files and not self.full:
            self.over = f"the source holds more than {self.limits.max_files:,} entries, the limit"

    def add(self, name: str, size: int, *, link: bool = False) -> None:
        """``size`` bytes written at ``name``: a file, or a link copied as the file it reaches."""
        self.total += size
        if size > self.limits.max_file_bytes:
            what = f"is a link to a file of {size:,} bytes" if link else f"is {size:,} bytes"
            self.refuse(f"{name} {what}; the limit for one file is {describe(self.limits.max_file_bytes)}")
        if self.total > self.limits.max_total_bytes and not self.full:
            self.over = f"the source unpacks to more than {describe(self.limits.max_total_bytes)}, the limit"

    def refuse_if_any(self) -> None:
        reasons = ([self.over] if self.over else []) + self.reasons
        if self.more:
            reasons.append(f"and {self.more:,} more problems")
        if reasons:
            raise FolderRefused(reasons)


@dataclass
class Written:
    """Bytes written so far, against the total: the last guard, should a size read before have lied
    (an archive's index, a file that grew since it was counted)."""

    limit: int
    total: int = 0


def write_capped(reader: Any, destination: Path, limit: int, name: str, written: Written) -> None:
    """Copy ``reader`` to a new file ``destination``, refusing past ``limit`` bytes or the total."""
    size = 0
    with destination.open("xb") as writer:
        while chunk := reader.read(CHUNK):
            size += len(chunk)
            written.total += len(chunk)
            if size > limit:
                raise FolderRefused([f"{name} is over {describe(limit)}, the limit for one file"])
            if written.total > written.limit:
                raise FolderRefused([f"the source unpacks to more than {describe(written.limit)}, the limit"])
            writer.write(chunk)


def kind_of(mode: int) -> str:
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def copy_folder(source: Path, target: Path, limits: CopyLimits, *, strict: bool = True,
                file_mode: int | None = None, folder_mode: int | None = None) -> list[str]:
    """Copy the folder ``source`` to ``target`` (which must not exist), within ``limits``.

    ``strict``: an entry that may not be copied (a link out of the folder or to a folder, a device,
    a FIFO, a socket) refuses the whole copy; otherwise it is left out, and the returned list names
    what was. A limit passed always refuses (:class:`FolderRefused`). ``file_mode``/``folder_mode``:
    the copies' permissions (a sandbox's user must read them), else the umask's."""
    root = source.resolve()
    budget = Budget(limits)
    left_out: list[str] = []
    entries: list[tuple[str, Path, bool]] = []  # (relative path, real file, is a folder)
    for dirpath, dirnames, filenames in os.walk(root):  # links are never followed into
        here = Path(dirpath)
        for name in sorted(dirnames) + sorted(filenames):
            budget.entry()
            if budget.full:
                break
            # The installer leaves out every control entry; a sandbox's copy of a folder already on disk,
            # only .git (a hand-made skill's script may read its own .env).
            if (control_part(name) is not None) if strict else name == ".git":
                if name in dirnames:
                    dirnames.remove(name)  # never walked into: a working copy's .git holds thousands
                continue
            full = here / name
            relative = full.relative_to(root).as_posix()
            info = full.lstat()
            problem = None
            if stat.S_ISLNK(info.st_mode):
                real = full.resolve()
                if not real.is_relative_to(root):
                    problem = f"{relative} is a link that points outside the skill (to {os.readlink(full)})"
                elif real.is_dir():
                    problem = f"{relative} is a link to a folder; copy the folder instead"
                    dirnames[:] = [d for d in dirnames if d != name]
                elif not real.is_file():
                    problem = f"{relative} is a link to {kind_of(real.stat().st_mode)}, not a file"
                else:
                    budget.add(relative, real.stat().st_size, link=True)
                    entries.append((relative, real, False))
            elif stat.S_ISDIR(info.st_mode):
                entries.append((relative, full, True))
            elif stat.S_ISREG(info.st_mode):
                budget.add(relative, info.st_size)
                entries.append((relative, full, False))
            else:
                problem = f"{relative} is {kind_of(info.st_mode)}, not a file or a folder"
            if problem is not None:
                (budget.refuse if strict else left_out.append)(problem)
        if budget.full:
            break
    budget.refuse_if_any()
    target.mkdir() if folder_mode is None else target.mkdir(mode=folder_mode)
    written = Written(limits.max_total_bytes)
    for relative, real, is_folder in entries:
        destination = target / relative
        if is_folder:
            destination.mkdir(exist_ok=True) if folder_mode is None else destination.mkdir(mode=folder_mode,
                                                                                        exist_ok=True)
            continue
        with real.open("rb") as reader:
            write_capped(reader, destination, limits.max_file_bytes, relative, written)
        if file_mode is not None:
            os.chmod(destination, file_mode)
    return left_out
