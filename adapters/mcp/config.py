"""The MCP servers' config: the ``mcpServers`` file, ``${VAR}`` expansion, the argument rules.

Tools come from MCP servers listed in an ``mcpServers`` JSON file (the format MCP
desktop clients use). Values may hold ``${VAR}`` references; they are expanded (by
:class:`EnvExpander`) only when a server is connected, so secrets never reach
Temporal payloads or logs.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import re2
from pydantic import ValidationError as PydanticValidationError
from pydantic import model_validator

from config.secrets import add_secrets
from config.settings import ENGINE_VARIABLE_PREFIXES
from skills import linear
from skills.errors import McpConfigError
from skills.run.arguments import ArgumentRules, ParameterDefault
from skills.spec.mcpservers import McpServerConfig, Transport

PROJECT_ROOT = Path(__file__).resolve().parents[2]

_SERVER_NAME = linear.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
_ENV_REFERENCE = re2.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
"""RE2, linear in the value: with Python's re each unclosed ``${A:-`` scanned the rest of the value, so
60 KB of them in a SKILL.md toolset's env took 11 s of the worker's time at every connect."""


def load_mcp_config(
    path: Path | None, *, defaults: Mapping[str, McpServerConfig]
) -> dict[str, McpServerConfig]:
    """The servers to connect: ``defaults`` overlaid by the ``mcpServers`` of the file at ``path``.

    A server in the file replaces a default of the same name. Raises
    :class:`McpConfigError` naming the file, the server and the field at fault.
    """
    servers = dict(defaults)
    if path is None:
        return servers
    try:
        document = json.loads(path.read_text())
    except OSError as exc:
        raise McpConfigError(f"{path}: cannot read the MCP config: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise McpConfigError(
            f"{path}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    entries = document.get("mcpServers") if isinstance(document, dict) else None
    if not isinstance(entries, dict):
        raise McpConfigError(f'{path}: expected an object {{"mcpServers": {{"<name>": {{...}}}}}}')
    for name, entry in entries.items():
        servers[name] = _parse_server(path, name, entry)
    return servers


def _parse_server(path: Path, name: str, entry: Any) -> McpServerConfig:
    where = f"{path}: server {name!r}"
    if not _SERVER_NAME.match(name):
        raise McpConfigError(f"{where}: a server name may hold only letters, digits, '_' and '-'")
    try:
        return McpServerConfig.model_validate(entry)
    except PydanticValidationError as exc:
        raise McpConfigError(
            f"{where}: " + "; ".join(_describe_field_error(e) for e in exc.errors())
        ) from exc


def _describe_field_error(error: Any) -> str:
    field = ".".join(str(part) for part in error["loc"])
    if error["type"] == "extra_forbidden":
        known = ", ".join(McpServerConfig.model_fields)
        return f"field {field!r}: unknown field (known: {known})"
    message = error["msg"].removeprefix("Value error, ")
    return f"field {field!r}: {message}" if field else message


@dataclass(frozen=True)
class McpConfigSource:
    """Where the hub's servers come from, so that it can read them again when the file changes."""

    path: Path | None
    defaults: Mapping[str, McpServerConfig] = field(default_factory=dict)

    def load(self) -> dict[str, McpServerConfig]:
        return load_mcp_config(self.path, defaults=self.defaults)

    def stamp(self) -> tuple[int, int, int] | None:
        """Changes whenever the file is written, replaced (a Kubernetes ConfigMap swap) or removed."""
        if self.path is None:
            return None
        try:
            stat = self.path.stat()
        except OSError:
            return None
        return stat.st_mtime_ns, stat.st_size, stat.st_ino


TELEGRAM_CHAT_ID_LIMIT = 20
"""The chat_id rule: a ``chat_id`` longer than this is replaced by the default chat; real ids are short,
invented ones (``"user_primary_chat_12345"``) are not."""


