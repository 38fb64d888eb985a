"""What every ``skills`` command shares: the global options, the settings, the process setup and
the one way a command's error becomes its exit status.

Global options (``--address``, ``--namespace``, ``--task-queue``, and ``--json`` for commands
that print data) are accepted before the subcommand and after it, and the one given last wins:
``skills --address A setup`` and ``skills setup --address A`` are the same command. They land
in one :class:`Globals` object, ``ctx.obj``, which every subcommand reads.

Exit status: 0 when all is well, 1 when an input was refused or the work failed, 2 on a usage
error (click's) or on settings that cannot be used, 130 on Ctrl-C.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import click

from starter import print_failure
from starter.output import print_json

if TYPE_CHECKING:
    from client import SkillsClient
    from config.settings import Settings

# The settings (pydantic), the client (temporalio) and the engine's errors are imported when a command
# needs them, not here: `skills --version` and `--help` need none, and importing them costs more than
# the answer (bench/startup.py).

F = TypeVar("F", bound=Callable[..., Any])

CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@dataclass
class Globals:
    """The global options as finally given, and the settings they select."""

    address: str | None = None
    namespace: str | None = None
    task_queue: str | None = None
    json: bool = False
    _settings: Settings | None = field(default=None, repr=False)

    def settings(self) -> Settings:
        """``SKILLS_*`` settings, ``--task-queue`` winning over ``SKILLS_TASK_QUEUE``; read once."""
        if self._settings is None:
            from config.settings import Settings

            self._settings = Settings.from_env(task_queue=self.task_queue)
        return self._settings

    @property
    def queue(self) -> str:
        return self.settings().task_queue


def current() -> Globals:
    """The running command's global options."""
    ctx = click.get_current_context()
    if not isinstance(ctx.obj, Globals):
        ctx.obj = Globals()
    return ctx.obj


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Keep a global option's value; one given after the subcommand overrides one given before."""
    if value is None or value is False:
        return value
    if not isinstance(ctx.obj, Globals):
        ctx.obj = Globals()
    setattr(ctx.obj, param.name or "", value)
    return value


def connection_options(f: F) -> F:
    """``--address``, ``--namespace``, ``--task-queue``: which Temporal, and which worker on it."""
    for option in reversed([
        click.option("--address", metavar="HOST:PORT", expose_value=False, callback=_remember,
                     help="Temporal's address (default: TEMPORAL_ADDRESS, the temporal.toml profile, "
                          "or localhost:7233)."),
        click.option("--namespace", metavar="NS", expose_value=False, callback=_remember,
                     help="Temporal namespace (default: TEMPORAL_NAMESPACE or default)."),
        click.option("--task-queue", metavar="QUEUE", expose_value=False, callback=_remember,
                     help="The worker's task queue (default: SKILLS_TASK_QUEUE or skills)."),
    ]):
        f = option(f)
    return f


def json_option(f: F) -> F:
    """``--json``: print the answer as JSON (for commands that print data)."""
    return click.option("--json", "json", is_flag=True, default=False, expose_value=False, callback=_remember,
                        help="Print JSON instead of text (stable, for scripts).")(f)


def data_command(f: F) -> F:
    """A command that prints data: the connection options and ``--json``."""
    return json_option(connection_options(f))


def process_command(f: F) -> F:
    """A command that runs a process (worker, dev, mcp, telegram, setup): the connection options."""
    return connection_options(f)


REF = click.argument("ref", metavar="REF")
AGENT = click.option("--agent", metavar="AGENT", help="The agent that owns the skill (when two agents have one "
                                                      "of that name; file skills belong to `files`).")
"""The skill a command is about, and the agent whose it is: the commands of skills and of runs take them."""


def refuse_json(command: str) -> None:
    """``--json`` given before a command that prints no data: say so rather than ignore it."""
    if current().json:
        raise click.UsageError(f"--json: `skills {command}` prints no data")


class OrderedGroup(click.Group):
    """Commands listed in the order they were added (the order of the docs), not alphabetically.

    ``lazy`` names commands that live in modules of their own (``name -> ("module:attribute", short
    help)``, the attribute a command or a list of them): a module is imported only when one of its
    commands is run, so ``skills get`` does not import the MCP server, the Telegram adapter and the
    installer (a second of CPU a command); ``--help`` lists them by the short help given here, which
    tests/starter/test_cli.py holds equal to the commands' own."""

    def __init__(self, *args: Any, lazy: dict[str, tuple[str, str]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})
        self._listing = False

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*self.commands, *(name for name in self.lazy if name not in self.commands)]

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self._listing = True
        try:
            super().format_commands(ctx, formatter)
        finally:
            self._listing = False

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in self.lazy:
            target, short_help = self.lazy[name]
            if self._listing:  # `skills --help`: a line of the list, the module left unloaded
                return click.Command(name, short_help=short_help)
            module, _, attribute = target.partition(":")
            found = getattr(importlib.import_module(module), attribute)
            for command in found if isinstance(found, list | tuple) else [found]:
                if command.name == name:
                    self.add_command(command)
        return super().get_command(ctx, name)


