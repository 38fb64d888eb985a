"""The engine's activity objects, built over the ports they share (store, MCP tool hub, Temporal client),
with the callbacks that tie one to another: registration prepares a skill for the runs and the chat's
proposals; the agent reaches tools through the chat's router and skills' own toolsets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio.client import Client
from temporalio.worker import Interceptor

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
from adapters.engine_workflows import EngineWorkflows
from adapters.mcp import ToolHub
from adapters.mcp.launch import ToolsetSandbox
from adapters.mcp.toolsets import SkillToolsets
from adapters.metrics import EngineMetrics
from adapters.schedules import ScheduleWriter
from adapters.semantic import catalog_meaning
from adapters.skill_folders import declared_toolsets, discover
from adapters.store import Store
from client import SkillsClient
from client.management import ManagementTools
from config.settings import Settings


class EngineActivities:
    """Every activity object of the worker, and skills' own toolset servers, which they open as runs need them."""

    def __init__(self, settings: Settings, client: Client, store: Store, hub: ToolHub, metrics: EngineMetrics) -> None:
        workflows = EngineWorkflows(client, settings.task_queue)
        schedules = ScheduleActivities(ScheduleWriter(client), settings, store)
        registration = RegistrationActivities(store, settings, hub, schedules=schedules)
        proposals = Proposals(store, settings, registration) if settings.chat_confirm_changes else None
        meaning = catalog_meaning(settings)  # SKILLS_MATCH_MEANING: refused here, at start, without its extra
        if meaning is not None:
            meaning.warm(lambda: discover(**settings.skill_folders(), semantic=meaning).index)
        tools = ToolRouter(hub, ManagementTools(SkillsClient(client, settings.task_queue)),
                           proposals, skill_files=lambda: discover(**settings.skill_folders()))
        self.toolsets = SkillToolsets(lambda grant: granted_toolsets(settings, grant, store),
                                      sandbox=ToolsetSandbox.from_settings(settings),
                                      allowlist=settings.toolset_env_allowlist,
                                      call_timeout=settings.tool_call_timeout.total_seconds(), metrics=metrics,
                                      reserved=hub.referenced_variables)
        self.scripts = ScriptActivities(settings, store)
        calls = ToolActivities(hub, call_timeout=settings.tool_call_timeout, toolsets=self.toolsets,
                               declared_toolsets=lambda: declared_toolsets(settings), store=store)
        self.objects: list[object] = [
            registration,
            MaintenanceActivities(store, settings, hub, metrics, workflows=workflows),
            RetentionActivities(store, settings, metrics),
            WatchActivities(store, settings, metrics),
            schedules,
            StoreActivities(store, settings.backoff, settings.run_limits),
            RunActivities(store, settings, hub, metrics, preparer=registration),
            ApprovalActivities(store, hub),
            calls,
            SkillFileActivities(store, workflows, settings, hub),
            AgentActivities(store, settings, tools, hub, toolsets=self.toolsets, meaning=meaning),
            ChatActivities(store, settings, meaning=meaning),
            EventActivities(store, settings),
            self.scripts,
            TrustActivities(store, settings),
            GrantActivities(store, hub),
            ProposalActivities(store),
            PhrasingActivities(store, settings, proposals),
            DigestActivities(workflows, store, settings, hub),
        ]

    @staticmethod
    def interceptors() -> list[Interceptor]:
        """Activities called by the engine's workflows only; their failures' texts redacted."""
        return [EngineOnlyInterceptor(), RedactingInterceptor()]

    def methods(self) -> list[Callable[..., Any]]:
        """The @activity.defn methods of every object, for the worker to register."""
        return [getattr(obj, name) for obj in self.objects for name in dir(obj)
                if hasattr(getattr(type(obj), name, None), "__temporal_activity_definition")]

    async def start(self) -> None:
        """What the worker says at start about its activities' ports: whether its scripts' sandbox can run."""
        await self.scripts.announce()

    async def close(self) -> None:
        await self.toolsets.close()
