"""The commands of runs and events: run, rehearse, emit, runs, incidents, doctor."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from starter.command import AGENT, REF, answer, current, data_command, with_client
from starter.output import table, when

if TYPE_CHECKING:
    from client import SkillsClient
    from skills.spec.models import RunRecord


@click.command("run", short_help="Run a skill now, whatever its trigger.")
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


@click.command(short_help="Try a skill once: read-only tools called, every other call recorded, nothing sent.")
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


@click.command(short_help="Emit an event: every skill subscribed to it runs.")
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


@click.command()
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


@click.command(short_help="Incidents: a skill's failures of one cause, told once.")
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


@click.command(short_help="Check the schedules against the store; exit 1 on a problem.")
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


COMMANDS = [run_, rehearse, emit, runs, incidents, doctor]
"""In the order `skills --help` lists them."""
