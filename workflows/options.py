"""Activity options, defined once by kind: every workflow calls its activities with one of these.

Temporal owns retries, so each kind says how long one attempt may take and which
failures are worth another: deterministic errors are raised non-retryable by the
activities themselves (see ``skills.errors``), whatever the policy says.

    workflow.execute_activity_method(RunActivities.finish, run, **STORE)
    workflow.execute_activity_method(ToolActivities.call_tool, call, **tool_options(60.0), summary=...)
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio.common import RetryPolicy

HEARTBEAT = timedelta(seconds=10)
"""Slow activities heartbeat; a worker that died mid-call is noticed within this."""

STORE: dict[str, Any] = {
    "start_to_close_timeout": timedelta(seconds=60),
    "retry_policy": RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=10),
}
"""Reads and writes of the store: database hiccups pass; every write is idempotent or compensated,
and refusals come back as results (or non-retryable failures), never as retries."""

STORE_LOCAL: dict[str, Any] = {
    "start_to_close_timeout": timedelta(seconds=30),
    "retry_policy": RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=10),
}
"""A fire's own store calls (open the run, record it), run as local activities: in the worker that runs
the workflow, with no task-queue round trip and one marker event each in the history instead of three
events and a workflow task. Each is one short transaction, idempotent on the run id (a replay after a
worker crash may run it again).

    workflow.execute_local_activity_method(RunActivities.begin, request, **STORE_LOCAL)
"""

SCHEDULE: dict[str, Any] = {
    "start_to_close_timeout": timedelta(seconds=30),
    "retry_policy": RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=5),
}
"""Temporal Schedule calls: the frontend may be briefly unavailable; a sync is safe to repeat."""

NOTIFY: dict[str, Any] = {
    "start_to_close_timeout": timedelta(minutes=5),
    "heartbeat_timeout": HEARTBEAT,
    "retry_policy": RetryPolicy(initial_interval=timedelta(seconds=2), maximum_attempts=3),
}
"""A notification is one call of the notifier tool, bounded by the tool hub's own call timeout;
the activity heartbeats meanwhile, so a dead worker is noticed within HEARTBEAT. Few retries:
a notice that cannot be sent must not hold up the run."""


TOOL_RETRY = RetryPolicy(initial_interval=timedelta(seconds=2), backoff_coefficient=2.0, maximum_attempts=3)
"""A tool call may have side effects (a message sent), so it is retried only a few times, and only
for failures that may be transient (unknown tools and bad arguments are non-retryable)."""


def tool_options(timeout_seconds: float) -> dict[str, Any]:
    """One MCP tool call (a plan step, a pre-flight check, an Agent's tool call)."""
    return {"start_to_close_timeout": timedelta(seconds=timeout_seconds), "heartbeat_timeout": HEARTBEAT,
            "retry_policy": TOOL_RETRY}


SCRIPT_MARGIN = timedelta(seconds=30)
"""A script attempt's start-to-close is its wall timeout plus this: copying the skill, starting the sandbox."""

SCRIPT_RETRY = RetryPolicy(initial_interval=timedelta(seconds=2), backoff_coefficient=2.0, maximum_attempts=3)
"""Only a script that could not start for a passing reason (``ScriptStartError``) is retried: a script that ran
and failed is a result, a refusal is non-retryable, and an attempt that started the script and was lost is not
run again (the activity sees it in its heartbeat details)."""


def script_options(timeout_seconds: float) -> dict[str, Any]:
    """One script run in the sandbox (a plan step, an Agent's ``run_script`` call)."""
    return {"start_to_close_timeout": timedelta(seconds=timeout_seconds) + SCRIPT_MARGIN,
            "heartbeat_timeout": HEARTBEAT, "retry_policy": SCRIPT_RETRY}


LLM_RETRY = RetryPolicy(initial_interval=timedelta(seconds=2), backoff_coefficient=2.0,
                        maximum_interval=timedelta(minutes=1), maximum_attempts=6)
"""Rate limits and server errors retry (after the endpoint's retry-after); a refused request
(bad key, unknown model) is raised non-retryable by the activity."""


def llm_options(timeout_seconds: float) -> dict[str, Any]:
    """One LLM turn."""
    return {"start_to_close_timeout": timedelta(seconds=timeout_seconds), "heartbeat_timeout": HEARTBEAT,
            "retry_policy": LLM_RETRY}


FILE_SCAN: dict[str, Any] = {
    "start_to_close_timeout": timedelta(minutes=2),
    "retry_policy": RetryPolicy(maximum_attempts=3),
}
"""Reading the SKILL.md folders and deciding what to change."""

REGISTRATION: dict[str, Any] = {
    "start_to_close_timeout": timedelta(minutes=2),
    "retry_policy": RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=3),
}
"""An activity that runs a whole registration workflow and waits for it (normalize, store,
schedule: well under a second, longer while the store or the frontend retries); a retry joins
the registration it started."""

BULK_REGISTRATION: dict[str, Any] = {
    "start_to_close_timeout": timedelta(minutes=10),
    "heartbeat_timeout": timedelta(seconds=30),
    "retry_policy": RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=3),
}
"""A batch of new skills registered in one activity (``register_skills``); it heartbeats the items
done, so a retry after a dead worker goes on from there."""
