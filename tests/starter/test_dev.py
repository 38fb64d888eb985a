"""`skills dev`, the main job of `make run`: its own Temporal dev server, the worker, the
bundled skills, the Telegram adapter when configured, and a clean stop on Ctrl-C.

It runs as a user runs it, from a profile like temporal-dev.yaml (on free ports, so it
stands beside the test session's server), with the scripted LLM and a fake Bot API."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import yaml
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from client import SkillsClient
from config.settings import Settings
from skills.chat.account import NOTHING
from starter.dev import DevProfile, banner, port_open
from tests.conftest import ROOT, eventually, free_port
from tests.fakes.llm_server import ScriptedLLM, say
from tests.fakes.telegram_api import FakeBotApi

SKILLS = Path(sys.executable).with_name("skills")


def tried(log: Path) -> bool:
    """The banner is out, up to its "  Try:  " line: that line, not "Try:" anywhere in what the dev stack logged."""
    return any(line.startswith("  Try:  ") for line in log.read_text().splitlines())


async def test_skills_dev_runs_everything_and_stops_cleanly(tmp_path: Path, llm: ScriptedLLM) -> None:
    profile = yaml.safe_load((ROOT / "temporal-dev.yaml").read_text())
    port = free_port()
    # The profile names another port: the server must listen where --address says.
    profile["server"].update(port=free_port(), ui_port=free_port())
    profile.update(data_dir=str(tmp_path / "data"), db_filename=str(tmp_path / "data" / "temporal.db"))
    config = tmp_path / "dev.yaml"
    config.write_text(yaml.safe_dump(profile))
    llm.script("chat", [say("Hello from the dev stack.")])

    with FakeBotApi() as telegram:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "SKILLS_", "TELEGRAM_"))}
        env.update(SKILLS_LLM_BASE_URL=llm.base_url, SKILLS_LLM_API_KEY="sk-fake-test-key", SKILLS_LLM_MODEL="chat",
                   TELEGRAM_BOT_TOKEN=telegram.token, TELEGRAM_API_BASE=telegram.url, SKILLS_TELEGRAM_CHATS="42",
                   SKILLS_HEALTH_PORT="0")
        log = tmp_path / "dev.log"
        with log.open("wb") as out:
            process = await asyncio.create_subprocess_exec(
                str(SKILLS), "--task-queue", "dev-queue", "dev", "--config", str(config),
                "--address", f"127.0.0.1:{port}", cwd=tmp_path, env=env, stdout=out, stderr=out)
        try:
            await eventually(lambda: tried(log) or process.returncode is not None, timeout=120)
            assert process.returncode is None, log.read_text()
            banner = log.read_text().splitlines()
            assert f"  Temporal   127.0.0.1:{port} (namespace default)" in banner
            assert "  Task queue dev-queue" in banner
            assert f"  LLM        {llm.base_url}, model chat" in banner
            assert "  Telegram   chats 42" in banner

            client = await Client.connect(f"127.0.0.1:{port}", data_converter=pydantic_data_converter)
            skills = SkillsClient(client, "dev-queue")
            names = {s.name for s in await skills.list()}
            assert {"drink-water", "morning-briefing"} <= names, names  # the bundled file skills
            assert (tmp_path / "data" / "skills.db").exists()

            telegram.message(42, "hello")
            assert await eventually(lambda: telegram.replies(42), timeout=60) == [
                f"Hello from the dev stack.\n• {NOTHING}"]
        finally:
            process.send_signal(signal.SIGINT)
            code = await asyncio.wait_for(process.wait(), 60)
    assert code == 0, log.read_text()
    assert not port_open("127.0.0.1", port)  # the dev server went with it


def test_the_banner_shows_no_secret(tmp_path: Path) -> None:
    settings = Settings.from_env({"SKILLS_DATABASE_URL": "postgresql+psycopg://skills:pg-s3cret@db/skills",
                                  "OPENAI_API_KEY": "sk-very-secret", "SKILLS_TASK_QUEUE": "q"})
    shown = dict(banner(DevProfile(), settings, telegram=False))
    assert shown["Store"] == "postgresql+psycopg://skills:***@db/skills"
    assert shown["LLM"] == "the OpenAI API (https://api.openai.com/v1), model gpt-4o-mini"
    assert shown["Task queue"] == "q" and shown["Telegram"] == "off (see docs/chat.md)"
    assert not any("s3cret" in value or "sk-very" in value for value in shown.values())

    no_llm = banner(DevProfile(), Settings.from_env({}), telegram=False)
    assert dict(no_llm)["LLM"].startswith("none: Agent-tier skills wait disabled")


async def test_a_taken_health_port_stops_skills_dev_with_one_line(tmp_path: Path, client: Client) -> None:
    import socket
    import subprocess

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "SKILLS_", "TELEGRAM_"))}
        env.update(SKILLS_HEALTH_PORT=str(port), SKILLS_HEALTH_HOST="127.0.0.1", SKILLS_DATA_DIR=str(tmp_path),
                   SKILLS_BUNDLED_SKILLS_DIR=str(tmp_path / "none"))
        # The session's dev server already listens at --address: `skills dev` uses it, starts none.
        done = await asyncio.to_thread(
            subprocess.run, [str(SKILLS), "--task-queue", "taken-port", "dev", "--config", str(ROOT / "temporal-dev.yaml"), "--address",
                             client.service_client.config.target_host],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"SKILLS_HEALTH_PORT: cannot listen on 127.0.0.1:{port}" in done.stderr, done.stderr


async def test_skills_dev_serves_the_metrics_skills_worker_serves(tmp_path: Path, client: Client) -> None:
    """`skills dev` answered 404 at /metrics: a newcomer saw none of the figures `skills worker` exports."""
    from tests.service.http import answers, get, samples, value

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "SKILLS_", "TELEGRAM_"))}
    env.update(SKILLS_HEALTH_PORT=str(port), SKILLS_HEALTH_HOST="127.0.0.1", SKILLS_DATA_DIR=str(tmp_path),
               SKILLS_BUNDLED_SKILLS_DIR=str(tmp_path / "none"))
    log = tmp_path / "dev.log"
    with log.open("wb") as out:
        # The session's dev server already listens at --address: `skills dev` uses it, starts none.
        process = await asyncio.create_subprocess_exec(
            str(SKILLS), "--task-queue", f"dev-metrics-{port}", "dev", "--config", str(ROOT / "temporal-dev.yaml"),
            "--address", client.service_client.config.target_host, cwd=tmp_path, env=env, stdout=out, stderr=out)
    try:
        await eventually(lambda: tried(log) or process.returncode is not None, timeout=120)
        assert process.returncode is None, log.read_text()
        assert f"  Metrics    http://127.0.0.1:{port}/metrics" in log.read_text().splitlines()
        await eventually(lambda: answers(port, "/healthz"), timeout=120)
        status, text = await get(port, "/metrics")
        assert status == 200, text
        assert value(text, "skills_mcp_server_up", server="outbox") == 1  # the engine's own
        # And the SDK's, in one exposition: a sample of its own, not "temporal_" anywhere in the text.
        assert any(name.startswith("temporal_") for name, _, _ in samples(text)), text
    finally:
        process.send_signal(signal.SIGINT)
        code = await asyncio.wait_for(process.wait(), 60)
    assert code == 0, log.read_text()
