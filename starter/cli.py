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

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from starter import exit_process
from starter.command import (
    CONTEXT_SETTINGS,
    OrderedGroup,
    answer,
    current,
    data_command,
    prepare_process,
    process_command,
    refuse_json,
    run_command,
    with_client,
)
from starter.output import fields, shorten, table, when

if TYPE_CHECKING:
    from client import SkillsClient
    from skills.chat.proposals import ChangeDecided
    from skills.messages.chat import ChatReply
    from skills.owner.approvals import Approval
    from skills.spec.models import Delivery, RunRecord, Skill
    from skills.when.outlook import Outlook


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


# --- processes ----------------------------------------------------------------------------


@cli.command(short_help="The dev server, the worker and the bundled skills (make run).")
@click.option("--config", "config", default="temporal-dev.yaml", show_default=True, type=click.Path(path_type=Path),
              help="The dev server profile: ports, db file, namespace, search attributes.")
@process_command
def dev(config: Path) -> int:
    """The local dev server, the worker and the bundled skills (what `make run` runs).

    --address and --namespace choose where the dev server listens and its namespace,
    over the profile's; --task-queue the worker's queue.
    """
    refuse_json("dev")
    from starter.dev import run_dev

    options = current()
    return run_dev(config, task_queue=options.task_queue, address=options.address, namespace=options.namespace)


@cli.command(short_help="The worker alone (what runs in Kubernetes).")
@process_command
def worker() -> int:
    """The worker alone (what runs in Kubernetes): connects with Temporal's env config."""
    refuse_json("worker")
    import worker as worker_process

    options = current()
    settings = options.settings()
    prepare_process(settings, long_running=True)
    worker_process.main(settings, address=options.address, namespace=options.namespace)
    return 0


@cli.command(short_help="Migrate the store; register the search attributes on the namespace.")
@process_command
def setup() -> int:
    """Create and migrate the store (SKILLS_DATABASE_URL), then register the engine's search
    attributes on the namespace (safe to repeat)."""
    refuse_json("setup")
    from starter.setup import run_setup

    options = current()
    settings = options.settings()
    prepare_process(settings)
    import asyncio

    return asyncio.run(run_setup(settings, address=options.address, namespace=options.namespace))


# --- skills -------------------------------------------------------------------------------

REF = click.argument("ref", metavar="REF")
AGENT = click.option("--agent", metavar="AGENT", help="The agent that owns the skill (when two agents have one "
                                                      "of that name; file skills belong to `files`).")


@cli.command(short_help="Register a skill from a JSON or YAML file (- for stdin), or many from a list or folder.")
@click.argument("file", metavar="FILE|FOLDER|-")
@data_command
def register(file: str) -> int:
    """Register a skill from a JSON or YAML file (- for stdin): what an LLM sends to memory_store_skill.

    A file holding a list, or a folder of such files, registers every skill in it at once: each is
    refused on its own (by its position) and a refused one leaves nothing stored; the exit status is
    1 when any was refused."""
    from starter.inputs import load_skills_input

    data = load_skills_input(file)
    if isinstance(data, list):
        return _register_many(data)

    async def work(skills: SkillsClient) -> None:
        result = await skills.register(data)
        answer(result, lambda: _registered(result.skill, result.notes, result.next_fire, "registered"))

    return with_client(work)


def _register_many(items: list[Any]) -> int:
    refused = 0

    async def work(skills: SkillsClient) -> None:
        nonlocal refused
        result = await skills.register_many(items)
        refused = len(result.refused)

        def human() -> None:
            for item in result.items:
                if item.ok:
                    print(f"registered #{item.index} skill {item.skill_id} '{item.name}' (next fire "
                          f"{when(item.next_fire)})")
                else:
                    problems = "; ".join(f"{e.field}: {e.message}" for e in item.errors)
                    print(f"refused #{item.index} '{item.name}': {problems}")
            print(f"{len(result.registered)} registered, {refused} refused")

        answer(result, human)

    with_client(work)
    return 1 if refused else 0


@cli.command(short_help="Change some fields of a skill.")
@REF
@click.argument("file", metavar="FILE|-")
@AGENT
@data_command
def update(ref: str, file: str, agent: str | None) -> int:
    """Change some fields of a skill; the merged skill is validated again."""
    from starter.inputs import load_input

    patch = load_input(file)

    async def work(skills: SkillsClient) -> None:
        result = await skills.update(ref, patch, agent)
        answer(result, lambda: _registered(result.skill, result.notes, result.next_fire, "updated"))

    return with_client(work)


@cli.command(short_help="A skill's revisions: who changed what, when.")
@REF
@click.option("--limit", type=click.IntRange(min=1, max=1000), default=50, show_default=True,
              help="At most this many revisions.")
@AGENT
@data_command
def history(ref: str, limit: int, agent: str | None) -> int:
    """A skill's revisions, newest first: each change (who made it: cli, mcp, chat:<session>, sync...;
    when; the fields it changed). A deleted skill's too, by its name or id. `skills revert REF REV`
    restores one."""

    async def work(skills: SkillsClient) -> None:
        found = await skills.history(ref, agent, limit=limit)
        answer(found, lambda: _history_table(found))

    return with_client(work)


