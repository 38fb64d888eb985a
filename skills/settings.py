"""Settings of the engine, read once by each entry point (worker, CLI, dev launcher).

Every field can be set from the environment as ``SKILLS_<FIELD>`` (upper case).
Durations accept seconds (``90``) or ISO 8601 (``PT90S``). The Temporal connection
itself is not here: it follows Temporal's own environment configuration
(``TEMPORAL_ADDRESS``, ``TEMPORAL_NAMESPACE``, ``TEMPORAL_API_KEY``, TLS settings,
``TEMPORAL_PROFILE`` and the TOML config file), see ``starter.connect``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field

ENV_PREFIX = "SKILLS_"


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    task_queue: str = "skills"
    """Task queue of the worker; schedules start their runs on it."""

    data_dir: Path = Path(".data")
    """Where the default SQLite store and the outbox live."""

    database_url: str | None = None
    """SQLAlchemy URL of the skill store; defaults to a SQLite file in `data_dir`.
    PostgreSQL works with the same code: ``postgresql+psycopg://user:pw@host/db``."""

    mcp_config: Path | None = None
    """A JSON file with an ``mcpServers`` object (the format MCP desktop clients use).
    The bundled ``outbox`` server is always available unless this file defines its own."""

    timezone: str = Field(default_factory=lambda: system_timezone())
    """Time zone injected into cron triggers that name none; defaults to the system zone."""

    default_agent_id: str = "thinker"
    """Agent that owns a skill registered without ``agent_id``."""

    catchup_window: timedelta = timedelta(hours=1)
    """How late a schedule may still fire a missed action after the server or worker was down."""

    tool_call_timeout: timedelta = timedelta(seconds=60)
    """Start-to-close timeout of one MCP tool call."""

    @property
    def store_url(self) -> str:
        return self.database_url or f"sqlite:///{(self.data_dir / 'skills.db').resolve()}"

    @property
    def outbox_path(self) -> Path:
        return (self.data_dir / "outbox.jsonl").resolve()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        """Settings from ``SKILLS_*`` variables; explicit ``overrides`` win."""
        environ = os.environ if environ is None else environ
        values: dict[str, object] = {}
        for name in cls.model_fields:
            raw = environ.get(ENV_PREFIX + name.upper())
            if raw not in (None, ""):
                values[name] = raw
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls.model_validate(values)


def system_timezone() -> str:
    """The IANA name of the machine's time zone (``TZ``, then /etc/localtime), else UTC."""
    candidates = [os.environ.get("TZ", "").lstrip(":")]
    try:
        candidates.append(str(Path("/etc/localtime").resolve()).split("zoneinfo/", 1)[1])
    except (OSError, IndexError):
        pass
    try:
        candidates.append(Path("/etc/timezone").read_text().strip())
    except OSError:
        pass
    for name in candidates:
        if not name:
            continue
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            continue
        return name
    return "UTC"
