"""The CPU each test costs, its processes' included: a pytest plugin switched on by ``SKILLS_TEST_CPU=path.jsonl``.

Wall time says little on a shared machine (a test waiting on a loaded core looks slow); CPU seconds do not
move with the load. Per test (setup, call and teardown together), this records the CPU of:

- this process (``RUSAGE_SELF``: the test body, its in-process workers' threads, the client);
- its children that ended and were waited for (``RUSAGE_CHILDREN``: a CLI run, a worker process stopped);
- the processes below this one still alive (from ``/proc``: the session's Temporal dev server, a worker
  still running), by how much their CPU grew over the test;
- the test process's PostgreSQL cluster (its postmaster detaches from us, so it is found by its pid file).

One JSON line per test is appended to the file (xdist workers append to the same file), and
``scripts/test_cpu.py`` sums them: the costliest tests, and the CPU per directory. A session's start-up (a dev
server's, a cluster's) is paid by the first test that asks for it, as it is in a real run.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int | str) -> tuple[int, float, float, int] | None:
    """(parent pid, own CPU, CPU of its waited-for children, start time) of a process, from /proc."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2:].split()  # the name, in parentheses, may hold spaces
    ppid, utime, stime, cutime, cstime, start = (int(fields[i]) for i in (1, 11, 12, 13, 14, 19))
    return ppid, (utime + stime) / TICK, (cutime + cstime) / TICK, start


CLUSTERS: list[Path] = []
"""The data folders of the PostgreSQL clusters this process started (``PostgresCluster.start`` is wrapped)."""


def _note_clusters() -> None:
    from tests.postgres import PostgresCluster

    original = PostgresCluster.start

    def start(self: PostgresCluster) -> PostgresCluster:
        CLUSTERS.append(self.data)
        return original(self)

    PostgresCluster.start = start  # type: ignore[method-assign]


def extra_roots() -> list[int]:
    """Processes of this test process that are not below it: the postmasters of its PostgreSQL clusters."""
    pids = []
    for data in CLUSTERS:
        try:
            pids.append(int((data / "postmaster.pid").read_text().split()[0]))
        except (OSError, ValueError, IndexError):
            pass
    return pids


def descendants() -> dict[tuple[int, int], float]:
    """Every live process below this one (and below the extra roots), keyed by (pid, start time): its CPU
    and that of its waited-for children."""
    children: dict[int, list[int]] = {}
    stats: dict[int, tuple[int, float, float, int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(entry)) is not None:
            stats[int(entry)] = stat
            children.setdefault(stat[0], []).append(int(entry))
    found: dict[tuple[int, int], float] = {}
    todo = list(children.get(os.getpid(), []))
    todo += [pid for pid in extra_roots() if pid in stats]
    while todo:
        pid = todo.pop()
        if pid not in stats or (pid, stats[pid][3]) in found:
            continue
        _, own, waited, start = stats[pid]
        found[(pid, start)] = own + waited
        todo += children.get(pid, [])
    return found


def _own() -> float:
    me, waited = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + waited.ru_utime + waited.ru_stime


class CpuRecorder:
    def __init__(self, path: Path) -> None:
        self.path = path

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        own, below, wall = _own(), descendants(), time.monotonic()
        yield
        own_after, below_after = _own(), descendants()
        # A process alive before and after: its growth. Started during the test: all of it. Ended during the
        # test: its total is now in its parent's waited-for CPU (ours, or a live process's), so what it had
        # before the test is taken back out.
        grown = sum(cpu - below.get(key, 0.0) for key, cpu in below_after.items())
        grown -= sum(cpu for key, cpu in below.items() if key not in below_after)
        record = {"test": item.nodeid, "cpu": round(own_after - own + grown, 3),
                  "self_and_waited": round(own_after - own, 3), "wall": round(time.monotonic() - wall, 3),
                  "worker": os.environ.get("PYTEST_XDIST_WORKER", "main")}
        with open(self.path, "a") as out:
            out.write(json.dumps(record) + "\n")


def register(config: pytest.Config) -> None:
    path = os.environ.get("SKILLS_TEST_CPU")
    if path:
        _note_clusters()
        config.pluginmanager.register(CpuRecorder(Path(path).resolve()), "skills-test-cpu")