def _history_table(found: list[Any]) -> None:
    from skills.spec.revisions import changed_fields

    if not found:
        print("no revision recorded yet (the next change is the first)")
        return
    table(["REV", "WHEN", "BY", "ACTION", "CHANGED"],
          [[r.rev, r.at.isoformat(timespec="seconds"), r.by, r.action, ", ".join(changed_fields(r)) or "-"]
           for r in found], cut={"CHANGED": 70})


@cli.command(short_help="Restore a revision of a skill (its definition and schedule).")
@REF
@click.argument("rev", type=click.IntRange(min=1))
@AGENT
@data_command
def revert(ref: str, rev: int, agent: str | None) -> int:
    """Restore revision REV of a skill (`skills history REF` lists them): its definition, and with it
    its schedule, validated again like any update and recorded as a revision of its own. A deleted
    skill is registered again (under a new id)."""

    async def work(skills: SkillsClient) -> None:
        result = await skills.revert(ref, rev, agent)
        answer(result, lambda: _registered(result.skill, result.notes, result.next_fire, f"reverted to {rev}:"))

    return with_client(work)


@cli.command()
@REF
@AGENT
@data_command
def get(ref: str, agent: str | None) -> int:
    """One skill, with its state, disabled reason and next fire."""

    async def work(skills: SkillsClient) -> None:
        import asyncio

        skill = await skills.get(ref, agent)
        # What follows needs only the skill: asked at once, each a round trip to Temporal or the worker.
        next_fire, waiting, recent = await asyncio.gather(
            skills.next_fire(skill), skills.approvals(skill_id=skill.id), skills.runs(skill.id, limit=20))
        skipped = _skipped_days(skill)
        # Where the last result went, destination by destination (deliver_to).
        delivered = next((r.deliveries for r in recent if r.deliveries), [])
        ahead = await _outlook(skills, skill, recent)
        data = {**skill.model_dump(mode="json", by_alias=True), "tier": skill.tier,
                "next_fire": next_fire.isoformat() if next_fire else None,
                "skipped_days": [{"date": day.isoformat(), "why": why} for day, why in skipped],
                "waiting_for_approval": [a.model_dump(mode="json") for a in waiting],
                "last_deliveries": [d.model_dump(mode="json") for d in delivered],
                "next_30_days": ahead.model_dump(mode="json")}
        answer(data, lambda: _describe(skill, next_fire, skipped, waiting, delivered, ahead))

    return with_client(work)


@cli.command("next", short_help="A skill's next fire times, in its zone, skipped days marked.")
@REF
@click.option("-n", "count", type=click.IntRange(1, 100), default=10, show_default=True,
              help="How many fires to list (skipped days are listed beside them).")
@AGENT
@data_command
def next_(ref: str, count: int, agent: str | None) -> int:
    """A skill's next fire times in its time zone, with the days its schedule skips (business days,
    holidays) marked where a fire would have been."""

    async def work(skills: SkillsClient) -> None:
        found = await skills.next(ref, agent, count)

        def show() -> None:
            print(f"skill {found.skill_id} '{found.name}': {found.trigger}"
                  + (f"; {found.paused}: no fire until it is enabled" if found.paused else ""))
            for line in found.lines() or ["(no fire to come)"]:
                print(f"  {line}")

        answer(found, show)

    return with_client(work)


@cli.command("list")
@AGENT
@click.option("--files", "file_skills", is_flag=True,
              help="The SKILL.md skills of this machine's folders instead, with where each came from.")
@data_command
def list_(agent: str | None, file_skills: bool) -> int:
    """Every skill: trigger, state and last run (with --files: every SKILL.md skill, its source and origin)."""
    if file_skills:
        from starter import install_cli

        return install_cli.list_files()

    async def work(skills: SkillsClient) -> None:
        found = await skills.list(agent_id=agent)
        answer(found, lambda: table(
            ["ID", "AGENT", "NAME", "TIER", "TRIGGER", "STATE", "LAST RUN"],
            [[s.id, s.agent_id, s.name, s.tier, _trigger(s), _state(s), _last_run(s)] for s in found],
            cut={"NAME": 40, "TRIGGER": 50, "STATE": 50, "LAST RUN": 40},
        ))

    return with_client(work)


@cli.command()
@REF
@AGENT
@data_command
def delete(ref: str, agent: str | None) -> int:
    """Delete a skill, its schedule and its runs."""

    async def work(skills: SkillsClient) -> None:
        skill = await skills.delete(ref, agent)
        answer(skill, lambda: print(f"deleted skill {skill.id} '{skill.name}' and its schedule"))

    return with_client(work)


@cli.command()
@REF
@AGENT
@data_command
def pause(ref: str, agent: str | None) -> int:
    """Disable a skill: its schedule is paused, with the reason."""

    async def work(skills: SkillsClient) -> None:
        skill = await skills.pause(ref, agent)
        answer(skill, lambda: print(f"paused skill {skill.id} '{skill.name}' ({skill.disabled_reason})"))

    return with_client(work)


