"""How long a run of a skill may take, at most: its ``SkillRun``'s execution timeout.

A run is a bounded sequence of calls, each with its own start-to-close timeout and retry
policy (``workflows.options`` builds the activity options from the policies defined here, so
the two cannot drift). The deadline adds up the worst case of every call the run may make,
every attempt and the waits between them, plus a margin:

    margin (5 min: workflow tasks, a worker restart picking the run up)
      + 2 x store call         (begin_run, finish_run)
      + 2 x schedule call      (retire a one-shot, pause for failures)
      + notification
      + the longer of the skill's ``timeout_minutes`` (its own timer ends the work) and the work's calls:
          pre-flight checks x tool call
        + Direct: each plan step's call (a tool call, or a script run for ``run_script``)
          Agent:  start_agent + open_toolsets + max_steps x (LLM turn + max(tool call, script run))
        + approvals: each call that may wait for the owner (a Direct step, one per Agent turn) x
          (its approval timeout + 3 store calls: record, answer, outcome)

capped at ``RUN_TIMEOUT_CAP``. A run that goes past it is ended by Temporal, and the
Maintenance round closes its row as ``error`` (docs/resilience.md). The activities compute it
(the schedule's action, an event's runs), the client too (a manual run): so it lives here, pure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from skills.run.scripts import RUN_SCRIPT
from skills.spec.models import Skill


@dataclass(frozen=True)
class Retry:
    """A retry policy as Temporal's ``RetryPolicy`` holds it, same fields and defaults, without temporalio:
    ``skills/`` stays pure, and ``workflows.options`` builds Temporal's from each of these."""

    initial_interval: timedelta = timedelta(seconds=1)
    backoff_coefficient: float = 2.0
    maximum_interval: timedelta | None = None
    maximum_attempts: int = 0


class Retrying(Protocol):
    """What :func:`worst_case` reads of a policy: this module's, or Temporal's."""

    @property
    def initial_interval(self) -> timedelta | None: ...
    @property
    def backoff_coefficient(self) -> float: ...
    @property
    def maximum_interval(self) -> timedelta | None: ...
    @property
    def maximum_attempts(self) -> int: ...


STORE_LOCAL_TIMEOUT = timedelta(seconds=30)
STORE_TIMEOUT = timedelta(seconds=60)
STORE_RETRY = Retry(initial_interval=timedelta(seconds=1), maximum_attempts=10)

SCHEDULE_TIMEOUT = timedelta(seconds=30)
SCHEDULE_RETRY = Retry(initial_interval=timedelta(seconds=1), maximum_attempts=5)

NOTIFY_TIMEOUT = timedelta(minutes=5)
NOTIFY_RETRY = Retry(initial_interval=timedelta(seconds=2), maximum_attempts=3)

TOOL_RETRY = Retry(initial_interval=timedelta(seconds=2), backoff_coefficient=2.0, maximum_attempts=3)
"""A tool call may have side effects (a message sent), so it is retried only a few times, and only
for failures that may be transient (unknown tools and bad arguments are non-retryable)."""

SCRIPT_MARGIN = timedelta(seconds=30)
"""A script attempt's start-to-close is its wall timeout plus this: copying the skill, starting the sandbox."""

SCRIPT_RETRY = Retry(initial_interval=timedelta(seconds=2), backoff_coefficient=2.0, maximum_attempts=3)
"""Only a script that could not start for a passing reason (``ScriptStartError``) is retried: a script that ran
and failed is a result, a refusal is non-retryable, and an attempt that started the script and was lost is not
run again (the activity sees it in its heartbeat details)."""

LLM_RETRY = Retry(initial_interval=timedelta(seconds=2), backoff_coefficient=2.0,
                        maximum_interval=timedelta(minutes=1), maximum_attempts=6)
"""Rate limits and server errors retry (after the endpoint's retry-after); a refused request
(bad key, unknown model) is raised non-retryable by the activity."""

LLM_MARGIN = timedelta(seconds=15)
"""An LLM turn's start-to-close is ``SKILLS_LLM_TURN_TIMEOUT`` plus this: the activity's own limits (the
HTTP client's ``SKILLS_LLM_TIMEOUT`` of silence, the turn's limit) fire first and are reported as what
they are, "timed out after N s", while the turn's heartbeat, not its start-to-close, tells a lost worker."""

