"""The worker as a process: its settings from the environment, its logs and metrics exporter set up, a stop
on SIGTERM or SIGINT, and a failure to start told in one line with an exit code (2: the settings, or tracing
asked for without its packages; 1: a store, Temporal or MCP config that cannot be used)."""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import sys
from collections.abc import Awaitable, Callable

from adapters.metrics import HISTOGRAM_BUCKETS
from config.logs import configure_logging
from config.settings import Settings, SettingsError
from service.telemetry import TracingUnavailable, metrics_address
from skills.errors import SkillsError

MALLOC_ARENAS = 2
"""glibc's malloc arenas a worker's threads share (``MALLOC_ARENA_MAX``, unless the environment sets it). By
default each thread that allocates gets its own arena, up to 8 a core, and each keeps what it once held: a
worker's 16 activity threads and the Temporal bridge's threads kept 17 MiB more after a registration of 1,000
skills (docs/performance.md, "Worker RSS")."""

M_ARENA_MAX = -8  # glibc's malloc.h


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Cap glibc's malloc arenas for the threads still to come (call before they start). True when set: a libc
    other than glibc, or ``MALLOC_ARENA_MAX`` in the environment (glibc read it at start), leaves it alone."""
    if os.environ.get("MALLOC_ARENA_MAX") or sys.platform != "linux":
        return False
    try:
        return bool(ctypes.CDLL(None).mallopt(M_ARENA_MAX, arenas))
    except (OSError, AttributeError):  # no mallopt: not glibc
        return False


def release_free_memory() -> bool:
    """Hand the memory malloc holds free back to the system (glibc's ``malloc_trim(0)``), once: a worker that
    has started and polls keeps the heap its imports and start grew, holes and all, for its whole life; trimmed
    then, an idle worker is 3-4 MiB smaller (docs/performance.md, "Worker RSS"). True when trimmed; False on a
    libc other than glibc, or when there was nothing to give back."""
    if sys.platform != "linux":
        return False
    try:
        return bool(ctypes.CDLL(None).malloc_trim(0))
    except (OSError, AttributeError):  # no malloc_trim: not glibc
        return False


Serve = Callable[[Settings, asyncio.Event, str | None], Awaitable[None]]
"""Serves with the settings until the event is set; the third argument is where the process's runtime
exports Prometheus metrics (None: no health server, no metrics)."""


def run_process(serve: Serve, settings: Settings | None = None) -> None:
    """Run ``serve`` until SIGTERM or SIGINT; ``settings`` default to the environment's."""
    limit_malloc_arenas()  # before the runtime's and the activities' threads
    try:
        settings = settings or Settings.from_env()
    except SettingsError as e:
        print(f"error: invalid settings: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    metrics_at = metrics_address(settings)
    configure_logging(settings.log_level, settings.log_format, metrics_address=metrics_at,
                      histogram_buckets=HISTOGRAM_BUCKETS)
    try:
        asyncio.run(_until_signalled(serve, settings, metrics_at))
    except (TracingUnavailable, SettingsError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    except SkillsError as e:  # a store, Temporal or MCP config that cannot be used: one line, not a traceback
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(1) from None


async def _until_signalled(serve: Serve, settings: Settings, metrics_at: str | None) -> None:
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    await serve(settings, stop, metrics_at)
