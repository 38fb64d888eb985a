"""How :meth:`config.settings.Settings.from_env` reads the environment: ``SKILLS_*`` variables from a given
mapping (``os.environ`` by default), only while it runs, so settings built in code read none; and a refusal
told field by field, each named as the user gave it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from pydantic_settings import BaseSettings, EnvSettingsSource

ENV_PREFIX = "SKILLS_"


class SettingsError(ValueError):
    """Settings that cannot be used: one ``{field, message}`` per problem, the field named as
    it was given (``SKILLS_FAILURE_LIMIT`` for a variable, ``failure_limit`` for an override)."""

    def __init__(self, errors: list[dict[str, str]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{e['field']}: {e['message']}" for e in errors))


_environ: ContextVar[Mapping[str, str] | None] = ContextVar("skills_settings_environ", default=None)
"""The environment :meth:`Settings.from_env` reads; None (the default) reads none."""


class _EnvironSource(EnvSettingsSource):
    """pydantic-settings' environment source over a given mapping rather than ``os.environ``."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self._environ = environ
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return {(k if self.case_sensitive else k.lower()): v for k, v in self._environ.items()
                if not (self.env_ignore_empty and v == "")}


def environment_source(settings_cls: type[BaseSettings]) -> EnvSettingsSource | None:
    """The environment source of a :meth:`~config.settings.Settings.from_env` under way; None outside one (settings
    built in code read no environment)."""
    environ = _environ.get()
    return None if environ is None else _EnvironSource(settings_cls, environ)


@contextmanager
def reading(environ: Mapping[str, str]) -> Iterator[None]:
    token = _environ.set(environ)
    try:
        yield
    finally:
        _environ.reset(token)


def problem(error: Any, given: Mapping[str, object]) -> dict[str, str]:
    """One validation error as ``{field, message}``, the field named as the user gave it."""
    name = str(error["loc"][0]) if error["loc"] else ""
    field = name if name in given or name.isupper() else (ENV_PREFIX + name.upper() if name else "")
    message = error["msg"]
    if name == "database_url":  # its message shows the URL masked; the input would show the password
        return {"field": field, "message": message.removeprefix("Value error, ")}
    if error.get("input") is not None and not isinstance(error["input"], dict):
        message += f" (got {error['input']!r})"
    return {"field": field, "message": message}
