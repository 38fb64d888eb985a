"""The engine's own metrics, recorded on the Temporal SDK's metric meter.

One meter, one exposition: the worker's runtime exports the SDK's metrics (``temporal_*``)
and these in Prometheus' format, served at ``/metrics`` on the health port (see
docs/observability.md, which lists every metric with its labels). Without a runtime
that exports metrics (tests' in-process workers, benchmarks) the meter is the SDK's no-op.

Counts are recorded by activities after the store accepted what they count, so a retried
activity may count twice (at least once, like the activities themselves).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from temporalio.common import MetricMeter
from temporalio.runtime import Runtime

from skills.run.catalog import ServerState
from skills.spec.models import RunRecord

if TYPE_CHECKING:
    from temporalio.client import Client

SKIP_REASONS = ("disabled", "budget", "backoff", "pre-flight", "catch-up", "overlap")
"""A skipped run's summary starts with its reason (``backoff: 2 consecutive failures ...``)."""


FIRE_LAG = "skills_fire_lag"
FIRE_LAG_BUCKETS = (0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600)
"""Seconds: a healthy fire starts within a second or two; an engine that falls behind, minutes; an outage, hours."""
HISTOGRAM_BUCKETS = {FIRE_LAG: FIRE_LAG_BUCKETS}
"""The exporter's bucket overrides, handed to ``config.logs.configure_logging`` by the processes that export
metrics: the SDK's defaults suit milliseconds."""


class EngineMetrics:
    """Counters, a histogram and gauges of what the engine did; every method is cheap and never raises."""

    def __init__(self, meter: MetricMeter | None = None) -> None:
        meter = meter or MetricMeter.noop
        self._fires = meter.create_counter(
            "skills_fires", "Runs closed (fires and manual runs), by tier, status and trigger")
        self._skips = meter.create_counter("skills_skips", "Runs recorded as skipped, by reason")
        self._tool_calls = meter.create_counter(
            "skills_tool_calls", "MCP tool calls, by server and outcome (ok, error, or the failure's type)")
        self._tool_latency = meter.create_histogram(
            "skills_tool_call_latency", "Duration of an MCP tool call, by server", "ms")
        self._tokens = meter.create_counter(
            "skills_llm_tokens", "LLM tokens used by Agent-tier runs, by skill, agent and kind (prompt, completion)")
        self._deliveries = meter.create_counter(
            "skills_deliveries", "Results sent to a skill's deliver_to destinations, by tool and outcome (delivered, "
            "failed, unknown)")
        self._disables = meter.create_counter(
            "skills_auto_disables", "Skills the engine disabled by itself, by reason (failures, budget)")
        self._server_up = meter.create_gauge(
            "skills_mcp_server_up",
            "1 when the MCP server is connected, else 0, by server (none before its first connect begins)")
        self._server_tools = meter.create_gauge("skills_mcp_tools", "Tools the MCP server offers, by server")
        self._overlap_skips = meter.create_counter(
            "skills_overlap_skips", "Scheduled fires skipped because the skill's previous run was still going")
        self._stuck = meter.create_gauge(
            "skills_stuck", "Skills whose fires are being skipped behind a run still going, past the threshold")
        # Falling behind: lag of each scheduled fire, skills overdue, the history's pruning.
        self._fire_lag = meter.create_histogram_float(
            FIRE_LAG, "Seconds from a scheduled fire's time to its run's start (stage start) and end (stage done), "
            "by tier", "s")
        self._overdue = meter.create_gauge(
            "skills_overdue", "Skills with a scheduled fire that has no run or recorded skip past overdue_after")
        self._pruned = meter.create_counter(
            "skills_runs_pruned", "Run records deleted by the retention, by reason (age, count)")
        self._endpoint_up = meter.create_gauge(
            "skills_llm_endpoint_up", "1 when the LLM endpoint answered the last maintenance round's check, else 0")
        self._watched = meter.create_gauge(
            "skills_watch_timestamp_seconds", "Unix time this worker last set skills_overdue and skills_llm_endpoint_up "
            "(one worker of several runs each round: an alert reads the gauges of the freshest)")

    @classmethod
    def of_client(cls, client: Client, task_queue: str) -> EngineMetrics:
        """On the meter of ``client``'s runtime (the process's default one when it has none), each metric
        labelled with the worker's ``task_queue``."""
        meter = (client.service_client.config.runtime or Runtime.default()).metric_meter
        return cls(meter.with_additional_attributes({"task_queue": task_queue}))

    def run_recorded(self, run: RunRecord, *, agent: str | None = None, disabled: str | None = None) -> None:
        """A run was recorded (closed by ``finish_run``, or a gap accounted for by ``begin_run``)."""
        self._fires.add(1, {"tier": run.tier or "unknown", "status": run.status, "trigger": run.trigger})
        if run.status == "skipped":
            self._skips.add(1, {"reason": skip_reason(run.summary)})
        skill = run.skill_name or str(run.skill_id)
        if run.prompt_tokens:
            self._tokens.add(run.prompt_tokens, {"skill": skill, "agent": agent or "", "kind": "prompt"})
        if run.completion_tokens:
            self._tokens.add(run.completion_tokens, {"skill": skill, "agent": agent or "", "kind": "completion"})
        if disabled:
            self._disables.add(1, {"reason": disabled})

    def delivered(self, tool: str, status: str) -> None:
        """One destination's outcome for a run's result (``deliver_to``)."""
        self._deliveries.add(1, {"tool": tool, "outcome": status})

    def overlap_skips(self, fires: int) -> None:
        """Fires found skipped behind a run still going (counted by the maintenance round, as they pass)."""
        self._overlap_skips.add(fires)

    def stuck_skills(self, count: int) -> None:
        """How many skills the maintenance round found stuck behind a run still going."""
        self._stuck.set(count)

    def fire_lag(self, run: RunRecord, stage: str) -> None:
        """A scheduled run started (``start``) or was recorded done (``done``): how long after its time."""
        at = run.started_at if stage == "start" else run.finished_at
        if run.trigger == "schedule" and run.scheduled_at is not None and at is not None:
            lag = max(0.0, (at - run.scheduled_at).total_seconds())
            self._fire_lag.record(lag, {"tier": run.tier or "unknown", "stage": stage})

    def overdue_skills(self, count: int, at: float) -> None:
        self._overdue.set(count)
        self._watched.set(int(at))

    def runs_pruned(self, by_age: int, by_count: int) -> None:
        if by_age:
            self._pruned.add(by_age, {"reason": "age"})
        if by_count:
            self._pruned.add(by_count, {"reason": "count"})

    def llm_endpoint(self, up: bool) -> None:
        self._endpoint_up.set(1 if up else 0)

    def tool_call(self, server: str, outcome: str, milliseconds: float) -> None:
        attributes = {"server": server}
        self._tool_calls.add(1, {**attributes, "outcome": outcome})
        self._tool_latency.record(max(0, round(milliseconds)), attributes)

    def catalog(self, states: Iterable[ServerState]) -> None:
        """The catalog's state now (set at each scrape): each server up or not, and its tools. A server not started
        (the worker connects its servers when first needed) has no sample yet: it is neither up nor down."""
        for state in states:
            if state.status == "not started":
                continue
            attributes = {"server": state.name}
            self._server_up.set(1 if state.status == "connected" else 0, attributes)
            self._server_tools.set(state.tools, attributes)


def skip_reason(summary: str | None) -> str:
    """``backoff: 2 consecutive failures`` -> ``backoff``; anything unexpected -> ``other``."""
    head = (summary or "").split(":", 1)[0].strip()
    return head if head in SKIP_REASONS else "other"
