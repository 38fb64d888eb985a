"""The worker as a process: its settings from the environment, its logs and metrics exporter set up, a stop
on SIGTERM or SIGINT, and a failure to start told in one line with an exit code (2: the settings, or tracing
asked for without its packages; 1: a store, Temporal or MCP config that cannot be used)."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Awaitable, Callable

from adapters.metrics import HISTOGRAM_BUCKETS
from config.logs import configure_logging
from config.settings import Settings, SettingsError
from service.telemetry import TracingUnavailable, metrics_address
from skills.errors import SkillsError

Serve = Callable[[Settings, asyncio.Event, str | None], Awaitable[None]]
"""Serves with the settings until the event is set; the third argument is where the process's runtime
exports Prometheus metrics (None: no health server, no metrics)."""


def run_process(serve: Serve, settings: Settings | None = None) -> None:
    """Run ``serve`` until SIGTERM or SIGINT; ``settings`` default to the environment's."""
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