@cli.command()
@REF
@AGENT
@data_command
def resume(ref: str, agent: str | None) -> int:
    """Enable a skill again."""

    async def work(skills: SkillsClient) -> None:
        skill = await skills.resume(ref, agent)
        next_fire = await skills.next_fire(skill)
        answer(skill, lambda: print(f"resumed skill {skill.id} '{skill.name}'; next fire {when(next_fire)}"))

    return with_client(work)


@cli.command(short_help="Give a skill a hook token (POST /hooks/<id>), or --revoke it.")
@REF
@click.option("--revoke", is_flag=True, help="Remove the skill's hook: its token stops working.")
@AGENT
@data_command
def hook(ref: str, revoke: bool, agent: str | None) -> int:
    """Give the skill a new token for POST /hooks/<id> on the worker's health port (SKILLS_HOOKS=on),
    replacing any earlier one; the token is printed once, and only its digest is kept. --revoke removes it."""

    async def work(skills: SkillsClient) -> None:
        skill, token = await skills.hook(ref, agent, revoke=revoke)
        if token is None:
            answer(skill, lambda: print(f"skill {skill.id} '{skill.name}' has no hook now"))
            return

        def show() -> None:
            print(f"hook of skill {skill.id} '{skill.name}' (any earlier token no longer works):")
            print(f"  token  {token}")
            print("  (shown once: only its digest is stored)")
            print(f"  curl -X POST http://<worker>:{current().settings().health_port or 8080}/hooks/{skill.id} "
                  f"-H 'Authorization: Bearer {token}' -H 'Idempotency-Key: <id>' -d '{{\"any\": \"json\"}}'")
            print("  the worker serves hooks when SKILLS_HOOKS=on")

        answer({"skill_id": skill.id, "name": skill.name, "path": f"/hooks/{skill.id}", "token": token}, show)

    return with_client(work)


@cli.command("run", short_help="Run a skill now, whatever its trigger.")
@REF
@click.option("--no-wait", is_flag=True, help="Start the run and print its workflow id; do not wait for it.")
@AGENT
@data_command
def run_(ref: str, no_wait: bool, agent: str | None) -> int:
    """Run a skill now, whatever its trigger; exit 1 if the run failed."""
    from skills.errors import SkillsError

    async def work(skills: SkillsClient) -> None:
        result = await skills.run(ref, agent, wait=not no_wait)
        if isinstance(result, str):
            answer({"workflow_id": result}, lambda: print(f"started {result}"))
            return
        answer(result, lambda: _runs_table([result]))
        if result.status == "error":
            raise SkillsError(f"the run failed: {result.summary}")

    return with_client(work)


@cli.command(short_help="Try a skill once: read-only tools called, every other call recorded, nothing sent.")
@click.argument("target", metavar="REF|FILE")
@click.option("--change", "change_file", metavar="FILE", help="With REF: rehearse the skill as this partial "
                                                             "definition (JSON or YAML, - for stdin) would change it.")
@AGENT
@data_command
def rehearse(target: str, change_file: str | None, agent: str | None) -> int:
    """Rehearse a skill: the stored one REF names, or the definition in FILE (JSON or YAML, - for stdin;
    nothing is registered). It runs once as a `rehearsal` run: the tools whose server marks them
    read-only are called, every other call is recorded with the arguments it would have been sent
    with, an Agent-tier skill asks its model, and nothing is delivered or counted. Prints the calls,
    the messages it would have sent and the tokens; exit 1 if the rehearsal ended in error."""
    from pathlib import Path as _Path

    from skills.errors import SkillsError
    from skills.run.rehearsal import rehearsal_lines
    from starter.inputs import load_input

    is_file = target == "-" or _Path(target).is_file()
    if is_file and change_file is not None:
        raise click.BadParameter("--change goes with a REF, not a FILE", param_hint="--change")
    data = load_input(target) if is_file else load_input(change_file) if change_file is not None else None

    async def work(skills: SkillsClient) -> None:
        result = await skills.rehearse(None if is_file else target, agent, data=data)
        assert not isinstance(result, str)
        answer(result, lambda: print("\n".join(rehearsal_lines(result))))
        if result.status == "error":
            raise SkillsError(f"the rehearsal failed: {result.summary}")

    return with_client(work)


@cli.command(short_help="Emit an event: every skill subscribed to it runs.")
@click.argument("name", metavar="NAME")
@click.option("--data", "data_text", metavar="JSON", help="The event's data: any JSON value (- reads stdin); "
                                                         "a plan reads it as {{event.data.FIELD}}.")
@click.option("--id", "event_id", metavar="ID", help="The event's id: the same id again within the dedupe window "
                                                    "(SKILLS_EVENT_DEDUPE_WINDOW) starts nothing.")
