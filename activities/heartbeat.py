"""Heartbeating while an activity waits on something slow (a tool call, an LLM turn).

An activity that heartbeats is noticed within its heartbeat timeout when its worker
dies, instead of after the whole start-to-close timeout, and only a heartbeating
activity learns that it was cancelled.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

from temporalio import activity

MAX_INTERVAL = 10.0
"""Seconds between heartbeats when the activity has no heartbeat timeout, or a long one."""


@asynccontextmanager
async def heartbeating(*details: Any) -> AsyncIterator[None]:
    """Heartbeat with ``details`` while the body runs: once at the start, then every
    third of the heartbeat timeout (at most every 10 s). A detail that is callable is called at each
    beat (progress the body updates: "120 characters received"). The heartbeats stop when the body ends."""

    async def beat() -> None:
        timeout = activity.info().heartbeat_timeout
        interval = min(timeout.total_seconds() / 3, MAX_INTERVAL) if timeout else MAX_INTERVAL
        while True:
            activity.heartbeat(*(detail() if callable(detail) else detail for detail in details))
            await asyncio.sleep(interval)

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task
