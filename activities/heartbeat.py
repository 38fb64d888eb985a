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



class Stage:
    """What an activity that heartbeats for its whole length (:func:`stages`) waits on now; its steps say it
    with ``async with stage.waiting(detail)`` (a callable detail is called at each beat)."""

    def __init__(self, name: str, detail: Any) -> None:
        self.name = name
        self._detail = detail

    def now(self) -> Any:
        return self._detail() if callable(self._detail) else self._detail

    def beat(self) -> None:
        activity.heartbeat(self.name, self.now())

    @asynccontextmanager
    async def waiting(self, detail: Any) -> AsyncIterator[None]:
        """Heartbeat at once with ``detail`` (the first heartbeat reaches the server at once, later ones as the
        SDK throttles them), and with it at each beat until the body ends."""
        before, self._detail = self._detail, detail
        self.beat()
        try:
            yield
        finally:
            self._detail = before


@asynccontextmanager
async def stages(name: str, first: Any) -> AsyncIterator[Stage]:
    """Heartbeat for the whole body: at once whenever a step says what it waits on (``stage.waiting``), and
    every third of the heartbeat timeout (at most every 10 s) from the start, so an activity whose first step
    is slow (a loaded worker) still heartbeats within its timeout. The first beat is not at the start: what the
    first step waits on is what the first heartbeat, the one the server sees at once, says."""
    stage = Stage(name, first)

    async def beat() -> None:
        timeout = activity.info().heartbeat_timeout
        interval = min(timeout.total_seconds() / 3, MAX_INTERVAL) if timeout else MAX_INTERVAL
        while True:
            await asyncio.sleep(interval)
            stage.beat()

    task = asyncio.create_task(beat())
    try:
        yield stage
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task