# --- the process ---------------------------------------------------------------------------

def prepare_process(settings: Settings, *, long_running: bool = False, metrics_address: str | None = None) -> None:
    """What a command that talks to Temporal needs before it connects.

    - Logs go to stderr (``SKILLS_LOG_LEVEL``, ``SKILLS_LOG_FORMAT``), secrets redacted; a one-shot
      command logs warnings and worse only, its answer being its output.
    - The Temporal SDK core's own log lines (e.g. ``[TMPRL1103]`` about a large payload), which it
      writes to stdout by default, are forwarded to that logging (``config.logs``), so stdout
      carries the answer alone.
    - The configured secrets (LLM key, database password, tokens) are known to the redactor, so no
      error or log line this process prints shows one.
    - ``metrics_address``: the process's runtime exports Prometheus metrics there (``skills dev``'s worker).
    """
    from config.logs import configure_logging
    from config.secrets import add_secrets, process_secrets

    add_secrets(process_secrets(settings.llm_api_key, settings.database_url, os.environ))
    level = settings.log_level if long_running else _at_least_warning(settings.log_level)
    buckets = None
    if metrics_address is not None:
        from adapters.metrics import HISTOGRAM_BUCKETS

        buckets = HISTOGRAM_BUCKETS
    configure_logging(level, settings.log_format, metrics_address=metrics_address, histogram_buckets=buckets)


def _at_least_warning(level: str) -> str:
    number = logging.getLevelName(level.upper())
    return level if isinstance(number, int) and number >= logging.WARNING else "WARNING"


def with_client(work: Callable[[SkillsClient], Awaitable[None]]) -> int:
    """Connect as the global options say, run ``work``, return 0 (errors are run_command's)."""
    from client import SkillsClient

    options = current()
    prepare_process(options.settings())

    async def go() -> None:
        skills = await SkillsClient.connect(task_queue=options.queue, address=options.address,
                                            namespace=options.namespace, by="cli")
        await work(skills)

    import asyncio  # the event loop's modules: a command that connects needs them, --help does not

    asyncio.run(go())
    return 0


def serve_until_stopped(serve: Callable[[], Coroutine[Any, Any, None]]) -> int:
    """Run a long-lived server of the CLI (``skills mcp``, ``skills console``) to its end: 1 when Temporal is down
    (said on stderr), 0 when it stops or is interrupted."""
    import asyncio
    import sys

    from skills.errors import TemporalUnavailableError

    try:
        asyncio.run(serve())
    except TemporalUnavailableError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


def answer(data: Any, human: Callable[[], None]) -> None:
    """The command's answer: ``data`` as JSON with --json, else what ``human`` prints."""
    if current().json:
        print_json(data)
    else:
        human()


# --- running a command ---------------------------------------------------------------------


def run_command(command: click.Command, argv: Sequence[str] | None, prog_name: str) -> int:
    """Run a click command (or group) to its exit status, every failure mapped to one:
    refusals and failures print as :func:`starter.print_failure` does (JSON with ``--json``)."""
    options = Globals()
    try:
        result = command.main(args=list(argv) if argv is not None else None, prog_name=prog_name,
                              standalone_mode=False, obj=options)
    except click.ClickException as e:
        e.show()
        return e.exit_code
    except click.Abort:
        return 130
    except Exception as e:
        code = _failure(options, e)
        if code is None:
            raise
        return code
    return result if isinstance(result, int) else 0


def _failure(options: Globals, e: Exception) -> int | None:
    """The exit status of a command that raised ``e``, its refusal printed; None: not one of ours.
    The error classes are imported here, after the fact: one raised was imported by then."""
    from temporalio.service import RPCError

    from config.settings import SettingsError
    from skills.errors import SkillNotFoundError, SkillsError, SkillValidationError

    if isinstance(e, SettingsError):
        print_failure(options.json, "invalid settings", e.errors)
        return 2
    if isinstance(e, SkillValidationError):
        return print_failure(options.json, "refused", [err.model_dump() for err in e.errors])
    if isinstance(e, SkillNotFoundError):
        return print_failure(options.json, "not found", [{"field": "ref", "message": str(e)}])
    if isinstance(e, RPCError):
        return print_failure(options.json, "failed", [{"field": "", "message": f"Temporal refused: {e.message}"}])
    if isinstance(e, SkillsError | OSError | ValueError):
        return print_failure(options.json, "failed", [{"field": "", "message": str(e)}])
    return None
