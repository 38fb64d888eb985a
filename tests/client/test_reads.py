"""A read (a standalone activity on the worker's task queue) says "no worker" only when none is there: a
worker that took a task from the queue while the read waited is busy, and the read is asked again for it.

Under a burst of fires on a loaded machine (three worker processes and PostgreSQL on 2 cores), `skills run`
failed with "no worker answered within 30s: is `skills worker` running?" while all three were polling."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from temporalio import activity
from temporalio.client import Client
from temporalio.worker import Worker

import client.calls as calls
from client.calls import EngineCalls
from skills.errors import WorkerUnavailableError

BUSY_FOR = 6.0
"""How long the first read waits behind the worker's other work: well past the read's (shortened) timeout."""


class BusyWorker:
    """A worker whose first read waits behind other work, as a worker in a burst of fires does."""

    def __init__(self) -> None:
        self.asked = 0
        self._lock = threading.Lock()

    @activity.defn(name="busy_read")
    def read(self, question: str) -> str:
        with self._lock:
            self.asked += 1
            first = self.asked == 1
        if first:
            time.sleep(BUSY_FOR)  # the work ahead of it, on the worker's side (a thread of its own)
        return f"answered: {question}"


@pytest.fixture
async def busy(client: Client) -> AsyncIterator[tuple[EngineCalls, BusyWorker]]:
    queue = f"busy-{uuid.uuid4().hex[:8]}"
    worker = BusyWorker()
    with ThreadPoolExecutor(max_workers=4) as threads:
        async with Worker(client, task_queue=queue, activities=[worker.read], activity_executor=threads):
            yield EngineCalls(client, queue), worker


async def test_a_read_a_busy_worker_took_is_asked_again_not_called_no_worker(
        busy: tuple[EngineCalls, BusyWorker], monkeypatch: pytest.MonkeyPatch) -> None:
    engine, worker = busy
    monkeypatch.setattr(calls, "READ_TIMEOUT", calls.timedelta(seconds=2))
    answer = await engine.read("busy_read", "how many skills?", str)
    assert answer == "answered: how many skills?"
    assert worker.asked == 2  # the first read timed out behind the work; the second was answered


async def test_with_no_worker_a_read_says_so_after_its_timeout(client: Client,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(calls, "READ_TIMEOUT", calls.timedelta(seconds=1))
    queue = f"nobody-{uuid.uuid4().hex[:8]}"
    began = asyncio.get_running_loop().time()
    with pytest.raises(WorkerUnavailableError) as refused:
        await EngineCalls(client, queue).read("busy_read", "anyone?", str)
    assert f"no worker answered on task queue '{queue}' within 1s" in str(refused.value)
    # Not asked again for the busy worker's two minutes: nobody took a task.
    assert asyncio.get_running_loop().time() - began < calls.BUSY_READ_TIMEOUT.total_seconds()