@data_command
def emit(name: str, data_text: str | None, event_id: str | None) -> int:
    """Emit the event NAME: every enabled skill whose trigger_config.event is NAME starts a run with
    the event as its input. Prints the runs started (workflow ids) and the skills skipped, and why."""
    import sys

    data = None
    if data_text is not None:
        text = sys.stdin.read() if data_text == "-" else data_text
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise click.BadParameter(f"not valid JSON ({e.msg} at position {e.pos})", param_hint="--data") from None
        except RecursionError:
            raise click.BadParameter("nested too deeply to read", param_hint="--data") from None
        except ValueError as e:  # an integer of over 4,300 digits
            raise click.BadParameter(f"cannot be read: {e}", param_hint="--data") from None

    async def work(skills: SkillsClient) -> None:
        result = await skills.emit(name, data, event_id)
        answer(result, lambda: print(result.message))

    return with_client(work)


@cli.command()
@click.argument("ref", metavar="[REF]", required=False)
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="At most this many runs.")
@AGENT
@data_command
def runs(ref: str | None, limit: int, agent: str | None) -> int:
    """Recent runs, of one skill or of all, newest first."""

    async def work(skills: SkillsClient) -> None:
        found = await skills.runs(ref, agent, limit=limit)
        history = None if current().json else await skills.run_history(ref, agent)
        answer(found, lambda: (_runs_table(found), _history(history)))

    return with_client(work)


@cli.command(short_help="Incidents: a skill's failures of one cause, told once.")
@click.argument("ref", metavar="[REF]", required=False)
@click.option("--all", "closed", is_flag=True, help="The closed incidents too (recovered, disabled...).")
@click.option("--limit", type=click.IntRange(min=1, max=1000), default=50, show_default=True,
              help="At most this many incidents.")
@AGENT
@data_command
def incidents(ref: str | None, closed: bool, limit: int, agent: str | None) -> int:
    """The open incidents, of one skill or of all, newest first: consecutive failures of a skill with
    one cause, notified once when they began and once when the skill recovered. --all shows the
    closed ones too."""

    async def work(skills: SkillsClient) -> None:
        found = await skills.incidents(ref, agent, closed=closed, limit=limit)
        answer(found, lambda: _incidents_table(found, closed))

    return with_client(work)


def _incidents_table(found: list[Any], closed: bool) -> None:
    from skills.display import span

    if not found:
        print("no incident" + ("" if closed else " open (--all shows the closed ones)"))
        return
    table(["ID", "SKILL", "STATE", "FAILED RUNS", "SINCE", "LASTED", "CAUSE"],
          [[i.id, i.skill_name, i.closed_by or "open", i.failures, i.opened_at.isoformat(timespec="seconds"),
            span((i.closed_at or i.last_failure_at) - i.opened_at), i.first_error] for i in found],
          cut={"CAUSE": 70})


# --- falling behind --------------------------------------------------------------


@cli.command(short_help="Check the schedules against the store; exit 1 on a problem.")
@data_command
def doctor() -> int:
    """Compare the Temporal schedules of the task queue with the skills in the store: a schedule
    missing, one no skill has, one paused behind the engine's back (or running for a disabled skill),
    a skill overdue, an engine round missing or paused; and whether the worker can run scripts in its
    sandbox (if not: which folder stops which user). Each problem is printed with what to do;
    exits 1 when there is one (see docs/observability.md#skills-doctor)."""
    from client.doctor import diagnose

    status = 0

    async def work(skills: SkillsClient) -> None:
        nonlocal status
        found = await diagnose(skills)
        status = 0 if found.ok else 1
        answer({"ok": found.ok, **found.model_dump(mode="json")}, lambda: _diagnosis(found))

    with_client(work)
    return status


def _diagnosis(found: Any) -> None:
    print(f"task queue {found.task_queue}: {found.skills} scheduled skills, {found.schedules} schedules")
    if found.sandbox and not any(problem.kind == "sandbox" for problem in found.problems):
        print(f"script sandbox: {found.sandbox}")
    for problem in found.problems:
        schedule = "" if problem.kind == "sandbox" else f"\n  schedule: {problem.schedule_id or '-'}"
        print(f"\n✗ {problem.kind}: {problem.message}{schedule}\n  fix: {problem.fix}")
    print("\nno problem found" if found.ok else f"\n{len(found.problems)} problem(s)")


def _history(history: Any) -> None:
    """How far back ``skills runs`` can go: the worker's retention, and the oldest run it keeps."""
    if history is None:
        return
    kept = f"the last {history.retention_days} days" if history.retention_days else "all runs (no age limit)"
    cap = f", at most {history.max_runs_per_skill:,} a skill" if history.max_runs_per_skill else ""
    oldest = f"; the oldest kept started {when(history.oldest)}" if history.oldest else ""
    print(f"History: {kept}{cap}{oldest} (older runs are pruned by the maintenance round).")


@cli.command()
@click.option("--all", "everything", is_flag=True, help="Answered ones too, newest first.")
@click.option("--limit", type=click.IntRange(min=1, max=500), default=50, show_default=True,
              help="At most this many approvals.")
