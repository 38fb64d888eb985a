"""A git repository as a source: cloned with hooks off, no submodules and no prompt, its tree exported with ``git
archive`` and checked as an archive.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from adapters.installer.archives import extract_tar
from adapters.installer.records import InstallLimits
from skills.errors import InstallRefusedError

GIT_TIMEOUT = 120.0
"""Seconds a clone (or an archive export) may take."""


def export_git(url: str, target: Path, *, path: str | None, ref: str | None, limits: InstallLimits) -> str:
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
        extract_tar(tree, target, limits)
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
