"""The secrets a process knows, so that no text the engine stores, sends or logs carries one.

An OpenAI-compatible proxy may echo the API key in its error, a tool may print a token it
was given, a database error may quote its URL. Every configured secret is registered here
once, at start (the LLM key, the database password, the Telegram token, Temporal's API key) or when it is
first used (each ``${VAR}`` an MCP server's config expands), and :func:`redact` blots them
out of run summaries, Temporal failures, notifications and log lines; :func:`redact_value` out of
every activity's result (tool results, excerpts, script output, the model's replies).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable, Mapping
from typing import TypeVar

from pydantic import BaseModel

# SQLAlchemy (a third of a second to import) is imported where a database URL is read: a `skills` command
# that has none to read does not load it.

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


T = TypeVar("T")
MAX_DEPTH = 64
"""How deep :func:`redact_value` follows nested values (results are JSON-like and far shallower)."""


def redact_value(value: T, _depth: int = 0) -> T:
    """``value`` with every known secret blotted out of every string in it (pydantic models,
    dataclasses, dicts, lists and tuples followed): an activity's result before Temporal records it.
    ``value`` itself when nothing in it carries a secret, so the common case copies nothing."""
    if not _secrets or _depth > MAX_DEPTH:
        return value
    if isinstance(value, str):
        return redact(value)  # type: ignore[return-value]
    if isinstance(value, BaseModel):
        changed = {name: new for name in type(value).model_fields
                   if (new := redact_value(old := getattr(value, name), _depth + 1)) is not old}
        return value.model_copy(update=changed) if changed else value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changed = {f.name: new for f in dataclasses.fields(value) if f.init
                   if (new := redact_value(old := getattr(value, f.name), _depth + 1)) is not old}
        return dataclasses.replace(value, **changed) if changed else value
    if isinstance(value, dict):
        items = [(redact_value(k, _depth + 1), redact_value(v, _depth + 1)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)  # type: ignore[return-value]
    if isinstance(value, (list, tuple)):
        items = [redact_value(v, _depth + 1) for v in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return (tuple(items) if isinstance(value, tuple) else items)  # type: ignore[return-value]
    return value


def database_password(url: str | None) -> str | None:
    """The password in a SQLAlchemy URL, if it has one."""
    if not url:
        return None
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).password  # type: ignore[return-value]
    except ArgumentError:
        return None


def mask_url(url: str) -> str:
    """A database URL fit to show: its password replaced by ``***``."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return redact(url)


TOKEN_VARIABLES = ("TELEGRAM_BOT_TOKEN", "TEMPORAL_API_KEY", "TEMPORAL_TLS_CLIENT_KEY_DATA", "SKILLS_CODEC_TOKEN")
"""Environment variables that hold secrets: the Telegram bot's token, Temporal's API key and client
key (read by the SDK's env config, see client.connect), the codec endpoint's token. (The payload
keys are registered when they are loaded, client.codec.)"""


def process_secrets(llm_api_key: str | None, database_url: str | None,
                    environ: Mapping[str, str]) -> list[str | None]:
    """The secrets a process is configured with: the LLM key, the database password, tokens."""
    return [llm_api_key, database_password(database_url), *(environ.get(name) for name in TOKEN_VARIABLES)]
