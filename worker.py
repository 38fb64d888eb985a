"""The worker process: wiring only.

Connect, build the adapters and the activity objects over them, register workflows and activities,
run until SIGTERM or SIGINT, then drain: in-flight activities get `graceful_shutdown_timeout` to finish.
"""

from __future__ import annotations

import asyncio
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from temporalio.client import Client
from temporalio.worker import Worker

from activities.wiring import EngineActivities
from adapters.mcp import ToolHub
from adapters.metrics import EngineMetrics
from adapters.schedules import ensure_engine_schedules
from adapters.store import Store
from client import connect
from client.codec import encrypting, settings_codec
from client.namespace import register_search_attributes
from config.secrets import add_secrets, process_secrets
from config.settings import Settings
from service.build import code_build_id
from service.endpoints import serve_endpoints
from service.health import Readiness
from service.process import release_free_memory, run_process
from service.telemetry import Tracing
from service.workflow_sandbox import WORKFLOW_RUNNER
from workflows.wiring import WORKFLOWS

logger = logging.getLogger("worker")


async def run_worker(settings: Settings, client: Client, stop: asyncio.Event,
                     ready: asyncio.Event | None = None, *, metrics_at: str | None = None) -> None:
    """Serve until ``stop``. ``metrics_at``: where the client's runtime exports Prometheus metrics
    (:func:`main` sets it up), served at ``/metrics`` on the health port."""
    add_secrets(process_secrets(settings.llm_api_key, settings.database_url, os.environ))
    client = encrypting(client, settings)
    tracing = Tracing(settings)
    store = Store.from_settings(settings)
    metrics = EngineMetrics.of_client(client, settings.task_queue)
    hub = ToolHub.from_settings(settings, metrics)
    readiness = Readiness(store.engine, hub.server_states)
    health = await serve_endpoints(settings, client, store, readiness, metrics_at=metrics_at,
                                   before_scrape=lambda: metrics.catalog(hub.server_states()))
    activities = EngineActivities(settings, client, store, hub, metrics)
    await activities.start()  # a line saying whether scripts can run here, and if not, why and what to do
    try:
        with ThreadPoolExecutor(max_workers=16) as executor:
            worker = Worker(client, task_queue=settings.task_queue, workflows=WORKFLOWS,
                            activities=activities.methods(), activity_executor=executor,
                            graceful_shutdown_timeout=timedelta(seconds=20),
                            interceptors=[*EngineActivities.interceptors(), *tracing.interceptors],
                            workflow_runner=WORKFLOW_RUNNER, build_id=code_build_id())
            async with worker:
                readiness.polling = True
                # The servers connect when first needed (a call, a registration, a catalog read), not at
                # start: their first connect imports the MCP SDK (45 MiB resident, a fifth of a second), in a
                # thread, which an idle worker does without (docs/performance.md, "Worker RSS").
                await hub.start(wait=False, lazy=True)
                await ensure_engine_schedules(client, settings)
                release_free_memory()  # what the imports and the start freed, given back once, now it polls
                if ready is not None:
                    # For embedders (tests, `skills dev`): polling, and every server's first connect over.
                    await hub.settle()
                    ready.set()
                await stop.wait()
                readiness.polling = False  # unready first; leaving the block drains
                logger.info("shutting down: not ready; draining in-flight activities")
    finally:
        await hub.close()
        await activities.close()  # skills' own toolset servers
        if health is not None:
            await health.close()
        await asyncio.to_thread(tracing.close)


def main(settings: Settings | None = None, address: str | None = None, namespace: str | None = None) -> None:
    """Run until SIGTERM or SIGINT (service/process.py). ``settings`` default to the environment's; ``address``
    and ``namespace`` (``skills worker --address/--namespace``) win over Temporal's env config."""

    async def serve(settings: Settings, stop: asyncio.Event, metrics_at: str | None) -> None:
        client = await connect(address, namespace, codec=settings_codec(settings))
        await register_search_attributes(client)
        await run_worker(settings, client, stop, metrics_at=metrics_at)

    run_process(serve, settings)


if __name__ == "__main__":
    main()
