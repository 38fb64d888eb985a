"""The worker process: wiring only.

Connect, build the activity objects with their dependencies (store, MCP tool
hub, Temporal client), register workflows and activities, run until SIGTERM or
SIGINT, then drain: in-flight activities get `graceful_shutdown_timeout` to finish.
"""

from __future__ import annotations

import asyncio
import os
import signal
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from temporalio.client import Client
from temporalio.worker import Worker

from activities.agent import AgentActivities
from activities.chat import ChatActivities, ToolRouter
from activities.events import EventActivities
from activities.failures import RedactingInterceptor
from activities.maintenance import MaintenanceActivities
from activities.mcp import ToolHub, load_argument_rules, outbox_server
from activities.registration import RegistrationActivities
from activities.runs import RunActivities
from activities.schedules import ScheduleActivities, ensure_engine_schedules
from activities.skillfiles import SkillFileActivities
from activities.store import Store, StoreActivities
from activities.tools import ToolActivities
from client import SkillsClient, connect
from client.management import ManagementTools
from config.logs import configure_logging
from config.secrets import add_secrets, process_secrets
from config.settings import Settings, SettingsError
from skills.errors import SkillsError
from workflows.chat import ChatTurn
from workflows.events import EmitEvent
from workflows.maintenance import Maintenance
from workflows.manage import ChangeSkill, RegisterSkill
from workflows.run import SkillRun
from workflows.sync import SyncSkillFiles


async def run_worker(settings: Settings, client: Client, stop: asyncio.Event,
                     ready: asyncio.Event | None = None) -> None:
    add_secrets(process_secrets(settings.llm_api_key, settings.database_url, os.environ))
    store = Store.open(settings.store_url, schedule_prefix=settings.task_queue)
    hub = ToolHub.from_config(
        settings.mcp_config,
        defaults={"outbox": outbox_server(settings.outbox_path)},
        call_timeout=settings.tool_call_timeout.total_seconds(),
        catalog_ttl=settings.tool_catalog_ttl.total_seconds() or None,
        rules=load_argument_rules(settings.argument_rules, default_chat_id=settings.default_chat_id),
    )
    await hub.start()
    tools = ToolRouter(hub.catalog, hub.call, ManagementTools(SkillsClient(client, settings.task_queue)))
    activities = [
        RegistrationActivities(store, settings, hub.tool_names, catalog=hub.catalog, rules=hub.rules),
        MaintenanceActivities(store, settings, hub.tool_names),
        ScheduleActivities(client, settings, store),
        StoreActivities(store, settings.backoff),
        RunActivities(store, settings, hub.call),
        ToolActivities(hub, call_timeout=settings.tool_call_timeout),
        SkillFileActivities(store, client, settings, hub.tool_names),
        AgentActivities(store, settings, tools.catalog, tools.send),
        ChatActivities(store, settings),
        EventActivities(store, settings),
    ]
    try:
        with ThreadPoolExecutor(max_workers=16) as executor:
            worker = Worker(
                client,
                task_queue=settings.task_queue,
                workflows=[RegisterSkill, ChangeSkill, SkillRun, Maintenance, SyncSkillFiles, ChatTurn, EmitEvent],
                activities=[method for obj in activities for method in activity_methods(obj)],
                activity_executor=executor,
                graceful_shutdown_timeout=timedelta(seconds=20),
                interceptors=[RedactingInterceptor()],
            )
            async with worker:
                await ensure_engine_schedules(client, settings)
                if ready is not None:
                    ready.set()
                await stop.wait()
    finally:
        await hub.close()


def activity_methods(obj: object) -> list[object]:
    """The @activity.defn methods of an activity object."""
    return [getattr(obj, name) for name in dir(obj)
            if hasattr(getattr(type(obj), name, None), "__temporal_activity_definition")]


async def _main(settings: Settings, address: str | None, namespace: str | None) -> None:
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    await run_worker(settings, await connect(address, namespace), stop)


def main(settings: Settings | None = None, address: str | None = None, namespace: str | None = None) -> None:
    """Run until SIGTERM or SIGINT. ``settings`` default to the environment's; ``address`` and
    ``namespace`` (``skills worker --address/--namespace``) win over Temporal's env config."""
    try:
        settings = settings or Settings.from_env()
    except SettingsError as e:
        raise SystemExit(f"worker: invalid settings: {e}") from None
    configure_logging(settings.log_level, settings.log_format)
    try:
        asyncio.run(_main(settings, address, namespace))
    except SkillsError as e:  # a store, Temporal or MCP config that cannot be used: one line, not a traceback
        raise SystemExit(f"worker: {e}") from None


if __name__ == "__main__":
    main()
