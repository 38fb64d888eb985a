"""How a skill's stdio toolset server starts: in the bubblewrap sandbox the scripts use, never bare.

A toolset is a SKILL.md's own MCP server, a long-lived process its skill's runs talk to. It gets what
a script gets (:class:`adapters.sandbox.Sandbox`: a read-only minimal root, its own /proc, /dev and
/tmp, no capability), and:

- the skill folder, copied, read-only at ``/skill`` (its working directory; ``cwd`` is relative to it);
- the worker's Python, read-only at the paths it has on the worker, and first on ``PATH``, so a
  toolset may be ``command: python, args: [server.py]`` with the packages the worker has (``mcp``);
- the environment its entry declares (``env``, ``${VAR}`` expanded only from the allowlist), and
  ``PATH``, ``HOME=/tmp``, ``TMPDIR``, ``LANG``, ``SKILL_DIR`` -- nothing of the worker's;
- the network, unless its entry says ``network: false`` (then only its own loopback), with the
  resolver's and CA certificates' files of /etc.

Nothing else of the worker's files, and no process of the worker's (its own pid namespace). A worker
running as root makes the sandbox with a privileged bwrap (no user namespace) and starts the server
as ``script_uid`` (nobody) through ``setpriv``, with no capability left; any other worker makes it in
a user namespace, as itself. When bwrap cannot make the sandbox, the toolset is refused with the
reason: it never runs unsandboxed.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from adapters.folders import FolderRefused
from adapters.mcp.config import EnvExpander
from adapters.sandbox import BWRAP_ENV, SKILL_MOUNT, Sandbox, copy_for_sandbox, find_bwrap, probe
from skills.errors import SandboxUnavailableError, ToolsetRefusedError
from skills.spec.mcpservers import McpServerConfig, ToolsetServer

if TYPE_CHECKING:
    from mcp import StdioServerParameters

NETWORK_ETC = ("resolv.conf", "hosts", "nsswitch.conf", "host.conf", "gai.conf", "ssl", "ca-certificates",
               "pki", "services", "protocols")
"""What a toolset with the network also sees of /etc: name resolution and the CA certificates."""


class ToolsetSandbox(Sandbox):
    """Starts skills' stdio toolset servers in bwrap; :meth:`check` says whether it can, and why not."""

    @classmethod
    def from_settings(cls, settings: object) -> ToolsetSandbox:
        base = Sandbox.from_settings(settings)
        return cls(base.limits, bwrap=base.bwrap, uid=base.uid, scratch_dir=base.scratch_dir)

    @property
    def privileged(self) -> bool:
        """A root worker: bwrap makes the namespaces itself, and the server is dropped to ``uid``."""
        return os.geteuid() == 0

    def _setpriv(self) -> str:
        found = shutil.which("setpriv", path="/usr/bin:/bin")
        if found is None or not Path(found).resolve().is_relative_to("/usr"):
            raise SandboxUnavailableError("setpriv (util-linux) is not in /usr/bin: a worker running as root "
                                          "cannot drop a toolset server to an unprivileged user")
        return found

    async def check(self) -> None:
        """Raise :class:`SandboxUnavailableError` with the reason if toolsets cannot be sandboxed here."""
        if self._usable:
            return
        bwrap = find_bwrap(self.bwrap)
        if bwrap is None:
            raise SandboxUnavailableError(
                f"bubblewrap is not installed ('{self.bwrap}' not found; install the package 'bubblewrap' or set "
                "SKILLS_BWRAP_PATH): toolsets are never run unsandboxed")
        await probe([bwrap, *self._toolset_args(network=False), "--", *self._drop(), "/bin/sh", "-c", "exit 0"],
                    bwrap=bwrap, sandbox="the toolset sandbox", what="toolsets",
                    needs=("a worker running as root needs CAP_SYS_ADMIN to make it; run the worker as another user "
                           "instead" if self.privileged else "user and network namespaces must be allowed"))
        self._usable = True

    def _drop(self) -> list[str]:
        if not self.privileged:
            return []
        return [self._setpriv(), f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all", "--"]

    def _toolset_args(self, *, network: bool) -> list[str]:
        if self.privileged:
            # No user namespace: bwrap, as root, binds what root can read (an interpreter under /root), and
            # setpriv then leaves the server nothing of root's (uid, groups, capabilities).
            unshare = ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                       *([] if network else ["--unshare-net"]), "--die-with-parent", "--new-session",
                       "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID",
                       "--hostname", "sandbox"]
            root = self._root_args(tmp_perms="01777")  # the server is not root: /tmp must be writable to it
        else:
            unshare = [*self._unshare_args(), *(["--share-net"] if network else [])]
            root = self._root_args()
        args = [*unshare, *root, *_python_args()]
        if network:
            args += [arg for name in NETWORK_ETC for arg in ("--ro-bind-try", f"/etc/{name}", f"/etc/{name}")]
        return args

    def argv(self, folder: Path, config: McpServerConfig, expand: EnvExpander, *, network: bool) -> list[str]:
        """bwrap's command line for the stdio server ``config`` of the skill copied at ``folder``, its
        ``${VAR}`` expanded by ``expand``."""
        bwrap = find_bwrap(self.bwrap)
        assert bwrap is not None and config.command is not None  # check() passed
        cwd = PurePosixPath(SKILL_MOUNT, *(PurePosixPath(str(config.cwd)).parts if config.cwd else ()))
        env = [arg for name, value in config.env.items() for arg in ("--setenv", name, expand(value))]
        return [bwrap, *self._toolset_args(network=network), "--ro-bind", str(folder), SKILL_MOUNT,
                "--remount-ro", "/", "--chdir", str(cwd), *env,
                "--", *self._drop(), expand(config.command), *(expand(a) for a in config.args)]

    async def stdio_params(self, skill_folder: Path, config: ToolsetServer, expand: EnvExpander,
                           stack: AsyncExitStack) -> StdioServerParameters:
        """How to start ``config`` sandboxed: a fresh copy of the skill folder (removed when ``stack``
        closes, with the session), and bwrap's command line."""
        await self.check()
        scratch = Path(tempfile.mkdtemp(prefix="skill-toolset-", dir=self.scratch_dir))
        stack.callback(shutil.rmtree, scratch, ignore_errors=True)
        try:
            # The scratch folder stays the worker's own (0700): bwrap binds the copy as the worker's user (root, for a
            # root worker, which drops the server to nobody only inside), so no other user need pass through it.
            await asyncio.to_thread(copy_for_sandbox, skill_folder, scratch / "skill")
        except (OSError, FolderRefused) as e:
            raise ToolsetRefusedError(f"the skill folder could not be copied for the sandbox: {e}") from None
        argv = self.argv(scratch / "skill", config, expand, network=config.network)
        from mcp import (
            StdioServerParameters,  # the connect that calls this imported the SDK (adapters.mcp.session)
        )

        return StdioServerParameters(command=argv[0], args=argv[1:], env=dict(BWRAP_ENV), cwd=scratch)


