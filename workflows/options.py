"""Activity options, defined once by kind: every workflow calls its activities with one of these.

Temporal owns retries, so each kind says how long one attempt may take and which
failures are worth another: deterministic errors are raised non-retryable by the
activities themselves (see ``skills.errors``), whatever the policy says.

    workflow.execute_activity_method(RunActivities.finish_run, run, **STORE)
    workflow.execute_activity_method(ToolActivities.call_tool, call, **tool_options(60.0), summary=...)
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

from temporalio.common import RetryPolicy

from skills.run import deadline
from skills.run.deadline import (
    LLM_MARGIN,
    NOTIFY_TIMEOUT,
    SCHEDULE_TIMEOUT,
    SCRIPT_MARGIN,
    STORE_LOCAL_TIMEOUT,
    STORE_TIMEOUT,
)

# The timeouts and policies of a run's calls are defined in skills.run.deadline, which adds them up into
# the run's execution timeout: one definition, so the deadline cannot fall behind the options.


def retry_policy(policy: deadline.Retry) -> RetryPolicy:
    """Temporal's policy with the same fields as ``skills.run.deadline``'s."""
    return RetryPolicy(**dataclasses.asdict(policy))


STORE_RETRY = retry_policy(deadline.STORE_RETRY)
SCHEDULE_RETRY = retry_policy(deadline.SCHEDULE_RETRY)
NOTIFY_RETRY = retry_policy(deadline.NOTIFY_RETRY)
TOOL_RETRY = retry_policy(deadline.TOOL_RETRY)
SCRIPT_RETRY = retry_policy(deadline.SCRIPT_RETRY)
LLM_RETRY = retry_policy(deadline.LLM_RETRY)

HEARTBEAT = timedelta(seconds=10)
"""Slow activities heartbeat; a worker that died mid-call is noticed within this."""

STORE: dict[str, Any] = {"start_to_close_timeout": STORE_TIMEOUT, "retry_policy": STORE_RETRY}
"""Reads and writes of the store: database hiccups pass; every write is idempotent or compensated,
and refusals come back as results (or non-retryable failures), never as retries."""

STORE_LOCAL: dict[str, Any] = {"start_to_close_timeout": STORE_LOCAL_TIMEOUT, "retry_policy": STORE_RETRY}
"""A fire's own store calls (open the run, record it), run as local activities: in the worker that runs
the workflow, with no task-queue round trip and one marker event each in the history instead of three
events and a workflow task. Each is one short transaction, idempotent on the run id (a replay after a
worker crash may run it again).

    workflow.execute_local_activity_method(RunActivities.begin_run, request, **STORE_LOCAL)
"""

REGISTER_LOCAL: dict[str, Any] = {"start_to_close_timeout": timedelta(seconds=90), "retry_policy": STORE_RETRY}
"""A registration's one local activity (``register_skill``): normalize (which may wait for MCP servers still
connecting), store, the schedule (its own retries, 15 s of waits at most) and, if the schedule cannot follow,
the undo. Retried whole only where nothing was written: past the save it answers, or fails for good."""

SCHEDULE: dict[str, Any] = {"start_to_close_timeout": SCHEDULE_TIMEOUT, "retry_policy": SCHEDULE_RETRY}
"""Temporal Schedule calls: the frontend may be briefly unavailable; a sync is safe to repeat."""

NOTIFY: dict[str, Any] = {"start_to_close_timeout": NOTIFY_TIMEOUT, "heartbeat_timeout": HEARTBEAT,
                          "retry_policy": NOTIFY_RETRY}
"""A notification is one call of the notifier tool, bounded by the tool hub's own call timeout;
the activity heartbeats meanwhile, so a dead worker is noticed within HEARTBEAT. Few retries:
a notice that cannot be sent must not hold up the run."""


def tool_options(timeout_seconds: float) -> dict[str, Any]:
    """One MCP tool call (a plan step, a pre-flight check, an Agent's tool call)."""
    return {"start_to_close_timeout": timedelta(seconds=timeout_seconds), "heartbeat_timeout": HEARTBEAT,
            "retry_policy": TOOL_RETRY}


def script_options(timeout_seconds: float) -> dict[str, Any]:
    """One script run in the sandbox (a plan step, an Agent's ``run_script`` call)."""
    return {"start_to_close_timeout": timedelta(seconds=timeout_seconds) + SCRIPT_MARGIN,
            "heartbeat_timeout": HEARTBEAT, "retry_policy": SCRIPT_RETRY}


def llm_options(timeout_seconds: float) -> dict[str, Any]:
    """One LLM turn: the endpoint's timeout (``timeout_seconds``, the HTTP client's) ends it first."""
    return {"start_to_close_timeout": timedelta(seconds=timeout_seconds) + LLM_MARGIN, "heartbeat_timeout": HEARTBEAT,
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


FAIL_ON_BUG: list[type[BaseException]] = [Exception]
"""``failure_exception_types`` of the engine's short workflows (a chat turn, a registration, a change,
an emit, a trust, a sync or maintenance round): an exception of their own code that is not a Temporal
failure (a bug, a value no check foresaw) would fail the workflow *task*, which Temporal retries for
ever while the client waits for nothing. Listed here, it fails the workflow with the exception's type
and message. A non-determinism error does too: these workflows live seconds, and a failed one is asked
again. SkillRun handles its own (it records the run as an error first: workflows/run.py)."""
