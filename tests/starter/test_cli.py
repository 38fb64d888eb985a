"""The `skills` command as a user runs it: the console script in its own process, against the
session's Temporal server and a real worker (the local checks run in this process).

Each process gets an environment without the developer's TEMPORAL_*, SKILLS_* and OPENAI_*
variables, and with TEMPORAL_ADDRESS pointing where nothing listens: a command reaches the
test server only if it honours --address.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
import uuid
from importlib.metadata import version
from pathlib import Path
from typing import Any

import click
import pytest
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

from adapters.store import migrations
from client import SkillsClient
from starter.cli import cli
from starter.cli import run as skills
from tests.cli_zygote import run_command
from tests.conftest import ROOT, Engine, eventually, free_port

SKILLS = Path(sys.executable).with_name("skills")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "SKILLS_", "OPENAI_"))}
    return {**env, "TEMPORAL_ADDRESS": f"127.0.0.1:{free_port()}", **extra}


def run_skills(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`skills ARGV` in a process of its own (not a terminal: its stdout is a pipe), forked from one that has
    imported what every command imports (tests/cli_zygote.py)."""
    return run_command([str(SKILLS), *argv], clean_env(**env), ROOT, 120)


def address_of(client: Client) -> str:
    return client.service_client.config.target_host


def water(name: str = "drink water", **fields: Any) -> dict[str, Any]:
    return {"name": name, "instructions": "Remind me to drink water", "schedule": "0 9 * * *",
            "execution_plan": [{"toolName": "outbox_send_message",
                                "parameters": {"message": "Drink a glass of water! " * 5}}], **fields}


# --- options ------------------------------------------------------------------------------


def test_every_option_has_help_text() -> None:
    def commands(group: click.Group) -> list[click.Command]:
        found: list[click.Command] = [group]
        with click.Context(group) as ctx:
            for name in group.list_commands(ctx):
                command = group.get_command(ctx, name)
                assert command is not None, f"skills {name} is listed but cannot be loaded"
                found += commands(command) if isinstance(command, click.Group) else [command]
        return found

    missing = [f"skills {command.name} {option.opts[0]}" for command in commands(cli)
               for option in command.params if isinstance(option, click.Option) and not option.help]
    assert missing == []
    assert all(command.help for command in commands(cli))


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert skills(["--version"]) == 0
    assert capsys.readouterr().out == f"skills {version('skills-engine')}\n"


def test_json_for_a_command_that_prints_no_data_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert skills(["--json", "worker"]) == 2
    assert "--json: `skills worker` prints no data" in capsys.readouterr().err