@data_command
def approvals(everything: bool, limit: int) -> int:
    """What waits for your yes: runs' calls of tools that need approval, and proposed changes."""

    async def work(skills: SkillsClient) -> None:
        found = await skills.approvals(status=None if everything else "pending", limit=limit)
        answer(found, lambda: table(
            ["ID", "KIND", "SKILL", "STATUS", "ASKED", "EXPIRES", "WHAT"],
            [[a.id, a.kind, a.skill_name, a.status + (f" ({a.decided_by})" if a.decided_by else ""),
              when(a.requested_at), when(a.expires_at), a.summary] for a in found],
            cut={"SKILL": 30, "WHAT": 80}))

    return with_client(work)


@cli.command()
@click.argument("approval_id", metavar="ID", type=click.IntRange(min=1))
@data_command
def approve(approval_id: int) -> int:
    """Approve: the waiting call is made, once (or the proposed change is made)."""

    async def work(skills: SkillsClient) -> None:
        _answered(await skills.answer(approval_id, True, by="cli"), approval_id)

    return with_client(work)


@cli.command()
@click.argument("approval_id", metavar="ID", type=click.IntRange(min=1))
@click.option("--reason", default="", help="Why (the run's model reads it; the run's record keeps it).")
@data_command
def deny(approval_id: int, reason: str) -> int:
    """Deny: the call is not made (an Agent run is told and goes on; a Direct run ends as denied)."""

    async def work(skills: SkillsClient) -> None:
        _answered(await skills.answer(approval_id, False, reason=reason, by="cli"), approval_id)

    return with_client(work)


@cli.command()
@click.argument("tool")
@click.option("--skill", "skill_ref", metavar="REF", help="Only this skill's calls (default: any skill's).")
@click.option("--where", "where_items", metavar="ARG=VALUE", multiple=True,
              help="Only calls whose argument ARG is exactly VALUE (repeatable; non-strings compared as JSON).")
@click.option("--for", "duration", metavar="30d|12h|90m", help="Expires after this long (default: until revoked).")
@data_command
def grant(tool: str, skill_ref: str | None, where_items: tuple[str, ...], duration: str | None) -> int:
    """A standing grant: calls of TOOL that need approval and match are approved without asking."""
    from skills.owner.grants import describe_grant, parse_duration, parse_where

    try:
        where = parse_where(list(where_items))
    except ValueError as e:
        raise click.BadParameter(str(e).removeprefix("where: "), param_hint="--where") from None
    try:
        minutes = parse_duration(duration) if duration is not None else None
    except ValueError as e:
        raise click.BadParameter(str(e).removeprefix("for: "), param_hint="--for") from None

    async def work(skills: SkillsClient) -> None:
        made = await skills.grant(tool, skill=skill_ref, where=where, minutes=minutes, by="cli")
        answer(made, lambda: print(f"{describe_grant(made)}; "
                                   + (f"expires {when(made.expires_at)}" if made.expires_at else "until revoked")))

    return with_client(work)


@cli.command()
@click.option("--all", "everything", is_flag=True, help="Revoked and expired ones too.")
@data_command
def grants(everything: bool) -> int:
    """The standing grants: what is approved without asking."""

    async def work(skills: SkillsClient) -> None:
        now = datetime.now(UTC)
        found = await skills.grants(everything=everything)
        answer(found, lambda: table(
            ["ID", "TOOL", "SKILL", "WHERE", "STATE", "EXPIRES", "BY"],
            [[g.id, g.tool, g.skill_name or "(any)", " ".join(f"{k}={v}" for k, v in g.where.items()) or "-",
              g.state(now), when(g.expires_at), g.created_by] for g in found],
            cut={"WHERE": 60}))

    return with_client(work)


@cli.command()
@click.argument("grant_id", metavar="GRANT_ID", type=click.IntRange(min=1))
@data_command
def revoke(grant_id: int) -> int:
    """Revoke a standing grant: its calls wait for your answer again."""

    async def work(skills: SkillsClient) -> None:
        revoked = await skills.revoke_grant(grant_id)
        answer({"ok": True, "grant_id": revoked.id}, lambda: print(f"grant {revoked.id} revoked"))

    return with_client(work)


@cli.command()
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True,
              help="At most this many messages.")
@click.option("--chat", metavar="ID", help="Only the messages to this chat id.")
@data_command
def outbox(limit: int, chat: str | None) -> int:
    """The messages the outbox MCP server holds, newest first."""

    async def work(skills: SkillsClient) -> None:
        messages = await skills.outbox(limit=limit, chat_id=chat)
        answer(messages, lambda: table(
            ["AT", "CHAT", "MESSAGE"],
            [[when(datetime.fromisoformat(m["at"])), m.get("chat_id") or "-", m["message"]] for m in messages],
            cut={"CHAT": 24, "MESSAGE": 100},
        ))

    return with_client(work)


@cli.command(short_help="One message to the assistant: it can schedule skills for you.")
@click.argument("message", nargs=-1, required=True)
@click.option("--session", metavar="S", help="Go on with this conversation (the reply says its session id).")
@click.option("--new", "new", is_flag=True,
              help="Start a new conversation, even while your last one has a proposal waiting for your yes.")
@click.option("--reply-to", "reply_to", metavar="RUN_ID",
              help="Reply to this run's result (`skills runs` shows RUN, its first characters): the turn "
                   "opens with the result and the skill it came from.")
