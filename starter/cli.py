"""`skills`: the command line of the engine (click, with rich for tables).

    skills dev                      local Temporal dev server + worker + bundled skills
    skills worker                   the worker alone (what runs in Kubernetes)
    skills setup                    register the search attributes on any cluster
    skills register FILE|-          JSON or YAML, exactly what an LLM sends to memory_store_skill
    skills update REF FILE|-        change some fields
    skills get|delete|pause|resume|run REF
    skills next REF [-n 10]         the next fire times, in the skill's zone, skipped days marked
    skills emit NAME [--data JSON] [--id ID]   run every skill subscribed to the event NAME
    skills list | runs [REF] | outbox
    skills doctor                   the schedules against the store, the script sandbox; exits 1 on a problem
    skills approvals [--all] | approve ID | deny ID [--reason TEXT]   what waits for your yes
    skills grant TOOL [--skill REF] [--where ARG=VALUE]... [--for 30d] | grants [--all] | revoke ID
    skills chat "message" [--session S | --new]   talk to the assistant (it schedules skills for you)
    skills catalog [--refresh]      the worker's tools, by MCP server, with each server's state
    skills validate|match|prompt|show|sync   SKILL.md files (see docs/skill-files.md)
    skills mcp [--http]             the management tools as an MCP server (see docs/mcp-server.md)
    skills telegram [--chat ID]     answer Telegram messages with the assistant (see docs/chat.md)

REF is a skill id or name. --address, --namespace and --task-queue go before or after the
command, and every command honours them; every command that prints data takes --json. A
refused input exits 1 and prints the normalizer's message, one line per problem.
"""

from __future__ import annotations

import click

from starter import approval_cli, chat_cli, exit_process, process_cli, run_cli, skill_cli
from starter.command import CONTEXT_SETTINGS, OrderedGroup, data_command, run_command
from starter.run_cli import run_status as run_status  # the run's status as `skills runs` shows it


def main(argv: list[str] | None = None) -> None:
    exit_process(run(argv))


def run(argv: list[str] | None = None) -> int:
    """Run ``skills ARGV`` in this process; return its exit status."""
    return run_command(cli, argv, "skills")


# The commands of their own modules, in the order `skills --help` lists them (after this module's own), with
# the short help it lists them by (each command's own, as a test checks).
LAZY_COMMANDS = {
    "catalog": ("starter.tools_cli:catalog_command", "The worker's tools by MCP server, with their state."),
    "validate": ("starter.files_cli:COMMANDS", "Check SKILL.md files against the Agent Skills spec."),
    "match": ("starter.files_cli:COMMANDS", "Which SKILL.md skills a message may need, and why."),
    "prompt": ("starter.files_cli:COMMANDS", "The skills block an LLM would get for a message."),
    "show": ("starter.files_cli:COMMANDS", "One SKILL.md skill: frontmatter, body and resources."),
    "sync": ("starter.files_cli:COMMANDS", "Sync the SKILL.md skills that carry a schedule, now."),
    "trust": ("starter.files_cli:COMMANDS", "Let a SKILL.md skill's toolsets and scripts run, as they are now."),
    "untrust": ("starter.files_cli:COMMANDS", "Forget the trust in a skill's toolsets and scripts."),
    "install": ("starter.install_cli:COMMANDS", "Install SKILL.md skills into the user folder."),
    "uninstall": ("starter.install_cli:COMMANDS", "Remove a skill from the user folder."),
    "mcp": ("starter.mcp_server:mcp_command", "The management tools as an MCP server (stdio or HTTP)."),
    "telegram": ("starter.telegram_bot:telegram_command", "Answer Telegram messages with the assistant."),
    "console": ("starter.console_cli:console_command", "The owner's web console: the week, approvals, failures."),
}


@click.group(cls=OrderedGroup, context_settings=CONTEXT_SETTINGS, lazy=LAZY_COMMANDS)
@click.version_option(package_name="skills-engine", prog_name="skills", message="%(prog)s %(version)s",
                      help="Show the version and exit.")
@data_command
def cli() -> None:
    """A durable skills engine for AI assistants, on Temporal.

    Skills are stored, validated, and become Temporal Schedules; each fire is a workflow. The
    options above can also be given after the command. Docs: docs/cli.md.
    """


# The commands of this process's modules, in the order `skills --help` lists them (the lazy ones come after).
for _family in (process_cli, skill_cli, run_cli, approval_cli, chat_cli):
    for _command in _family.COMMANDS:
        cli.add_command(_command)
