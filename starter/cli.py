"""`skills`: the command line of the engine.

    skills dev                      local Temporal dev server + worker + bundled skills
    skills worker                   the worker alone (what runs in Kubernetes)
    skills setup                    register the search attributes on any cluster
    skills register FILE|-          JSON or YAML, exactly what an LLM sends to memory_store_skill
    skills update REF FILE|-        change some fields
    skills get|delete|pause|resume|run REF
    skills list | runs [REF] | outbox
    skills chat "message" [--session S]   talk to the assistant (it schedules skills for you)
    skills catalog [--refresh]      the worker's tools, by MCP server, with each server's state
    skills validate|match|prompt|show|sync   SKILL.md files (see docs/skill-files.md)
    skills mcp [--http]             the management tools as an MCP server (see docs/mcp-server.md)
    skills telegram [--chat ID]     answer Telegram messages with the assistant (see docs/chat.md)

REF is a skill id or name. Every command takes --json. A refused input exits 1
and prints the normalizer's message, one line per problem.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from client import SkillsClient
from skills.errors import SkillNotFoundError, SkillsError, SkillValidationError
from skills.messages import ChatReply
from skills.models import RunRecord, Skill
from starter import exit_process, files_cli, mcp_server, print_failure, telegram_bot, tools_cli

Handler = Callable[[argparse.Namespace, SkillsClient], Awaitable[Any]]


def main(argv: list[str] | None = None) -> None:
    exit_process(run(argv))


def run(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _task_queue_default(args)
    if args.command in files_cli.HANDLERS:
        return files_cli.HANDLERS[args.command](args)
    if args.command == "mcp":
        return mcp_server.run_mcp(args)
    if args.command == "telegram":
        return telegram_bot.run_telegram(args)
    if args.command in ("dev", "worker", "setup"):
        return _local_command(args)
    try:
        return asyncio.run(_client_command(args))
    except SkillValidationError as e:
        return print_failure(getattr(args, "json", False), "refused", [err.model_dump() for err in e.errors])
    except SkillNotFoundError as e:
        return print_failure(getattr(args, "json", False), "not found", [{"field": "ref", "message": str(e)}])
    except (SkillsError, OSError, ValueError, yaml.YAMLError) as e:
        return print_failure(getattr(args, "json", False), "failed", [{"field": "", "message": str(e)}])

def _local_command(args: argparse.Namespace) -> int:
    if args.command == "dev":
        from starter.dev import run_dev

        return run_dev(Path(args.config))
    if args.command == "worker":
        import worker

        worker.main()
        return 0
    from starter.setup import run_setup

    return asyncio.run(run_setup())


async def _client_command(args: argparse.Namespace) -> int:
    skills = await SkillsClient.connect(task_queue=args.task_queue, address=args.address, namespace=args.namespace)
    handler: Handler = COMMANDS[args.command]
    await handler(args, skills)
    return 0


# --- commands -----------------------------------------------------------------------------


async def _register(args: argparse.Namespace, skills: SkillsClient) -> None:
    result = await skills.register(_read_input(args.file))
    _show(args, result, lambda: _registered(result.skill, result.notes, result.next_fire, "registered"))


async def _update(args: argparse.Namespace, skills: SkillsClient) -> None:
    result = await skills.update(args.ref, _read_input(args.file), args.agent)
    _show(args, result, lambda: _registered(result.skill, result.notes, result.next_fire, "updated"))


async def _get(args: argparse.Namespace, skills: SkillsClient) -> None:
    skill = await skills.get(args.ref, args.agent)
    next_fire = await skills.next_fire(skill)
    data = {**skill.model_dump(mode="json", by_alias=True), "tier": skill.tier,
            "next_fire": next_fire.isoformat() if next_fire else None}
    _show(args, data, lambda: _describe(skill, next_fire))


async def _list(args: argparse.Namespace, skills: SkillsClient) -> None:
    found = await skills.list(agent_id=args.agent)
    _show(args, found, lambda: _table(
        ["ID", "AGENT", "NAME", "TIER", "TRIGGER", "STATE", "LAST RUN"],
        [[str(s.id), s.agent_id, s.name, s.tier, _trigger(s), _state(s), _last_run(s)] for s in found],
    ))


async def _delete(args: argparse.Namespace, skills: SkillsClient) -> None:
    skill = await skills.delete(args.ref, args.agent)
    _show(args, skill, lambda: print(f"deleted skill {skill.id} '{skill.name}' and its schedule"))


async def _pause(args: argparse.Namespace, skills: SkillsClient) -> None:
    skill = await skills.pause(args.ref, args.agent)
    _show(args, skill, lambda: print(f"paused skill {skill.id} '{skill.name}' ({skill.disabled_reason})"))


async def _resume(args: argparse.Namespace, skills: SkillsClient) -> None:
    skill = await skills.resume(args.ref, args.agent)
    next_fire = await skills.next_fire(skill)
    _show(args, skill, lambda: print(f"resumed skill {skill.id} '{skill.name}'; next fire {_when(next_fire)}"))


async def _run(args: argparse.Namespace, skills: SkillsClient) -> None:
    result = await skills.run(args.ref, args.agent, wait=not args.no_wait)
    if isinstance(result, str):
        _show(args, {"workflow_id": result}, lambda: print(f"started {result}"))
        return
    _show(args, result, lambda: _runs_table([result]))
    if result.status == "error":
        raise SkillsError(f"the run failed: {result.summary}")


async def _runs(args: argparse.Namespace, skills: SkillsClient) -> None:
    found = await skills.runs(args.ref, args.agent, limit=args.limit)
    _show(args, found, lambda: _runs_table(found))


async def _chat(args: argparse.Namespace, skills: SkillsClient) -> None:
    reply = await skills.chat(" ".join(args.message), session_id=args.session)
    _show(args, reply, lambda: _chatted(reply))
    if not reply.ok:
        raise SkillsError(reply.reply)


def _chatted(reply: ChatReply) -> None:
    print(reply.reply)
    for line in reply.change_lines():
        print(f"  {line}")
    print(f"  (session {reply.session_id}; {reply.prompt_tokens + reply.completion_tokens} tokens)")


async def _outbox(args: argparse.Namespace, skills: SkillsClient) -> None:
    messages = await skills.outbox(limit=args.limit, chat_id=args.chat)
    _show(args, messages, lambda: _table(
        ["AT", "CHAT", "MESSAGE"],
        [[_when(datetime.fromisoformat(m["at"])), m.get("chat_id") or "-", m["message"]] for m in messages],
    ))


COMMANDS: dict[str, Handler] = {
    "register": _register,
    "update": _update,
    "get": _get,
    "list": _list,
    "delete": _delete,
    "pause": _pause,
    "resume": _resume,
    "run": _run,
    "runs": _runs,
    "outbox": _outbox,
    "chat": _chat,
    **tools_cli.COMMANDS,
}


# --- output -------------------------------------------------------------------------------


def _show(args: argparse.Namespace, data: Any, human: Callable[[], None]) -> None:
    if args.json:
        print(json.dumps(_jsonable(data), indent=2, ensure_ascii=False))
    else:
        human()


def _jsonable(data: Any) -> Any:
    if isinstance(data, BaseModel):
        return data.model_dump(mode="json", by_alias=True)
    if isinstance(data, list):
        return [_jsonable(d) for d in data]
    return data


def _registered(skill: Skill | None, notes: list[str], next_fire: datetime | None, verb: str) -> None:
    assert skill is not None
    print(f"{verb} skill {skill.id} '{skill.name}' (agent {skill.agent_id}, {skill.tier} tier)")
    if skill.schedule_id:
        print(f"  schedule   {skill.schedule_id}: {_trigger(skill)}")
        print(f"  next fire  {_when(next_fire)}")
    if not skill.enabled:
        print(f"  disabled   {skill.disabled_reason}")
    for note in notes:
        print(f"  note       {note}")


def _describe(skill: Skill, next_fire: datetime | None) -> None:
    rows = [
        ("id", skill.id), ("agent", skill.agent_id), ("name", skill.name), ("description", skill.description),
        ("tier", skill.tier), ("state", _state(skill)), ("trigger", _trigger(skill)),
        ("schedule", skill.schedule_id or "-"), ("next fire", _when(next_fire)),
        ("required tools", ", ".join(skill.required_tools) or "-"), ("max steps", skill.max_steps),
        ("notify", f"{skill.notify_on_completion} (every {skill.notify_interval_minutes or 'default'} min)"),
        ("failures", _failures(skill)),
        ("last run", _last_run(skill)), ("created", _when(skill.created_at)), ("updated", _when(skill.updated_at)),
    ]
    for key, value in rows:
        print(f"{key:<15} {value}")
    for check in skill.preflight:
        print(f"pre-flight      {check.tool} {json.dumps(check.arguments)}: skip when {check.reason()}")
    if skill.execution_plan:
        print("plan")
        for step in skill.execution_plan:
            print(f"  {step.id}: {step.tool_name} {json.dumps(step.parameters, ensure_ascii=False)}")
    print("instructions")
    for line in skill.instructions.splitlines():
        print(f"  {line}")


def _runs_table(runs: list[RunRecord]) -> None:
    _table(
        ["STARTED", "SKILL", "TRIGGER", "STATUS", "TIER", "TOOLS", "TOKENS", "SUMMARY"],
        [[_when(r.started_at), r.skill_name, r.trigger, r.status, r.tier, str(len(r.tool_calls)),
          str(r.prompt_tokens + r.completion_tokens), r.summary[:60]] for r in runs],
    )


def _table(header: list[str], rows: list[list[str]]) -> None:
    if not rows:
        print("(none)")
        return
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


def _trigger(skill: Skill) -> str:
    return skill.trigger_config.describe() if skill.trigger_config else skill.trigger_type


def _state(skill: Skill) -> str:
    return "enabled" if skill.enabled else f"disabled ({skill.disabled_reason or 'by user'})"


def _failures(skill: Skill) -> str:
    if not skill.consecutive_failures:
        return "none"
    text = f"{skill.consecutive_failures} in a row, last at {_when(skill.last_failure_at)}"
    if skill.backoff_until:
        text += f"; backing off until {_when(skill.backoff_until)}"
    return f"{text}; last error: {(skill.last_error or '')[:200]}"


def _last_run(skill: Skill) -> str:
    if skill.last_run_at is None:
        return "-"
    return f"{skill.last_run_status} at {_when(skill.last_run_at)}"


def _when(moment: datetime | None) -> str:
    return moment.astimezone().isoformat(timespec="seconds") if moment else "-"


def _read_input(path: str) -> dict[str, Any]:
    text = sys.stdin.read() if path == "-" else Path(path).read_text()
    data = yaml.safe_load(text)
    if not isinstance(data, dict):
        raise ValueError(f"{'stdin' if path == '-' else path}: expected a JSON or YAML object with the skill's fields")
    return data


# --- arguments ----------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="skills", description="A durable skills engine on Temporal.")
    parser.add_argument("--address", help="Temporal address (default: TEMPORAL_ADDRESS or localhost:7233)")
    parser.add_argument("--namespace", help="Temporal namespace (default: TEMPORAL_NAMESPACE or default)")
    parser.add_argument("--task-queue", default=None, help="the worker's task queue (default: SKILLS_TASK_QUEUE or skills)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    dev = sub.add_parser("dev", help="run the local dev server, the worker and the bundled skills")
    dev.add_argument("--config", default="temporal-dev.yaml", help="the dev server profile")
    sub.add_parser("worker", help="run the worker (connects with Temporal's env config)")
    sub.add_parser("setup", help="register the engine's search attributes on the namespace")

    def command(name: str, help: str, ref: bool | str = False) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help)
        if ref:
            p.add_argument("ref", nargs="?" if ref == "optional" else None, help="skill id or name")
        p.add_argument("--agent", help="the agent that owns the skill (when names clash)")
        p.add_argument("--json", action="store_true", help="print JSON")
        return p

    command("register", "register a skill from a JSON or YAML file (- for stdin)").add_argument("file")
    command("update", "update some fields of a skill", ref=True).add_argument("file")
    command("get", "show one skill", ref=True)
    command("list", "list skills")
    command("delete", "delete a skill and its schedule", ref=True)
    command("pause", "disable a skill (its schedule is paused)", ref=True)
    command("resume", "enable a skill again", ref=True)
    command("run", "run a skill now", ref=True).add_argument("--no-wait", action="store_true")
    command("runs", "recent runs, of one skill or of all", ref="optional").add_argument("--limit", type=int, default=20)
    chat = command("chat", "one message to the assistant: it can schedule skills for you")
    chat.add_argument("message", nargs="+", help='e.g. "remind me in 5 minutes to drink water"')
    chat.add_argument("--session", help="go on with this conversation (the reply says its session id)")
    files_cli.add_parsers(sub)
    tools_cli.add_parsers(sub)
    mcp_server.add_parsers(sub)
    telegram_bot.add_parsers(sub)
    outbox = command("outbox", "the messages the outbox MCP server holds, newest first")
    outbox.add_argument("--limit", type=int, default=20)
    outbox.add_argument("--chat", help="only this chat id")
    return parser


def _task_queue_default(args: argparse.Namespace) -> None:
    from config.settings import Settings

    if args.task_queue is None:
        args.task_queue = Settings.from_env().task_queue
