"""The worker process: wiring only.

Connect, build the activity objects with their dependencies (store, MCP tool
hub, Temporal client), register workflows and activities, run until SIGTERM or
SIGINT, then drain: in-flight activities get `graceful_shutdown_timeout` to finish.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import signal
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from temporalio.client import Client
from temporalio.runtime import Runtime
from temporalio.worker import Worker

from activities.agent import AgentActivities
from activities.approvals import ApprovalActivities
from activities.chat import ChatActivities, ToolRouter
from activities.digests import DigestActivities
from activities.events import EventActivities
from activities.failures import RedactingInterceptor
from activities.grants import GrantActivities
from activities.guard import EngineOnlyInterceptor
from activities.maintenance import MaintenanceActivities
from activities.phrasing import PhrasingActivities
from activities.proposals import ProposalActivities, Proposals
from activities.registration import RegistrationActivities
from activities.retention import RetentionActivities
from activities.runs import RunActivities
from activities.schedules import ScheduleActivities
from activities.scripts import ScriptActivities
from activities.skillfiles import SkillFileActivities, granted_toolsets
from activities.store import StoreActivities
from activities.tools import ToolActivities
from activities.trust import TrustActivities
from activities.watch import WatchActivities
from adapters.mcp import ToolHub, load_argument_rules, outbox_server
from adapters.mcp.launch import ToolsetSandbox
from adapters.mcp.toolsets import SkillToolsets
from adapters.metrics import HISTOGRAM_BUCKETS, EngineMetrics
from adapters.schedules import ensure_engine_schedules
from adapters.skill_folders import declared_toolsets, discover
from adapters.store import Store
from client import SkillsClient, connect
from client.codec import encrypting, settings_codec
from client.management import ManagementTools
from client.namespace import ensure_search_attributes
from config.logs import configure_logging
from config.secrets import add_secrets, process_secrets
from config.settings import Settings, SettingsError
from search_attributes import SEARCH_ATTRIBUTES
from service.codec import codec_routes
from service.health import HealthServer, Readiness
from service.hooks import hook_routes
from service.telemetry import MetricsEndpoint, Tracing, TracingUnavailable, metrics_address
from service.workflow_sandbox import workflow_runner
from skills.errors import SkillsError
from workflows.chat import ChatTurn
from workflows.digests import DeliveryDigest
from workflows.events import EmitEvent
from workflows.grants import ChangeGrant
from workflows.maintenance import Maintenance
from workflows.manage import ChangeSkill, RegisterSkill, RegisterSkills
from workflows.proposals import DecideChange
from workflows.run import SkillRun
from workflows.sync import SyncSkillFiles
from workflows.trust import TrustSkill

logger = logging.getLogger("worker")


async def run_worker(settings: Settings, client: Client, stop: asyncio.Event,
                     ready: asyncio.Event | None = None, *, metrics_at: str | None = None) -> None:
    """Serve until ``stop``. ``metrics_at``: where the client's runtime exports Prometheus metrics
    (:func:`main` sets it up), served at ``/metrics`` on the health port."""
    add_secrets(process_secrets(settings.llm_api_key, settings.database_url, os.environ))
    client = encrypting(client, settings)
    tracing = Tracing(settings)
    store = Store.open(settings.store_url, schedule_prefix=settings.task_queue)
    store.max_revisions = settings.max_revisions_per_skill
    meter = (client.service_client.config.runtime or Runtime.default()).metric_meter
    metrics = EngineMetrics(meter.with_additional_attributes({"task_queue": settings.task_queue}))
    hub = ToolHub.from_config(
        settings.mcp_config,
        defaults={"outbox": outbox_server(settings.outbox_path, settings.idempotency_window_hours)},
        call_timeout=settings.tool_call_timeout.total_seconds(),
        catalog_ttl=settings.tool_catalog_ttl.total_seconds() or None,
        rules=load_argument_rules(settings.argument_rules, default_chat_id=settings.default_chat_id),
        metrics=metrics,
    )
    readiness = Readiness(store.engine, hub.server_states)
    health = None
    if settings.health_port is not None:
        routes = {"/healthz": _alive}
        if metrics_at is not None:
            routes["/metrics"] = MetricsEndpoint(metrics_at, before=lambda: metrics.catalog(hub.server_states()))
        requests = {"/readyz": readiness, **codec_routes(client, settings), **hook_routes(settings, store, client)}
        health = HealthServer(settings.health_host, settings.health_port, routes, requests)
        try:
            port = await health.start()
        except OSError as e:
            raise SettingsError([{"field": "SKILLS_HEALTH_PORT", "message": (
                f"cannot listen on {settings.health_host}:{settings.health_port} ({e.strerror or e}); choose "
                "another port, 0 for a free one, or off for no health server")}]) from None
        logger.info("health server on %s:%d: %s", settings.health_host, port, " ".join([*routes, *requests]))
    schedules = ScheduleActivities(client, settings, store)
    registration = RegistrationActivities(store, settings, hub.tool_names, catalog=hub.catalog, rules=hub.rules,
                                          await_connects=hub.waited_for_connects, schedules=schedules)
    proposals = Proposals(store, settings, registration.prepare_skill) if settings.chat_confirm_changes else None
    tools = ToolRouter(hub.catalog, hub.call, ManagementTools(SkillsClient(client, settings.task_queue)), proposals,
                       skill_files=lambda: discover(**settings.skill_folders()))
    toolsets = SkillToolsets(lambda grant: granted_toolsets(settings, grant, store),
                             sandbox=ToolsetSandbox.from_settings(settings), allowlist=settings.toolset_env_allowlist,
                             call_timeout=settings.tool_call_timeout.total_seconds(), metrics=metrics,
                             reserved=hub.referenced_variables)
    calls = ToolActivities(hub, call_timeout=settings.tool_call_timeout, toolsets=toolsets,
                           declared_toolsets=lambda: declared_toolsets(settings), store=store)
    activities = [
        registration,
        MaintenanceActivities(store, settings, hub.tool_names, metrics, client=client),
        RetentionActivities(store, settings, metrics),
        WatchActivities(store, settings, metrics),
        schedules,
        StoreActivities(store, settings.backoff, settings.run_limits),
        RunActivities(store, settings, hub.call, metrics, catalog=hub.catalog, await_connects=hub.waited_for_connects,
                      prepare=registration.prepare_skill),
        ApprovalActivities(store, hub.prepare),
        calls,
        SkillFileActivities(store, client, settings, hub.tool_names, await_connects=hub.waited_for_connects),
        AgentActivities(store, settings, tools.catalog, tools.send, settle=hub.settle, toolsets=toolsets,
                        rehearse=hub.rehearse),
        ChatActivities(store, settings),
        EventActivities(store, settings),
        ScriptActivities(settings, store),
        TrustActivities(store, settings),
        GrantActivities(store, hub.tool_names),
        ProposalActivities(store),
        PhrasingActivities(store, settings, proposals),
        DigestActivities(client, store, settings, hub.call),
    ]
    try:
        with ThreadPoolExecutor(max_workers=16) as executor:
            worker = Worker(
                client,
                task_queue=settings.task_queue,
                workflows=[RegisterSkill, RegisterSkills, ChangeSkill, SkillRun, Maintenance, SyncSkillFiles, ChatTurn,
                           EmitEvent, TrustSkill, DecideChange, DeliveryDigest, ChangeGrant],
                activities=[method for obj in activities for method in activity_methods(obj)],
                activity_executor=executor,
                graceful_shutdown_timeout=timedelta(seconds=20),
                interceptors=[EngineOnlyInterceptor(), RedactingInterceptor(), *tracing.interceptors],
                workflow_runner=WORKFLOW_RUNNER,
                build_id=code_build_id(),
            )
            async with worker:
                readiness.polling = True
                # The servers connect once the worker polls (a call of one still connecting waits for it): their
                # first connect imports the MCP SDK (a fifth of a second), in a thread, after the worker's start.
                await hub.start(wait=False)
                await ensure_engine_schedules(client, settings)
                if ready is not None:
                    # For embedders (tests, `skills dev`): polling, and every server's first connect over.
                    await hub.settle()
                    ready.set()
                await stop.wait()
                readiness.polling = False  # unready first; leaving the block drains
                logger.info("shutting down: not ready; draining in-flight activities")
    finally:
        await hub.close()
        await toolsets.close()  # skills' own toolset servers
        if health is not None:
            await health.close()
        await asyncio.to_thread(tracing.close)


async def _alive() -> tuple[int, str, str]:
    return 200, "text/plain", "ok\n"


WORKFLOW_RUNNER = workflow_runner()
"""Temporal's sandbox, with the engine's own modules passed through and its code strings compiled once
(service/workflow_sandbox.py)."""


def code_build_id() -> str:
    """The worker's build id (recorded with each workflow task it completes; the engine uses no worker
    versioning): a hash of the Python version and of every loaded module's name and file (path, size,
    modification time), so it changes when the code does. The SDK's default hashes the bytecode of every
    loaded module, read from disk again: a fifth of a second of each worker start, with the engine's modules."""
    digest = hashlib.md5(sys.version.encode(), usedforsecurity=False)
    for name, module in sorted(list(sys.modules.items()), key=lambda item: item[0]):  # a copy: a thread may import
        path = getattr(module, "__file__", None)
        try:
            stat = os.stat(path) if isinstance(path, str) else None
        except OSError:
            stat = None
        digest.update(f"{name}\0{path}\0{stat.st_size if stat else ''}\0{stat.st_mtime_ns if stat else ''}\n".encode())
    return digest.hexdigest()