@data_command
def chat(message: tuple[str, ...], session: str | None, new: bool, reply_to: str | None) -> int:
    """One message to the assistant, e.g. "remind me in 5 minutes to drink water": it can create,
    change and delete skills. While your last conversation has a proposal waiting, the message goes on
    with it (`skills chat yes` makes it); --new starts afresh. With --reply-to RUN_ID the message replies
    to that run's result ("why did it fail?", "send that to me every Monday too"). Exit 1 if the turn did
    not finish."""
    from skills.errors import SkillsError

    if new and session is not None:
        raise click.UsageError("--new starts a new conversation, --session goes on with one: give one of them")

    def waiting(line: str) -> None:  # on stderr: stdout stays the reply (and --json the JSON)
        print(f"  ... {line}", file=sys.stderr, flush=True)

    async def work(skills: SkillsClient) -> None:
        from starter.chat_session import going_on, remember

        data_dir = current().settings().data_dir
        chosen = session
        if chosen is None and reply_to is None and not new:
            chosen, note = await going_on(skills, data_dir)
            if note:
                print(f"  ({note})", file=sys.stderr, flush=True)
        reply = await skills.chat(" ".join(message), session_id=chosen, reply_to=reply_to, waiting=waiting)
        remember(data_dir, reply.session_id)
        answer(reply, lambda: _chatted(reply))
        if not reply.ok:
            raise SkillsError(reply.reply)

    return with_client(work)


def _answered(said: str | ChangeDecided, approval_id: int) -> None:
    """What came of an answer: a sentence (``Approved #2: stored skill 4 '...' (direct tier), first fire Mon
    ...``); --json gives the record, a proposed change's approval and the skill it made."""
    from skills.chat.proposals import ChangeDecided, decided_sentence

    if not isinstance(said, ChangeDecided):
        answer({"ok": True, "approval_id": approval_id, "result": said}, lambda: print(said))
        return
    sentence = decided_sentence(said)
    assert said.approval is not None  # the client raises when there is none
    answer({"ok": True, "approval_id": approval_id, "result": sentence,
            "approval": said.approval.model_dump(mode="json"), "change": said.change}, lambda: print(sentence))


# --- text ---------------------------------------------------------------------------------


def _chatted(reply: ChatReply) -> None:
    from skills.display import shown, shown_lines

    # The model's words may carry what a mail it read said: a terminal code in them (ESC[8m hides what
    # follows) must not hide or fake the proposal lines printed after them.
    print(shown_lines(reply.reply.split("\n")))
    from starter.chat_session import CLI_ANSWER

    for line in reply.account_lines(CLI_ANSWER):  # the engine's account, whatever the model said
        print(f"  {shown(line)}")
    for reason in reply.unavailable:
        print(f"  (not available this turn: {shown(reason)})")
    if reply.left_out:
        print(f"  (left out to fit the model's context, SKILLS_LLM_CONTEXT: {shown('; '.join(reply.left_out))})")
    print(f"  (session {reply.session_id}; {reply.prompt_tokens + reply.completion_tokens} tokens)")


def _registered(skill: Skill | None, notes: list[str], next_fire: datetime | None, verb: str) -> None:
    assert skill is not None
    print(f"{verb} skill {skill.id} '{skill.name}' (agent {skill.agent_id}, {skill.tier} tier)")
    rows: list[tuple[str, Any]] = []
    if skill.schedule_id:
        rows += [("schedule", f"{skill.schedule_id}: {_trigger(skill)}"),
                 ("next fire", when(next_fire) + _spread_note(skill) if next_fire else when(next_fire))]
    if skill.subscribed_event:
        rows.append(("trigger", f"{_trigger(skill)} (`skills emit {skill.subscribed_event}`)"))
    if not skill.enabled:
        rows.append(("disabled", skill.disabled_reason))
    rows += [("note", note) for note in notes]
    fields(rows, key_width=10, indent=2)


def _skipped_days(skill: Skill) -> list[tuple[Any, str]]:
    from skills.when.calendar import next_skipped

    return next_skipped(skill, now=datetime.now(UTC))


def _skips(skill: Skill, skipped: list[tuple[Any, str]]) -> list[tuple[str, Any]]:
    """The rows of ``skills get`` on the days the schedule skips."""
    rules = [*([f"public holidays of {skill.skip_holidays}"] if skill.skip_holidays else []),
             *(["weekends (business days only)"] if skill.business_days_only else [])]
    if not rules:
        return []
    days = ", ".join(f"{day:%a %Y-%m-%d} ({why})" for day, why in skipped)
    return [("skips", " and ".join(rules)), ("skipped next", days or "-")]


