"""The secrets a process knows, so that no text the engine stores, sends or logs carries one.

An OpenAI-compatible proxy may echo the API key in its error, a tool may print a token it
was given, a database error may quote its URL. Every configured secret is registered here
once, at start (the LLM key, the database password, the Telegram token, Temporal's API key) or when it is
first used (each ``${VAR}`` an MCP server's config expands), and :func:`redact` blots them
out of run summaries, Temporal failures, notifications and log lines.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

MASK = "***"
MIN_LENGTH = 4
"""Shorter values would blot out ordinary words; no real secret is that short."""

_lock = threading.Lock()
_secrets: tuple[str, ...] = ()


def add_secrets(values: Iterable[str | None]) -> None:
    """Remember these values as secrets (empty and very short ones are ignored)."""
    global _secrets
    new = {v for v in values if v and len(v) >= MIN_LENGTH}
    with _lock:
        if new - set(_secrets):
            # Longest first, so a secret that contains another is blotted out whole.
            _secrets = tuple(sorted(new | set(_secrets), key=len, reverse=True))


def redact(text: str) -> str:
    """``text`` with every known secret replaced by ``***``."""
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def database_password(url: str | None) -> str | None:
    """The password in a SQLAlchemy URL, if it has one."""
    if not url:
        return None
    try:
        return make_url(url).password  # type: ignore[return-value]
    except ArgumentError:
        return None


def mask_url(url: str) -> str:
    """A database URL fit to show: its password replaced by ``***``."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return redact(url)


TOKEN_VARIABLES = ("TELEGRAM_BOT_TOKEN", "TEMPORAL_API_KEY", "TEMPORAL_TLS_CLIENT_KEY_DATA")
"""Environment variables that hold secrets the engine uses outside its settings: the Telegram bot's
token, and Temporal's API key and client key (read by the SDK's env config, see client.connect)."""


def process_secrets(llm_api_key: str | None, database_url: str | None,
                    environ: Mapping[str, str]) -> list[str | None]:
    """The secrets a process is configured with: the LLM key, the database password, tokens."""
    return [llm_api_key, database_password(database_url), *(environ.get(name) for name in TOKEN_VARIABLES)]
