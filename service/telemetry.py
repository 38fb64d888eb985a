"""The worker's telemetry: one Prometheus exposition, and optional OpenTelemetry tracing.

Metrics. The worker's Temporal runtime (built once, with the log forwarding of
:mod:`config.logs`) exports its metrics, the SDK's own (``temporal_*``) and the engine's
(:mod:`adapters.metrics`, recorded on the same runtime's meter), on a private loopback port.
``/metrics`` on the health port serves that exposition, after setting the catalog gauges: one
port for probes and scrapes, one exposition for everything.

Tracing. With ``otel_endpoint`` (``SKILLS_OTEL_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``) the
worker traces workflows and activities through ``temporalio.contrib.opentelemetry`` and sends the
spans over OTLP/HTTP (protobuf); it needs the ``otel`` extra (``pip install 'skills-engine[otel]'``).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

from config.settings import Settings

SCRAPE_TIMEOUT = 5.0


class TracingUnavailable(RuntimeError):
    """Tracing was asked for (an endpoint is set) but the OpenTelemetry packages are not installed."""


def metrics_address(settings: Settings) -> str | None:
    """Where the runtime's Prometheus exporter listens: a free loopback port, only reached through
    ``/metrics`` on the health port; None when the health server is off (no metrics then)."""
    if settings.health_port is None:
        return None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


class MetricsEndpoint:
    """``/metrics``: the runtime exporter's exposition, fetched at each scrape; ``before()`` runs first
    (it sets the gauges that describe the state now)."""

    def __init__(self, address: str, before: Callable[[], None] | None = None) -> None:
        self.host, port = address.rsplit(":", 1)
        self.port = int(port)
        self.before = before

    async def __call__(self) -> tuple[int, str, str]:
        if self.before is not None:
            self.before()
        async with asyncio.timeout(SCRAPE_TIMEOUT):
            reader, writer = await asyncio.open_connection(self.host, self.port)
            try:
                writer.write(f"GET /metrics HTTP/1.0\r\nHost: {self.host}\r\n\r\n".encode())
                await writer.drain()
                raw = await reader.read()
            finally:
                writer.close()
        head, _, body = raw.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") else 502
        return status, "text/plain; version=0.0.4; charset=utf-8", body.decode("utf-8", "replace")


class Tracing:
    """Temporal's ``TracingInterceptor`` over a tracer provider that sends spans to the OTLP/HTTP
    collector at ``settings.otel_endpoint``; nothing without an endpoint. :meth:`close` flushes."""

    def __init__(self, settings: Settings) -> None:
        self.interceptors: list[Any] = []
        self._provider: Any = None
        if not settings.otel_endpoint:
            return
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
            from temporalio.contrib.opentelemetry import TracingInterceptor
        except ImportError as exc:
            raise TracingUnavailable(
                f"SKILLS_OTEL_ENDPOINT (or OTEL_EXPORTER_OTLP_ENDPOINT) is {settings.otel_endpoint}, but the "
                f"OpenTelemetry packages are not installed ({exc.name} is missing): pip install "
                "'skills-engine[otel]', or unset the endpoint") from None
        self._provider = TracerProvider(resource=Resource.create(
            {"service.name": "skills-worker", "skills.task_queue": settings.task_queue}))
        self._provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=traces_url(
            settings.otel_endpoint))))
        # Workflows started by schedules carry no parent span: trace them all the same.
        self.interceptors = [TracingInterceptor(self._provider.get_tracer("skills-engine"), always_create_workflow_spans=True)]

    def close(self) -> None:
        """Send the spans still buffered (bounded by the exporter's own timeout)."""
        if self._provider is not None:
            self._provider.shutdown()
            self._provider = None


def traces_url(endpoint: str) -> str:
    """OTLP/HTTP's convention: a bare collector address (``http://collector:4318``) gets ``/v1/traces``."""
    base = endpoint.rstrip("/")
    return base if base.endswith("/v1/traces") else base + "/v1/traces"
