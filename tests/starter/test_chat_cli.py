"""`skills chat` as a conversation that goes on: a proposal's "reply `skills chat yes`" works from the next
command, with no model configured (the engine reads the yes itself); `--new` starts afresh; `skills approve`
and `skills deny` say what came of an answer in a sentence, and `--json` gives the record.

The real CLI in its own process, the real worker and Temporal; the worker has no LLM at all, so a turn that
asked one would fail with "no LLM is configured"."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from mcp import Client as McpClient
from temporalio.client import Client

from config.settings import Settings
from skills.chat.proposals import ChangeDecided, decided_sentence
from skills.owner.approvals import Approval
from starter.chat_session import CLI_ANSWER, last_session, remember, session_file
from starter.mcp_server import build_server
from tests.conftest import Engine
from tests.starter.test_cli import options, run_skills

TRAIN = "every monday at 8:30 remind me to leave for the train"
SESSION = re.compile(r"\(session (\w+); ")


@pytest.fixture
async def no_model(client: Client, settings: Settings) -> AsyncIterator[Engine]:
    """A worker with no LLM configured that reads plain reminders itself, as the owner runs it."""
    assert settings.llm_base_url is None
    running = await Engine(settings.model_copy(update={"chat_plain_reminders": True}), client).start()
    yield running
    await running.stop()


async def skills(engine: Engine, data_dir: Path, *argv: str) -> str:
    """`skills ARGV` in its own process with its own data folder (the terminal user's), which must exit 0."""
    done = await asyncio.to_thread(run_skills, *argv, *options(engine), SKILLS_DATA_DIR=str(data_dir))
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


async def test_skills_chat_yes_makes_the_proposal_with_no_model(no_model: Engine, tmp_path: Path) -> None:
    shown = await skills(no_model, tmp_path, "chat", TRAIN)
    assert shown.startswith("Read without the model (0 tokens)"), shown
    # The hint names the command that works here, not a reply a terminal cannot send.
    assert f"proposed #1, NOT made: {CLI_ANSWER} (or `skills approve 1`)" in shown
    [proposed] = SESSION.findall(shown)
    assert last_session(tmp_path) == proposed

    made = await skills(no_model, tmp_path, "chat", "yes")
    assert "no LLM is configured" not in made
    assert made.startswith("Done, #1"), made
    assert SESSION.findall(made) == [proposed]  # the same conversation went on
    [skill] = await no_model.skills.list()
    assert skill.trigger_config is not None and skill.trigger_config.schedule == "30 8 * * 1"

    # Nothing waits now: the next message is a new conversation.
    again = await skills(no_model, tmp_path, "chat", "every monday at 9 remind me to stretch")
    assert "proposed #2" in again and SESSION.findall(again) != [proposed]


async def test_new_starts_afresh_while_a_proposal_waits(no_model: Engine, tmp_path: Path) -> None:
    first = SESSION.findall(await skills(no_model, tmp_path, "chat", TRAIN))
    fresh = await skills(no_model, tmp_path, "chat", "--new", "every monday at 9 remind me to stretch")
    assert "proposed #2" in fresh and SESSION.findall(fresh) != first
    # The new conversation is the last one now: its yes makes its own proposal, and #1 still waits.
    made = await skills(no_model, tmp_path, "chat", "yes")
    assert made.startswith("Done, #2"), made
    [waiting] = await no_model.skills.approvals()
    assert waiting.id == 1 and waiting.pending


async def test_approve_and_deny_say_what_came_of_the_answer(no_model: Engine, tmp_path: Path) -> None:
    await skills(no_model, tmp_path, "chat", TRAIN)
    approved = (await skills(no_model, tmp_path, "approve", "1")).strip()
    [skill] = await no_model.skills.list()
    # A Monday-only cron: its first fire is a Monday at 08:30, whatever the day the test runs.
    assert re.fullmatch(rf"Approved #1: stored skill {skill.id} '{re.escape(skill.name)}' \(direct tier\), "
                        r"first fire Mon \d{4}-\d\d-\d\d 08:30 UTC", approved), approved
    assert "Approval(" not in approved and "kind=" not in approved

    await skills(no_model, tmp_path, "chat", "--new", "every monday at 9 remind me to stretch")
    denied = json.loads(await skills(no_model, tmp_path, "deny", "2", "--reason", "not now", "--json"))
    assert denied["result"] == "Denied #2: Create skill 'reminder: stretch', not made (not now)", denied
    assert denied["approval"]["id"] == 2 and denied["approval"]["status"] == "denied"
    assert denied["approval"]["reason"] == "not now" and denied["change"] is None

    # The MCP tools answer in the same sentence, the record as data.
    await skills(no_model, tmp_path, "chat", "--new", "every monday at 10 remind me to water the plants")
    async with McpClient(build_server(no_model.skills)) as session:
        answered = await session.call_tool("approve", {"approval_id": 3})
    text = "".join(block.text for block in answered.content if block.type == "text")
    assert not answered.is_error and text.startswith("Approved #3: stored skill "), text
    assert text.endswith(" 10:00 UTC") and "Approval(" not in text
    assert answered.structured_content is not None and answered.structured_content["change"]["action"] == "created"


def test_a_decided_change_reads_as_a_sentence_on_a_pinned_clock() -> None:
    now = datetime(2026, 11, 27, 12, tzinfo=UTC)  # a Friday
    approval = Approval(id=2, kind="change", request_key="k", tool="memory_store_skill", requested_at=now,
                        expires_at=now, summary="Create skill 'reminder: leave for the train':\nwhen: ...",
                        status="approved", outcome="Stored skill 4 'reminder: leave for the train' (direct tier)")
    change = {"action": "created", "id": 4, "name": "reminder: leave for the train", "tier": "direct",
              "trigger": {"schedule": "30 8 * * 1-5", "timezone": "Europe/Paris"},
              "next_fire": datetime(2026, 11, 30, 7, 30, tzinfo=UTC).isoformat(), "enabled": True}
    assert decided_sentence(ChangeDecided(approval=approval, applied=True, change=change)) == (
        "Approved #2: stored skill 4 'reminder: leave for the train' (direct tier), "
        "first fire Mon 2026-11-30 08:30 Europe/Paris")
    paused = {**change, "action": "updated", "next_fire": None, "enabled": False}
    assert decided_sentence(ChangeDecided(approval=approval, applied=True, change=paused)).endswith(
        "updated skill 4 'reminder: leave for the train' (direct tier), paused: it will not fire")
    denied = approval.model_copy(update={"status": "denied", "outcome": None})
    assert decided_sentence(ChangeDecided(approval=denied)) == (
        "Denied #2: Create skill 'reminder: leave for the train', not made")


def test_the_last_session_is_the_users_own_and_a_strange_file_is_no_session(tmp_path: Path) -> None:
    assert last_session(tmp_path) is None
    remember(tmp_path / "new", "3f2a9c1b7e04")
    assert last_session(tmp_path / "new") == "3f2a9c1b7e04"
    assert session_file(tmp_path / "new").stat().st_mode & 0o077 == 0  # only its owner reads it
    session_file(tmp_path).write_text("\x1b[8m" + "x" * 10)
    assert last_session(tmp_path) is None