def test_settings_that_cannot_be_used_name_the_variable(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SKILLS_FAILURE_LIMIT", "many")
    assert skills(["--json", "match", "hello"]) == 2
    answer = json.loads(capsys.readouterr().out)
    assert answer["ok"] is False and answer["error"] == "invalid settings"
    [problem] = answer["errors"]
    assert problem["field"] == "SKILLS_FAILURE_LIMIT" and "(got 'many')" in problem["message"]


async def test_setup_honours_the_address_before_and_after_the_command(client: Client, tmp_path: Path) -> None:
    nowhere = f"127.0.0.1:{free_port()}"
    store = {"SKILLS_DATA_DIR": str(tmp_path)}
    before, after, real = await asyncio.gather(
        asyncio.to_thread(run_skills, "--address", nowhere, "setup", **store),
        asyncio.to_thread(run_skills, "setup", "--address", nowhere, **store),
        asyncio.to_thread(run_skills, "setup", "--address", address_of(client), **store),
    )
    for refused in (before, after):
        assert refused.returncode == 1
        assert f"cannot reach Temporal at {nowhere}" in refused.stderr
    assert real.returncode == 0, real.stderr
    # The store first (created and migrated), then the namespace.
    assert real.stdout == (f"store sqlite:///{tmp_path / 'skills.db'} at schema revision {migrations.head()}\n"
                           "search attributes already registered\n")


async def test_the_worker_honours_the_address_and_the_task_queue(client: Client, tmp_path: Path) -> None:
    queue = f"test-cli-{uuid.uuid4().hex[:8]}"
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        worker = subprocess.Popen([str(SKILLS), "--task-queue", queue, "worker", "--address", address_of(client)],
                                  cwd=ROOT, env=clean_env(SKILLS_DATA_DIR=str(tmp_path), SKILLS_HEALTH_PORT="0"),
                                  stdout=out, stderr=out)
    try:
        request = DescribeTaskQueueRequest(namespace=client.namespace, task_queue=TaskQueue(name=queue),
                                           task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW)

        async def polling() -> bool:
            assert worker.poll() is None, log.read_text()
            return bool((await client.workflow_service.describe_task_queue(request)).pollers)

        await eventually(polling, timeout=60)
        result = await SkillsClient(client, queue).register(water())
        assert result.skill is not None and result.skill.schedule_id == f"{queue}-1-drink-water"
        assert (tmp_path / "skills.db").exists()  # the worker's store: SKILLS_DATA_DIR
    finally:
        worker.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(worker.wait, 60)
    assert code == 0, log.read_text()


# --- reading skill files ------------------------------------------------------------------


def test_a_missing_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "water.yaml"
    assert skills(["register", str(path)]) == 1
    assert capsys.readouterr().err == f"error: failed\n  {path}: no such file\n"


def test_a_yaml_error_names_the_file_line_and_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "water.yaml"
    path.write_text('name: water\ninstructions: drink\n  schedule: "0 9 * * *"\n')
    assert skills(["register", str(path)]) == 1
    assert capsys.readouterr().err == (f"error: failed\n  {path}: line 3, column 11: "
                                       "mapping values are not allowed in this context\n")

    assert skills(["update", "water", str(path), "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == {"ok": False, "error": "failed", "errors": [
        {"field": "", "message": f"{path}: line 3, column 11: mapping values are not allowed in this context"}]}

    broken = tmp_path / "water.json"
    broken.write_text('{"name": "water",\n "instructions": }')
    assert skills(["register", str(broken)]) == 1
    assert f"{broken}: line 2, column 18: Expecting value" in capsys.readouterr().err


def test_standard_input_must_hold_an_object_or_a_list(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("just words\n"))
    assert skills(["register", "-"]) == 1
    assert ("stdin: expected a JSON or YAML object with the skill's fields (or a list of them), found a string"
            in capsys.readouterr().err)


# --- against a worker ---------------------------------------------------------------------


def options(engine: Engine) -> tuple[str, ...]:
    return ("--address", address_of(engine.skills.client), "--task-queue", engine.settings.task_queue)


async def test_a_large_registration_keeps_stdout_for_the_json(engine: Engine, tmp_path: Path) -> None:
    # Past 512 KiB the SDK used to warn (TMPRL1103), and its core wrote that to stdout, before the JSON.
    # The client now raises that threshold above the engine's own body limit, and the core's lines
    # that remain go to the log on stderr.
    path = tmp_path / "big.json"
    path.write_text(json.dumps(water("big", instructions="Drink water. " * 50_000)))
    done = await asyncio.to_thread(run_skills, "register", str(path), "--json", *options(engine))
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["ok"] is True and answer["skill"]["name"] == "big"
    assert "TMPRL1103" not in done.stdout


async def test_a_folder_registers_every_skill_in_it_and_names_each_refusal(engine: Engine, tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(json.dumps(water("folder one")))
    (tmp_path / "b.json").write_text(json.dumps([water("folder two"), water("folder one")]))  # a list: both
    (tmp_path / "notes.txt").write_text("not a skill file: left alone")

    done = await asyncio.to_thread(run_skills, "register", str(tmp_path), *options(engine))

    assert done.returncode == 1, done.stderr  # one was refused
    lines = done.stdout.splitlines()
    assert lines[0].startswith("registered #0 skill ") and "'folder one'" in lines[0]
    assert lines[1].startswith("registered #1 skill ") and "'folder two'" in lines[1]
    assert lines[2].startswith("refused #2 'folder one': name: ") and "already has a skill named" in lines[2]
    assert lines[3] == "2 registered, 1 refused"
    assert sorted(s.name for s in await engine.skills.list()) == ["folder one", "folder two"]
    assert [(r.action, r.by) for r in await engine.skills.history("folder two")] == [("created", "cli")]


async def test_get_list_and_runs_read_as_a_person_reads_them(engine: Engine) -> None:
    await engine.skills.register(water())
    await engine.skills.register(water("quiet", notify_on_completion=False))
    await engine.skills.register(water("hourly", notify_interval_minutes=60))
    ran = await engine.skills.run("drink water")
    assert not isinstance(ran, str) and len(ran.summary) > 60

    got, quiet, hourly, listed, runs, runs_json = await asyncio.gather(*(
        asyncio.to_thread(run_skills, *argv, *options(engine)) for argv in (
            ("get", "drink water"), ("get", "quiet"), ("get", "hourly"), ("list",), ("runs",), ("runs", "--json"))))
    for done in (got, quiet, hourly, listed, runs, runs_json):
        assert done.returncode == 0, done.stderr

    assert ("notify          after each run, unless the run messaged the user itself, at most every 10 minutes "
            "(the default, SKILLS_NOTIFY_INTERVAL); failures always") in got.stdout.splitlines()
    assert "notify          on failure only" in quiet.stdout.splitlines()
    assert ("notify          after each run, unless the run messaged the user itself, at most every hour; "
            "failures always") in hourly.stdout.splitlines()

    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["ID", "AGENT", "NAME", "TIER", "TRIGGER", "STATE", "LAST", "RUN"]
    assert any(line.split()[:4] == ["1", "thinker", "drink", "water"] for line in lines)

    header, row, history = runs.stdout.splitlines()
    assert history.startswith("History: the last 30 days, at most 1,000 a skill; the oldest kept started "), history
    assert header.split()[-1] == "SUMMARY"
    summary = row[header.index("SUMMARY"):]
    assert len(summary) == 60 and summary.endswith("…") and ran.summary.startswith(summary[:-1])
    assert [r["summary"] for r in json.loads(runs_json.stdout)] == [ran.summary]  # whole, in JSON

    # Not a terminal: no colour codes, no trailing blanks.
    for done in (got, listed, runs):
        assert "\x1b[" not in done.stdout
        assert all(line == line.rstrip() for line in done.stdout.splitlines())


async def test_a_refusal_with_json_is_parseable_and_exits_1(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "tea.json"
    path.write_text(json.dumps({"name": "tea", "instructions": "tea", "cron": "0 25 * * *"}))
    done = await asyncio.to_thread(run_skills, "--json", "register", str(path), *options(engine))
    assert done.returncode == 1
    assert json.loads(done.stdout) == {"ok": False, "error": "refused", "errors": [
        {"field": "trigger_config.schedule", "message": "'0 25 * * *': hour 25 is out of range (0-23)"}]}


async def test_a_namespace_temporal_does_not_know_is_one_line(client: Client) -> None:
    namespace = f"missing-{uuid.uuid4().hex[:8]}"
    done = await asyncio.to_thread(run_skills, "list", "--namespace", namespace, "--address", address_of(client))
    assert done.returncode == 1
    assert done.stderr == f"error: failed\n  Temporal refused: Namespace {namespace} is not found.\n"


async def test_get_forecasts_with_the_settings_of_its_environment(engine: Engine) -> None:
    """`skills get` counted a run's messages with a bare Settings(), which reads no environment: a notifier set in
    SKILLS_NOTIFIER_TOOL was not the one it counted (nor the model or price)."""
    await engine.skills.register(water("tally", notify_on_completion=False, execution_plan=[
        {"toolName": "outbox_list_messages", "parameters": {}}]))
    plain = await asyncio.to_thread(run_skills, "--json", "get", "tally", *options(engine))
    told = await asyncio.to_thread(run_skills, "--json", "get", "tally", *options(engine),
                                   SKILLS_NOTIFIER_TOOL="outbox_list_messages")
    assert plain.returncode == told.returncode == 0, plain.stderr + told.stderr
    assert json.loads(plain.stdout)["next_30_days"]["messages_how"] == "none: the plan sends none and no notice"
    assert json.loads(told.stdout)["next_30_days"]["messages_how"] == "1 each: 1 from the plan"


async def test_emit_runs_the_subscribers_and_says_which(engine: Engine) -> None:
    await engine.skills.register({"name": "greet", "instructions": "Greet the guest", "event": "guest.arrived",
                                  "execution_plan": [{"toolName": "outbox_send_message",
                                                      "parameters": {"message": "Hi {{event.guest}}!"}}]})
    await engine.skills.register({"name": "log", "instructions": "Log the guest", "event": "guest.arrived",
                                  "enabled": False, "execution_plan": [{"toolName": "outbox_send_message",
                                                                        "parameters": {"message": "logged"}}]})
    got = await asyncio.to_thread(run_skills, "get", "greet", *options(engine))
    assert "trigger         on event 'guest.arrived'" in got.stdout.splitlines()

    done = await asyncio.to_thread(run_skills, "emit", "guest.arrived", "--data", '{"guest": "Ada"}',
                                   "--id", "v-1", *options(engine))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Event 'guest.arrived' (id v-1): started 1 run:"
    assert lines[1].startswith("- 'greet' (1): workflow ") and lines[1].endswith("-event-v-1")
    assert lines[2:] == ["Skipped 1:", "- 'log' (2): disabled: by user"]
    assert await eventually(lambda: [m["message"] for m in engine.outbox()] == ["Hi Ada!"])

    again = await asyncio.to_thread(run_skills, "--json", "emit", "guest.arrived", "--id", "v-1", *options(engine))
    assert again.returncode == 0, again.stderr
    answer = json.loads(again.stdout)
    assert answer["duplicate"] is True and [r["name"] for r in answer["started"]] == ["greet"]

    bad = await asyncio.to_thread(run_skills, "emit", "guest.arrived", "--data", "{nope", *options(engine))
    assert bad.returncode == 2 and "--data" in bad.stderr and "not valid JSON" in bad.stderr
    refused = await asyncio.to_thread(run_skills, "emit", "guest arrived", *options(engine))
    assert refused.returncode == 1 and "event: 'guest arrived' is not a valid event name" in refused.stderr


def test_the_commands_of_their_own_modules_load_only_when_named() -> None:
    """`skills get` does not import the MCP server, the Telegram adapter or the installer (a second of CPU
    a command); each command the lazy map names is the one its module defines, and every command of those
    modules is named."""
    import subprocess
    import sys

    from starter import console_cli, files_cli, install_cli, mcp_server, telegram_bot, tools_cli
    from starter.cli import LAZY_COMMANDS

    defined = [tools_cli.catalog_command, *files_cli.COMMANDS, *install_cli.COMMANDS, mcp_server.mcp_command,
               telegram_bot.telegram_command, console_cli.console_command]
    assert list(LAZY_COMMANDS) == [command.name for command in defined]
    # `skills --help` lists them by the map's short help, without importing them: it must be their own.
    assert {name: short for name, (_, short) in LAZY_COMMANDS.items()} == {
        command.name: command.short_help for command in defined}
    probe = ("import sys, starter.cli; from click import Context; cli = starter.cli.cli; "
             "cli.get_command(Context(cli), 'get'); print(sorted(m for m in sys.modules "
             "if m.split('.')[0] in ('mcp', 'mcp_servers') or m in ('adapters.installer', 'starter.telegram_bot')))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]", loaded


def test_version_and_help_answer_without_the_engine_loaded() -> None:
    """`skills --version` and `--help` import neither Temporal's SDK, pydantic, the store, MCP nor the
    command modules (bench/startup.py times them: a third of a second each before), and `--help` still lists
    every command."""
    import subprocess
    import sys

    heavy = ("temporalio", "pydantic", "sqlalchemy", "sqlmodel", "mcp", "mcp_types", "rich", "httpx2", "config",
             "client", "adapters", "asyncio")
    for argv in (["--version"], ["--help"]):
        probe = (f"import sys; from starter.cli import run; code = run({argv!r}); "
                 f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r})), code)")
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
        assert out.splitlines()[-1] == "[] 0", out
    from starter.cli import LAZY_COMMANDS

    listed = subprocess.run([sys.executable, "-c", "from starter.cli import run; run(['--help'])"],
                            capture_output=True, text=True, check=True).stdout
    for name, (_, short) in LAZY_COMMANDS.items():
        assert f"{name}" in listed and short in listed, name


async def test_history_says_who_changed_what_and_revert_puts_it_back(engine: Engine, tmp_path: Path) -> None:
    await engine.skills.register(water("stretch"))
    patch = tmp_path / "patch.json"
    patch.write_text(json.dumps({"schedule": "30 17 * * *"}))
    done = await asyncio.to_thread(run_skills, "update", "stretch", str(patch), *options(engine))
    assert done.returncode == 0, done.stderr

    listed = await asyncio.to_thread(run_skills, "history", "stretch", *options(engine))
    assert listed.returncode == 0, listed.stderr
    header, newest, first = listed.stdout.splitlines()
    assert header.split() == ["REV", "WHEN", "BY", "ACTION", "CHANGED"]
    assert newest.split()[0] == "2" and newest.split()[2:] == ["cli", "updated", "trigger_config"]
    assert first.split()[0] == "1" and first.split()[2:] == ["client", "created", "-"]

    reverted = await asyncio.to_thread(run_skills, "--json", "revert", "stretch", "1", *options(engine))
    assert reverted.returncode == 0, reverted.stderr
    answer = json.loads(reverted.stdout)
    assert answer["ok"] is True and answer["skill"]["revision"] == 3
    assert "0 9 * * *" in json.dumps(answer["skill"]["trigger_config"])
    as_json = await asyncio.to_thread(run_skills, "history", "stretch", "--json", *options(engine))
    assert [(r["rev"], r["action"], r["by"]) for r in json.loads(as_json.stdout)][0] == (3, "reverted", "cli")
    missing = await asyncio.to_thread(run_skills, "revert", "stretch", "9", *options(engine))
    assert missing.returncode != 0 and "no revision 9" in missing.stderr