async def _outlook(skills: SkillsClient, skill: Skill, recent: list[RunRecord]) -> Outlook:
    """The skill's next 30 days (skills.when.outlook), its tokens from its own recorded runs, else from other
    skills' runs on its model."""
    from config.settings import Settings
    from skills.when.outlook import outlook

    def tokens(runs: list[RunRecord]) -> list[int]:
        return [r.prompt_tokens + r.completion_tokens for r in runs if r.tier == "agent" and r.status == "success"]

    settings = Settings()
    own = tokens(recent)
    similar: list[int] = []
    if not own and not skill.execution_plan:
        model = skill.model or settings.llm_model
        similar = tokens([r for r in await skills.runs(limit=200) if r.model == model])
    return outlook(skill, datetime.now(UTC), anchor=skill.created_at, done=skill.scheduled_runs,
                   notifier_tool=settings.notifier_tool, own_tokens=own, similar_tokens=similar,
                   price=settings.llm_price)


def _describe(skill: Skill, next_fire: datetime | None, skipped: list[tuple[Any, str]] | None = None,
              waiting: list[Approval] | None = None, delivered: list[Delivery] | None = None,
              ahead: Outlook | None = None) -> None:
    rows: list[tuple[str, Any]] = [
        ("id", skill.id), ("agent", skill.agent_id), ("name", skill.name), ("description", skill.description),
        ("tier", skill.tier), ("state", _state(skill)), ("trigger", _trigger(skill)),
        ("schedule", skill.schedule_id or "-"), ("next fire", when(next_fire)),
        *[("next 30 days", line.removeprefix("next 30 days: ")) for line in (ahead.lines() if ahead else [])], *_skips(skill, skipped or []),
        ("required tools", ", ".join(skill.required_tools) or "-"), ("max steps", skill.max_steps),
        *_shape(skill), ("notify", _notify(skill)), ("deliver", DELIVER_TEXT[skill.deliver]),
        ("deliver to", "; ".join(d.label for d in skill.deliver_to) or "the notifier"),
        *[("delivered", f"{d.destination}: {d.status}{f' ({d.error})' if d.error else ''}") for d in delivered or []],
        ("incidents", f"told when they open and end, and again every {_every(skill.remind_after_minutes)} while "
                      "they last" if skill.remind_after_minutes else "told when they open and when they end"),
        ("remembers", _remembers(skill)),
        ("failures", _failures(skill)),
        ("approval", _approval(skill)),
        *[("waiting", f"for approval {a.id}: {shorten(a.summary, 120)}") for a in waiting or []],
        ("last run", _last_run(skill)), ("created", when(skill.created_at)), ("updated", when(skill.updated_at)),
        ("revision", f"{skill.revision} (`skills history {skill.id}`)" if skill.revision else "none recorded yet"),
    ]
    rows[11:11] = _model_and_hook(skill)  # after "max steps"
    rows += [("pre-flight", f"{check.tool} {json.dumps(check.arguments)}: skip when {check.reason()}")
             for check in skill.preflight]
    fields(rows)
    if skill.execution_plan:
        print("plan")
        for step in skill.execution_plan:
            print(f"  {step.id}: {step.tool_name} {json.dumps(step.parameters, ensure_ascii=False)}")
    print("instructions")
    for line in skill.instructions.splitlines():
        print(f"  {line}")


def _model_and_hook(skill: Skill) -> list[tuple[str, Any]]:
    """The Agent tier's models (its own, then its fallbacks), and whether ``POST /hooks/<skill>`` may fire it."""
    rows: list[tuple[str, Any]] = []
    if skill.tier == "agent":
        model = skill.model or f"{current().settings().llm_model} (the default, SKILLS_LLM_MODEL)"
        rows.append(("model", model + "".join(f", then {m}" for m in skill.fallback_models)))
    rows.append(("hook", f"on: POST /hooks/{skill.id} with its token (`skills hook {skill.id} --revoke` "
                         "removes it)" if skill.has_hook else "off"))
    return rows


DELIVER_TEXT = {
    "always": "always (each successful run's result)",
    "on_change": "on change (a result only when it differs from the last one delivered)",
    "never": "never (no result is sent; failures still are)",
}


def _remembers(skill: Skill) -> str:
    """``context_from``: whose last delivered result each run is given."""
    from skills.run.recall import SELF

    if not skill.context_from:
        return "-"
    return ", ".join("its own last result" if n == SELF else f"{n}'s last result" for n in skill.context_from)


def _notify(skill: Skill) -> str:
    """When the user hears about a run, as a person says it."""
    if skill.notify_on_completion is False or skill.deliver == "never":
        return "on failure only"
    automatic = ", unless the run messaged the user itself" if skill.notify_on_completion is None else ""
    if skill.notify_interval_minutes:
        return (f"after each run{automatic}, at most every {_every(skill.notify_interval_minutes)}; "
                "failures always")
    default = current().settings().notify_interval
    return (f"after each run{automatic}, at most every {_every(default / timedelta(minutes=1))} "
            "(the default, SKILLS_NOTIFY_INTERVAL); failures always")


def _approval(skill: Skill) -> str:
    steps = [step.id for step in skill.execution_plan or [] if step.approval]
    exempt = (f"; runs unattended though marked destructive: {', '.join(skill.approval_exempt_tools)}"
              if skill.approval_exempt_tools else "")
    if not skill.approval_required_tools and not steps:
        return f"none listed (a tool marked destructive asks){exempt}"
    asked = ", ".join([*skill.approval_required_tools, *(f"step {s}" for s in steps)])
    timeout = (_every(skill.approval_timeout_minutes) if skill.approval_timeout_minutes
               else f"{_every(current().settings().approval_timeout / timedelta(minutes=1))} (SKILLS_APPROVAL_TIMEOUT)")
    return f"{asked}; unanswered in {timeout}: denied{exempt}"


