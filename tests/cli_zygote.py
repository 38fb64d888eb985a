"""`skills ARGV` as a process of its own, forked from one that has already imported what every command imports.

A `skills` process spends about 1.2 CPU s importing temporalio's protobufs, pydantic's models and the engine
(docs/testing.md) before it does anything, and the suite runs a few hundred of them: py-spy put them at nearly
half of `tests/workflows/test_schedule_shape.py`'s CPU. Here a zygote process imports ``starter.cli`` and the
client once per test process, then forks a child per command: the child is still a process of its own (its own
pid, environment, working directory, stdin from /dev/null, stdout and stderr to files, so not a terminal) and
ends as every command ends, through ``starter.exit_process``; only the imports are shared. The command's own
modules (a lazy command's) are imported in the child, as in a fresh process.

One command at a time per zygote: a caller that finds it busy (commands run at once from threads) gets None and
starts a fresh process instead. What a fresh process is for (what it imports, how it exits, its start) is
tested with real ones (tests/starter/test_cli.py's import tests, tests/client/test_script_exit.py)."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

PRELOADED = ("starter.cli", "starter.command", "client", "config.settings", "temporalio.client")


def serve() -> None:
    """The zygote: a request a line on stdin (argv, env, cwd, out, err paths), two lines back per request on
    stdout: the child's pid, then its exit status."""
    import importlib

    for module in PRELOADED:
        importlib.import_module(module)
    reader = os.fdopen(0, "rb", buffering=0)
    for line in iter(reader.readline, b""):
        request = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            _child(request)
        os.write(1, f"{pid}\n".encode())
        _, status = os.waitpid(pid, 0)
        os.write(1, f"{os.waitstatus_to_exitcode(status)}\n".encode())


def _child(request: dict[str, object]) -> None:
    try:
        os.chdir(str(request["cwd"]))
        os.environ.clear()
        os.environ.update(request["env"])  # type: ignore[arg-type]
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, path in ((1, request["out"]), (2, request["err"])):
            opened = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(opened, fd)
            os.close(opened)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.argv = [str(arg) for arg in request["argv"]]  # type: ignore[attr-defined]
        from starter.cli import main

        main(sys.argv[1:])
        from starter import exit_process

        exit_process(0)
    except BaseException:  # noqa: BLE001 - the child never returns into the zygote's loop
        import traceback

        with contextlib.suppress(BaseException):
            traceback.print_exc()
            sys.stderr.flush()
        os._exit(1)


class Zygote:
    """The test process's client of one zygote."""

    def __init__(self) -> None:
        self._busy = threading.Lock()
        self._process = subprocess.Popen([sys.executable, "-m", "tests.cli_zygote"], cwd=Path(__file__).parents[1],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def run(self, argv: list[str], env: dict[str, str], cwd: Path, timeout: float
            ) -> subprocess.CompletedProcess[str] | None:
        """``argv`` run in a child of the zygote, as ``subprocess.run(..., capture_output=True, text=True)``
        would; None when the zygote is busy with another command (or gone): start a fresh process then."""
        if self._process.poll() is not None or not self._busy.acquire(blocking=False):
            return None
        try:
            with tempfile.TemporaryDirectory(prefix="skills-cli-") as folder:
                out, err = Path(folder) / "out", Path(folder) / "err"
                assert self._process.stdin is not None and self._process.stdout is not None
                self._process.stdin.write(json.dumps({"argv": argv, "env": env, "cwd": str(cwd), "out": str(out),
                                                      "err": str(err)}).encode() + b"\n")
                self._process.stdin.flush()
                pid = int(self._process.stdout.readline())
                killed = threading.Event()
                timer = threading.Timer(timeout, lambda: (killed.set(), _kill(pid)))
                timer.start()
                try:
                    code = int(self._process.stdout.readline())
                finally:
                    timer.cancel()
                if killed.is_set():
                    raise subprocess.TimeoutExpired(argv, timeout)
                return subprocess.CompletedProcess(argv, code, out.read_text(errors="replace"),
                                                   err.read_text(errors="replace"))
        finally:
            self._busy.release()


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


@functools.cache
def zygote() -> Zygote:
    """This test process's zygote, started at its first command."""
    return Zygote()


def run_command(argv: list[str], env: dict[str, str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """``argv`` (a `skills` command: its first item the executable) run in a child of the zygote, or in a fresh
    process while the zygote runs another command or with ``SKILLS_TEST_FRESH_CLI=1`` set."""
    done = None if os.environ.get("SKILLS_TEST_FRESH_CLI") == "1" else zygote().run(argv, env, cwd, timeout)
    return done if done is not None else subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                                                        timeout=timeout)


if __name__ == "__main__":
    serve()