def load_argument_rules(
    path: Path | None, *, default_chat_id: str | None = None, environ: Mapping[str, str] | None = None
) -> ArgumentRules:
    """The argument pipeline's rules: the built-in ones, overlaid by the JSON or YAML file at ``path``.

    Built in: with ``default_chat_id``, ``telegram_send_message.chat_id`` is filled in when it
    is missing, not a string or longer than 20 characters (an id an LLM invented).
    String ``value``s in the file may use ``${VAR}``, read from ``environ`` now.
    """
    rules = ArgumentRules()
    if default_chat_id:
        chat = ParameterDefault(value=default_chat_id, max_length=TELEGRAM_CHAT_ID_LIMIT)
        rules = ArgumentRules(defaults={"telegram_send_message": {"chat_id": chat}})
    if path is None:
        return rules
    import yaml  # with a rules file only: PyYAML is not the worker's until a file needs it

    from skills import yamlsafe

    try:
        document = yamlsafe.load(path.read_text(), source=str(path)) or {}
        extra = ArgumentRules.model_validate(document)
    except OSError as exc:
        raise McpConfigError(f"{path}: cannot read the argument rules: {exc.strerror or exc}") from exc
    except yamlsafe.YamlRefusedError as exc:
        raise McpConfigError(str(exc)) from exc
    except yaml.YAMLError as exc:
        raise McpConfigError(f"{path}: not valid JSON or YAML: {exc}") from exc
    except PydanticValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'rules'}: {e['msg']}" for e in exc.errors())
        raise McpConfigError(f"{path}: {problems}") from exc
    expand = EnvExpander(os.environ if environ is None else environ)
    try:
        defaults = {
            tool: {
                name: d.model_copy(update={"value": expand(d.value)}) if isinstance(d.value, str) else d
                for name, d in params.items()
            }
            for tool, params in extra.defaults.items()
        }
    except McpConfigError as exc:
        raise McpConfigError(f"{path}: {exc}") from exc
    return rules.merged(extra.model_copy(update={"defaults": defaults}))


class InProcessServer(McpServerConfig):
    """A bundled server (``mcp_servers``) that the worker runs in its own process: the MCP client reaches it
    in memory, so there is no process to start (a second Python importing the MCP SDK, over a second of
    CPU) and no JSON-RPC to frame on either side. It is the same server ``python -m`` runs, its settings
    given as that process's environment would be (``env``).

    Made by the engine's code only (:func:`outbox_server`): an ``mcpServers`` file's entry is always a
    process or a URL, and this type refuses any server that is not bundled."""

    @model_validator(mode="after")
    def _bundled_only(self) -> InProcessServer:
        if not self.bundled:
            raise ValueError("only a bundled server (mcp_servers) runs in the worker's process")
        return self

    @property
    def transport(self) -> Transport:
        return "in-process"

    def build(self, expand: EnvExpander) -> Any:
        """A new instance of the server (an ``MCPServer``), on its ``env`` expanded now."""
        module = importlib.import_module(self.args[1])
        return module.build_server({name: expand(value) for name, value in self.env.items()})


def outbox_server(outbox_path: Path, idempotency_window_hours: float | None = None, *,
                  in_process: bool = False) -> McpServerConfig:
    """The bundled outbox server, writing to ``outbox_path``, run with this interpreter (``in_process``: in
    this process, :class:`InProcessServer`); it keeps the idempotency keys it served for
    ``idempotency_window_hours`` (its own default when None)."""
    window = {} if idempotency_window_hours is None else {"SKILLS_IDEMPOTENCY_WINDOW_HOURS": f"{idempotency_window_hours:g}"}
    return (InProcessServer if in_process else McpServerConfig)(
        command=sys.executable,
        args=["-m", "mcp_servers.outbox"],
        env={"SKILLS_OUTBOX_PATH": str(outbox_path), **window},
        # The package may not be installed (a checkout run in place): start where it can be imported.
        cwd=PROJECT_ROOT,
    )


def engine_variable(name: str) -> bool:
    return name.upper().startswith(ENGINE_VARIABLE_PREFIXES)


def toolset_environ(allowlist: Collection[str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """What a skill's toolset may expand ``${VAR}`` from: the allowlisted variables the worker has, never
    one of the engine's own."""
    source = os.environ if environ is None else environ
    return {name: source[name] for name in allowlist if name in source and not engine_variable(name)}


def env_references(config: McpServerConfig) -> dict[str, bool]:
    """Every variable a server's config refers to (``${VAR}``), in order, and whether each reference has a
    default (``${VAR:-default}``) wherever it is used."""
    values = [config.command or "", *config.args, *config.env.values(), config.url or "", *config.headers.values()]
    found: dict[str, bool] = {}
    for value in values:
        for match in _ENV_REFERENCE.finditer(value):
            found[match.group(1)] = found.get(match.group(1), True) and match.group(2) is not None
    return found


class EnvExpander:
    """Expands ``${VAR}`` at connect time and remembers the values, so they can be hidden in error texts."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        """``environ`` is all there is to expand from (a toolset's: :func:`toolset_environ`)."""
        self._environ = environ
        self.secrets: set[str] = set()

    def __call__(self, value: str) -> str:
        return _ENV_REFERENCE.sub(self._substitute, value)

    def _substitute(self, match: Any) -> str:
        name, default = match.group(1), match.group(2)
        value = self._environ.get(name)
        if value is None:
            if default is None:
                raise McpConfigError(f"environment variable {name} is not set (used as ${{{name}}})")
            return default
        if len(value) >= 4:  # shorter values would blot out ordinary words in messages
            self.secrets.add(value)
            add_secrets([value])  # and out of every log line, failure and notice of this process
        return value

    def redact(self, text: str) -> str:
        for secret in sorted(self.secrets, key=len, reverse=True):
            text = text.replace(secret, "***")
        return text