def _every(minutes: float) -> str:
    """The cadence after "every": ``hour``, ``2 hours``, ``5 minutes``."""
    if minutes >= 60 and minutes % 60 == 0:
        hours = int(minutes // 60)
        return "hour" if hours == 1 else f"{hours} hours"
    if minutes == 1:
        return "minute"
    return f"{minutes:g} minutes"


def _runs_table(found: list[RunRecord]) -> None:
    from skills.chat.reply import RUN_PREFIX_CHARS

    table(
        ["STARTED", "RUN", "SKILL", "TRIGGER", "STATUS", "TIER", "TOOLS", "TOKENS", "MODEL", "SUMMARY"],
        [[when(r.started_at), r.run_id[:RUN_PREFIX_CHARS], r.skill_name, r.trigger, run_status(r), r.tier, len(r.tool_calls),
          r.prompt_tokens + r.completion_tokens, r.model or "-", r.summary] for r in found],
        cut={"SKILL": 40, "TRIGGER": 20, "MODEL": 30, "SUMMARY": 60},
        styles={"STATUS": {"success": "green", UNCHANGED: "green", "error": "red", "skipped": "yellow",
                           "missed": "yellow", "denied": "yellow", "quiet": "blue", STATUS_TEXT["waiting"]: "cyan"}},
    )


STATUS_TEXT = {"waiting": "waiting for approval"}
UNCHANGED = "success, unchanged"
"""A success whose result was the last one delivered (deliver: on_change): recorded, not sent again."""


def run_status(run: RunRecord) -> str:
    status = UNCHANGED if run.unchanged and run.status == "success" else STATUS_TEXT.get(run.status, run.status)
    if run.trigger == "rehearsal":
        return status + ", rehearsal: nothing sent"
    if run.deliveries:  # deliver_to: how many destinations had the result
        sent = sum(d.status == "delivered" for d in run.deliveries)
        status += f", delivered {sent}/{len(run.deliveries)}"
    return status


def _trigger(skill: Skill) -> str:
    return skill.trigger_config.describe() if skill.trigger_config else skill.trigger_type


def _state(skill: Skill) -> str:
    from skills.spec.models import ENDED

    ended = skill.ended(datetime.now(UTC))
    if ended is not None and (skill.enabled or skill.disabled_reason == ENDED):
        return f"ended ({ended})"
    return "enabled" if skill.enabled else f"disabled ({skill.disabled_reason or 'by user'})"


def _shape(skill: Skill) -> list[tuple[str, Any]]:
    """The schedule's shape and the run's limit (docs/skills.md#schedule-shape), as `skills get` shows them."""
    deadline = f"{skill.run_timeout_seconds / 60:g} min" if skill.run_timeout_seconds else "the engine's"
    rows: list[tuple[str, Any]] = [("timeout", f"{skill.timeout_minutes:g} min (then the run is an error)"
                                    if skill.timeout_minutes is not None else f"- (the engine's deadline: {deadline})")]
    if not skill.is_scheduled:
        return rows
    ends = [f"at {when(skill.end_at)}"] if skill.end_at else []
    if skill.max_runs is not None:
        ends.append(f"after {skill.max_runs} runs ({skill.scheduled_runs} so far)")
    return rows + [("ends", " or ".join(ends) or "never"),
                   ("jitter", _spread_text(skill)),
                   ("overlap", skill.overlap), ("catch-up", skill.catch_up)]


def _spread_note(skill: Skill) -> str:
    """`` (spread up to 5 min)`` after a fire the schedule's own calendar names, for a spread skill."""
    from skills.display import span
    from skills.when.spread import skill_spread

    spread = skill_spread(skill)
    return f" (spread up to {span(timedelta(seconds=spread))})" if spread else ""


def _spread_text(skill: Skill) -> str:
    """How late each fire may start, and whose choice that is (docs/triggers.md#spread)."""
    from skills.display import span
    from skills.when.spread import skill_spread

    spread = skill_spread(skill)
    if skill.jitter_seconds:
        return f"up to {skill.jitter_seconds} s"
    if spread:
        return f"up to {span(timedelta(seconds=spread))} (the default spread; `spread: false` for the exact time)"
    return "none"


def _failures(skill: Skill) -> str:
    if not skill.consecutive_failures:
        return "none"
    text = f"{skill.consecutive_failures} in a row, last at {when(skill.last_failure_at)}"
    if skill.backoff_until:
        text += f"; backing off until {when(skill.backoff_until)}"
    return f"{text}; last error: {shorten(skill.last_error or '', 200)}"


def _last_run(skill: Skill) -> str:
    if skill.last_run_at is None:
        return "-"
    return f"{skill.last_run_status} at {when(skill.last_run_at)}"
