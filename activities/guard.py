"""Acting activities run only inside the engine's own workflows.

Any holder of the namespace can start any activity on the task queue, with any input (a client runs
its reads that way). An activity that acts (calls a tool, runs a script, starts a toolset, changes a
skill, notifies) must come from one of the engine's workflows, whose code decides what it is given; so
the worker refuses, before the activity's code runs, one started by a client (no workflow) or by a
workflow type the engine does not have. Reads a client uses (:data:`skills.naming.CLIENT_READS`, and
``call_tool`` of :data:`skills.naming.CLIENT_READ_TOOLS`) stay open.

Deny by default: an activity added later is guarded without a word here. The check trusts the
workflow type Temporal reports; a holder of the namespace running a worker of their own could name a
workflow ``SkillRun``. That is why no payload names what runs (grants are by reference, checked
against the worker's folders): this wall keeps clients to reads, the other keeps payloads to names.
"""

from __future__ import annotations

from typing import Any

from temporalio import activity
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from activities.failures import application_error
from skills.errors import OutsideEngineError
from skills.naming import CALL_TOOL, CLIENT_READ_TOOLS, CLIENT_READS, WORKFLOW_TYPES


def refusal(info: activity.Info, args: Any) -> str | None:
    """Why this activity may not run here, or None when it may."""
    name = info.activity_type
    if info.workflow_type in WORKFLOW_TYPES:
        return None
    if info.workflow_type is None:
        if name in CLIENT_READS or (name == CALL_TOOL and _client_read_call(args)):
            return None
        return (f"activity '{name}' acts, and was started outside a workflow of this engine (by a client): "
                "only the reads a client uses may be started that way")
    return (f"activity '{name}' was scheduled by workflow type '{info.workflow_type}', which is not one of this "
            "engine's: it acts only inside a workflow of this engine")


def _client_read_call(args: Any) -> bool:
    call = args[0] if args else None
    tool = getattr(call, "tool", None) if not isinstance(call, dict) else call.get("tool")
    grant = getattr(call, "toolsets", None) if not isinstance(call, dict) else call.get("toolsets")
    return tool in CLIENT_READ_TOOLS and not grant


class EngineOnlyInterceptor(Interceptor):
    """Refuses, non-retryably and before it runs, an acting activity started outside the engine's workflows."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _EngineOnly(next)


class _EngineOnly(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        reason = refusal(activity.info(), input.args)
        if reason is not None:
            activity.logger.warning("refused: %s", reason)
            raise application_error(OutsideEngineError(reason))
        return await super().execute_activity(input)