RUN_MARGIN = timedelta(minutes=5)
"""What a run spends outside its calls: workflow tasks, and a worker restart picking the run up."""

RUN_TIMEOUT_CAP = timedelta(days=7)
"""No run may take longer than this, whatever its limits say (and a huge ``max_steps`` cannot overflow)."""


@dataclass(frozen=True)
class RunLimits:
    """The worker's per-call limits a run's deadline depends on (``Settings.run_limits``)."""

    tool_seconds: float = 60.0
    script_seconds: float = 60.0
    llm_seconds: float = 120.0
    approval_seconds: float = 24 * 3600.0
    """The engine's approval timeout, for a skill that sets none."""


def worst_case(start_to_close: timedelta | float, policy: Retrying) -> float:
    """Seconds one call may take with every attempt its policy allows, and the waits between them
    (``start_to_close`` in seconds, or a timedelta). Floats all along: no limit, however large, overflows."""
    attempt = start_to_close.total_seconds() if isinstance(start_to_close, timedelta) else float(start_to_close)
    attempts = max(1, policy.maximum_attempts or 1)
    initial = policy.initial_interval.total_seconds() if policy.initial_interval else 1.0
    cap = policy.maximum_interval.total_seconds() if policy.maximum_interval else 100 * initial
    waits = sum(min(initial * policy.backoff_coefficient ** k, cap) for k in range(attempts - 1))
    return attempts * attempt + waits


def run_timeout(skill: Skill, limits: RunLimits) -> timedelta:
    """The longest a run of ``skill`` may take on a worker with ``limits`` (the module's formula)."""
    tool = worst_case(limits.tool_seconds, TOOL_RETRY)
    script = worst_case(limits.script_seconds + SCRIPT_MARGIN.total_seconds(), SCRIPT_RETRY)
    base = (RUN_MARGIN.total_seconds()
            + 2 * worst_case(STORE_LOCAL_TIMEOUT, STORE_RETRY)
            + 2 * worst_case(SCHEDULE_TIMEOUT, SCHEDULE_RETRY)
            + worst_case(NOTIFY_TIMEOUT, NOTIFY_RETRY))
    work = len(skill.preflight) * tool
    if skill.execution_plan:
        work += sum(script if step.tool_name == RUN_SCRIPT else tool for step in skill.execution_plan)
    else:
        llm = worst_case(limits.llm_seconds + LLM_MARGIN.total_seconds(), LLM_RETRY)
        work += worst_case(STORE_TIMEOUT, STORE_RETRY) + tool + max(0, skill.max_steps) * (llm + max(tool, script))
        # A turn that fails over is tried again on the next model, which the run keeps: each fallback
        # costs at most one more turn's worth, once per run.
        work += len(skill.fallback_models) * llm
    work += approval_waits(skill) * (approval_seconds(skill, limits) + 3 * worst_case(STORE_TIMEOUT, STORE_RETRY))
    if skill.timeout_minutes is not None:
        # The skill's own timer ends the work from inside, then the run records its end (the base): a
        # timeout longer than the calls' worst case must not be cut short by Temporal, which would end the
        # run with nothing recorded instead of "timed out".
        work = max(work, skill.timeout_minutes * 60.0)
    seconds = base + work
    if not math.isfinite(seconds) or seconds >= RUN_TIMEOUT_CAP.total_seconds():
        return RUN_TIMEOUT_CAP
    return timedelta(seconds=math.ceil(seconds))


def approval_seconds(skill: Skill, limits: RunLimits) -> float:
    """How long one of ``skill``'s calls waits for the owner's answer."""
    minutes = skill.approval_timeout_minutes
    return minutes * 60.0 if minutes else limits.approval_seconds


def approval_waits(skill: Skill) -> int:
    """The waits for approval a run may make: each Direct step that needs it; an Agent run, one per turn
    (more in one turn share what the deadline leaves, see ``workflows.run``)."""
    if skill.execution_plan:
        needed = set(skill.approval_required_tools)
        return sum(1 for step in skill.execution_plan if step.approval or step.tool_name in needed)
    return max(0, skill.max_steps) if skill.approval_required_tools else 0
