"""The baseline of the benchmarks: a workflow that runs one no-op activity; and two variants of it that
bench.aligned uses to take the engine's gap apart: the same workflow started by the engine's own schedule
shape, and the same workflow with the engine's extra worker CPU per fire burnt in its activity.

Kept in its own module with nothing but temporalio imported, as the workflow
sandbox re-imports the module that defines a workflow.
"""

import asyncio
import time
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow


@activity.defn(name="bench_noop")
async def noop(value: str) -> str:
    return value


@activity.defn(name="bench_busy")
async def busy(ms: float) -> float:
    """Burns ``ms`` of a thread's CPU, holding the GIL as the engine's worker does for its work."""
    return await asyncio.to_thread(_burn, ms)


def _burn(ms: float) -> float:
    end = time.thread_time() + ms / 1000
    while time.thread_time() < end:
        pass
    return ms


@workflow.defn(name="BenchRaw")
class RawOneActivity:
    """What any schedule-driven workflow with one activity costs."""

    @workflow.run
    async def run(self, value: str) -> str:
        return await workflow.execute_activity(noop, value, start_to_close_timeout=timedelta(seconds=30))


@workflow.defn(name="BenchRawShaped")
class RawShaped:
    """The raw workflow, started with the engine's input (a run's ``SkillRunInput``), by the engine's schedule."""

    @workflow.run
    async def run(self, value: dict[str, Any]) -> str:
        return await workflow.execute_activity(noop, "x", start_to_close_timeout=timedelta(seconds=30))


@workflow.defn(name="BenchRawBusy")
class RawBusy:
    """The raw workflow whose activity burns ``ms`` of CPU: the worker's CPU per fire made the engine's."""

    @workflow.run
    async def run(self, ms: float) -> float:
        return await workflow.execute_activity(busy, ms, start_to_close_timeout=timedelta(seconds=60))


@workflow.defn(name="BenchRawLocal")
class RawOneLocal:
    """A workflow whose one task runs one no-op local activity: what a registration's workflow costs before its
    own work (bench.register's floor)."""

    @workflow.run
    async def run(self, value: str) -> str:
        return await workflow.execute_local_activity(noop, value, start_to_close_timeout=timedelta(seconds=30))


@workflow.defn(name="BenchRawUpdateLocal")
class RawUpdateLocal:
    """The floor started by Update-with-Start: its update runs the no-op local activity and answers the client in
    the one call that started it (no wait for the result after the start); the workflow ends with it."""

    def __init__(self) -> None:
        self.answered = False

    @workflow.run
    async def run(self, value: str) -> str:
        await workflow.wait_condition(lambda: self.answered)
        return value

    @workflow.update(name="answer")
    async def answer(self, value: str) -> str:
        done = await workflow.execute_local_activity(noop, value, start_to_close_timeout=timedelta(seconds=30))
        self.answered = True
        return done


@workflow.defn(name="BenchRawEntityLocal")
class RawEntityLocal:
    """A long-lived workflow each of whose updates runs the no-op local activity: the floor of registrations as
    updates of one running workflow (no workflow started per registration)."""

    def __init__(self) -> None:
        self.ended = False

    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: self.ended and workflow.all_handlers_finished())

    @workflow.update(name="answer")
    async def answer(self, value: str) -> str:
        return await workflow.execute_local_activity(noop, value, start_to_close_timeout=timedelta(seconds=30))

    @workflow.signal(name="end")
    def end(self) -> None:
        self.ended = True


RAW_WORKFLOWS = [RawOneActivity, RawShaped, RawBusy, RawOneLocal, RawUpdateLocal, RawEntityLocal]
RAW_ACTIVITIES = [noop, busy]


async def serve(address: str, queue: str) -> None:
    """A worker of raw's workflows and activities on ``queue``, until killed: raw's side as a process of its own
    (bench.rss, bench.scaleout)."""
    from temporalio.client import Client
    from temporalio.worker import Worker

    client = await Client.connect(address)
    async with Worker(client, task_queue=queue, workflows=RAW_WORKFLOWS, activities=RAW_ACTIVITIES,
                      max_concurrent_activities=100):
        await asyncio.Event().wait()


if __name__ == "__main__":
    import sys

    asyncio.run(serve(sys.argv[1], sys.argv[2]))
