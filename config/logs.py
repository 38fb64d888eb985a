"""Logging, configured once by each process's entry point: readable lines, or JSON for Kubernetes.

- Every line is redacted (:func:`config.secrets.redact`) after it is formatted, tracebacks
  included.
- An expected failure of an activity (an engine error: the LLM endpoint down, a tool
  refused, an unknown tool) is one WARNING line naming the activity, the run and the
  cause. Tracebacks are kept for what the engine did not expect: bugs.
- ``force=True``: importing the MCP server stack calls ``logging.basicConfig(WARNING)``
  first, which would otherwise make every later configuration a no-op.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from temporalio.exceptions import ApplicationError, CancelledError
from temporalio.runtime import LogForwardingConfig, LoggingConfig, PrometheusConfig, Runtime, TelemetryConfig

from config.secrets import redact
from skills.errors import error_class

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
QUIET = ("httpx2", "httpx")
"""They log every request's full URL at INFO, and an MCP server's URL may carry a secret."""


class RedactingFormatter(logging.Formatter):
    """The usual text line, with every known secret blotted out."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the Temporal context, any traceback."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in ("temporal_activity", "temporal_workflow"):
            if isinstance(getattr(record, key, None), dict):
                entry[key] = getattr(record, key)
        if record.exc_info:
            entry["traceback"] = self.formatException(record.exc_info)
        return redact(json.dumps(entry, ensure_ascii=False, default=str))


class ExpectedFailures(logging.Filter):
    """Turn the SDK's "Completing activity as failed" for an engine error, or for an attempt the server timed
    out, into one line.

    The activity raised an ``ApplicationError`` whose type is one of the engine's errors
    (``skills.errors``): the failure is an answer (endpoint down, tool refused), not a bug,
    and its chained traceback (dozens of lines per retry) tells an operator nothing more. An attempt
    cancelled with no request for it (a missed heartbeat) ends in the SDK's own ``CancelledError``: its
    traceback is the SDK's frames.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        info = getattr(record, "temporal_activity", None) or {}
        where = (info.get("activity_type", "activity"), info.get("attempt", "?"), info.get("workflow_type", "workflow"),
                 info.get("workflow_id", "?"))
        if isinstance(error, ApplicationError) and error_class(error.type) is not None:
            record.msg = "%s failed (attempt %s) in %s %s: %s: %s"
            record.args = (*where, error.type, error.message)
        elif isinstance(error, (asyncio.CancelledError, CancelledError)):
            # Not a cancel asked for (the SDK logs those at DEBUG), nor a pause or reset (a line of its own): the
            # server stopped waiting for the attempt, a heartbeat or its time limit missed (a starved worker on a
            # loaded machine misses them), or the worker is stopping. Its stack is the SDK's, and says nothing more.
            record.msg = ("%s attempt %s in %s %s was cancelled: the server timed it out (a heartbeat or its time "
                          "limit missed) or the worker is stopping; Temporal retries it as its retry policy says")
            record.args = where
        else:
            return True
        record.exc_info = None
        record.exc_text = None
        return True


def sdk_telemetry(metrics_address: str | None = None,
                  histogram_buckets: Mapping[str, Sequence[float]] | None = None) -> TelemetryConfig:
    """The Temporal SDK core's telemetry with its log lines forwarded to Python logging (logger
    ``temporalio.core``): by default the core writes them, ``[TMPRL1103]`` large-payload warnings
    among them, to stdout, where they would break a command's ``--json`` answer.

    With ``metrics_address`` (``host:port``) the same runtime also exports its metrics, the SDK's
    and the engine's (recorded on its meter), in Prometheus' format at ``http://<address>/metrics``;
    ``histogram_buckets`` overrides the buckets of the histograms it names (the SDK's defaults suit
    milliseconds; the engine's metrics bring their own, ``adapters.metrics.HISTOGRAM_BUCKETS``)."""
    return TelemetryConfig(
        logging=LoggingConfig(
            filter=LoggingConfig.default.filter,
            forwarding=LogForwardingConfig(logger=logging.getLogger("temporalio.core"), append_target_to_name=False,
                                           prepend_target_on_message=False)),
        metrics=PrometheusConfig(bind_address=metrics_address, histogram_bucket_overrides={
            name: [float(b) for b in buckets] for name, buckets in (histogram_buckets or {}).items()})
        if metrics_address else None,
    )


def configure_logging(level: str = "INFO", fmt: Literal["text", "json"] = "text", *,
                      metrics_address: str | None = None,
                      histogram_buckets: Mapping[str, Sequence[float]] | None = None) -> None:
    """Log to stderr at ``level``, as text lines or JSON objects, secrets redacted, the SDK core's
    lines included (through a default runtime that forwards them, set before any client connects).
    ``metrics_address``: that one runtime also serves Prometheus metrics there (the worker's)."""
    Runtime.set_default(Runtime(telemetry=sdk_telemetry(metrics_address, histogram_buckets)), error_if_already_set=False)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else RedactingFormatter(TEXT_FORMAT))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
    for name in QUIET:
        logging.getLogger(name).setLevel(logging.WARNING)
    activity_logger = logging.getLogger("temporalio.activity")
    if not any(isinstance(f, ExpectedFailures) for f in activity_logger.filters):
        activity_logger.addFilter(ExpectedFailures())