def check_cwd(config: McpServerConfig) -> str | None:
    """Why a toolset's ``cwd`` cannot be used (it must stay inside the skill folder), or None."""
    if config.cwd is None:
        return None
    path = PurePosixPath(str(config.cwd))
    if path.is_absolute() or ".." in path.parts:
        return f"cwd '{config.cwd}' must be a folder inside the skill folder (relative, without '..')"
    return None


def _python_args() -> list[str]:
    """Binds of the worker's Python (the venv and the interpreter it is made from), read-only, at the paths
    the worker has them, the venv's ``bin`` first on ``PATH``."""
    args: list[str] = []
    made: set[str] = set()
    prefixes = dict.fromkeys(str(Path(p).resolve()) for p in (sys.prefix, sys.base_prefix))
    for prefix in prefixes:
        if Path(prefix).is_relative_to("/usr"):
            continue
        args += _parents(PurePosixPath(prefix), made) + ["--ro-bind", prefix, prefix]
    if sys.prefix not in prefixes:  # a venv reached through a link (the worktree's .venv): the link too
        args += _parents(PurePosixPath(sys.prefix), made) + ["--symlink", str(Path(sys.prefix).resolve()), sys.prefix]
    return [*args, "--setenv", "PATH", f"{sys.prefix}/bin:/usr/bin:/bin"]


def _parents(path: PurePosixPath, made: set[str]) -> list[str]:
    """Folders above a bind, made traversable (bwrap makes them 0700, which the server's user cannot cross)."""
    args: list[str] = []
    for parent in reversed(path.parents):
        if str(parent) in ("/", "/tmp", "/usr") or str(parent) in made:
            continue
        made.add(str(parent))
        args += ["--perms", "0755", "--dir", str(parent)]
    return args