def activity_methods(obj: object) -> list[object]:
    """The @activity.defn methods of an activity object."""
    return [getattr(obj, name) for name in dir(obj)
            if hasattr(getattr(type(obj), name, None), "__temporal_activity_definition")]


async def _main(settings: Settings, address: str | None, namespace: str | None, metrics_at: str | None) -> None:
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    client = await connect(address, namespace, codec=settings_codec(settings))
    await _search_attributes(client)
    await run_worker(settings, client, stop, metrics_at=metrics_at)


async def _search_attributes(client: Client) -> None:
    """Register the engine's search attributes the namespace lacks (a namespace set up by an older
    release lacks the newer ones, and a run that sets one it lacks could never finish its workflow task);
    where the worker may not (Temporal Cloud), say what to do, and serve anyway."""
    try:
        added = await ensure_search_attributes(client)
    except Exception as e:  # no operator rights (Cloud), or an old server: the owner must add them
        logger.error("could not check or add the engine's search attributes (%s: %s): run `skills setup` "
                     "against namespace %s, or add %s (docs/deploy.md); until then a run that waits for "
                     "approval cannot record that it waits", type(e).__name__, e, client.namespace,
                     ", ".join(f"{name}={kind}" for name, kind in SEARCH_ATTRIBUTES.items()))
        return
    if added:
        logger.info("search attributes added to namespace %s: %s", client.namespace, ", ".join(added))


def main(settings: Settings | None = None, address: str | None = None, namespace: str | None = None) -> None:
    """Run until SIGTERM or SIGINT. ``settings`` default to the environment's; ``address`` and
    ``namespace`` (``skills worker --address/--namespace``) win over Temporal's env config."""
    try:
        settings = settings or Settings.from_env()
    except SettingsError as e:
        print(f"error: invalid settings: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    metrics_at = metrics_address(settings)
    configure_logging(settings.log_level, settings.log_format, metrics_address=metrics_at,
                      histogram_buckets=HISTOGRAM_BUCKETS)
    try:
        asyncio.run(_main(settings, address, namespace, metrics_at))
    except (TracingUnavailable, SettingsError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    except SkillsError as e:  # a store, Temporal or MCP config that cannot be used: one line, not a traceback
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
