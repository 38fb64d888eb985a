"""The baseline of the benchmarks: a workflow that runs one no-op activity.

Kept in its own module with nothing but temporalio imported, as the workflow
sandbox re-imports the module that defines a workflow.
"""

from datetime import timedelta

from temporalio import activity, workflow


@activity.defn(name="bench_noop")
async def noop(value: str) -> str:
    return value


@workflow.defn(name="BenchRaw")
class RawOneActivity:
    """What any schedule-driven workflow with one activity costs."""

    @workflow.run
    async def run(self, value: str) -> str:
        return await workflow.execute_activity(noop, value, start_to_close_timeout=timedelta(seconds=30))
