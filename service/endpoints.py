"""The health port's endpoints as the settings ask for them: ``/healthz``, ``/readyz``, ``/metrics``
(with a metrics exporter), the codec's (``codec_endpoint``) and the hooks' (``hooks``); and what to
do when the port is taken."""

from __future__ import annotations

import logging
from collections.abc import Callable

from temporalio.client import Client

from adapters.store import Store
from config.settings import Settings, SettingsError
from service.codec import codec_routes
from service.health import Handler, HealthServer, Readiness
from service.hooks import hook_routes
from service.telemetry import MetricsEndpoint

logger = logging.getLogger("worker")  # a line of the worker's start, under the name its other lines have


async def serve_endpoints(settings: Settings, client: Client, store: Store, readiness: Readiness, *,
                          metrics_at: str | None, before_scrape: Callable[[], None]) -> HealthServer | None:
    """The health server, listening; None when ``health_port`` is off. ``metrics_at``: where the
    runtime exports Prometheus metrics; ``before_scrape`` sets the gauges a scrape reads."""
    if settings.health_port is None:
        return None
    routes: dict[str, Handler] = {"/healthz": alive}
    if metrics_at is not None:
        routes["/metrics"] = MetricsEndpoint(metrics_at, before=before_scrape)
    requests = {"/readyz": readiness, **codec_routes(client, settings), **hook_routes(settings, store, client)}
    health = HealthServer(settings.health_host, settings.health_port, routes, requests)
    try:
        port = await health.start()
    except OSError as e:
        raise SettingsError([{"field": "SKILLS_HEALTH_PORT", "message": (
            f"cannot listen on {settings.health_host}:{settings.health_port} ({e.strerror or e}); choose "
            "another port, 0 for a free one, or off for no health server")}]) from None
    logger.info("health server on %s:%d: %s", settings.health_host, port, " ".join([*routes, *requests]))
    return health


async def alive() -> tuple[int, str, str]:
    return 200, "text/plain", "ok\n"
