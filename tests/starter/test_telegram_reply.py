"""A Telegram reply to a delivered result: the worker's notifier is the bundled telegram server (against a
fake Bot API), a run's completion notice reaches the owner's chat, and the owner's reply to it is a chat
turn that opens with that result. A real worker, the real telegram MCP server, the scripted LLM."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from config.settings import Settings
from skills.chat.account import NOTHING
from skills.chat.reply import BLOCK
from skills.skillmd import BUNDLED_DIR
from skills.spec.models import RunRecord
from starter.telegram_bot import BotApi, TelegramBot
from tests.conftest import ROOT, Engine, eventually, write_mcp_config
from tests.fakes.llm_server import ScriptedLLM, say
from tests.fakes.telegram_api import FakeBotApi

OWNER = 42


@pytest.fixture
def telegram() -> Iterator[FakeBotApi]:
    with FakeBotApi() as api:
        yield api


@pytest.fixture
async def notifying(client: Client, settings: Settings, llm: ScriptedLLM, telegram: FakeBotApi,
                    tmp_path: Path) -> AsyncIterator[Engine]:
    """The assistant, telling its results through the telegram server to the owner's chat."""
    config = write_mcp_config(tmp_path / "mcp.json", {"telegram": {
        "command": sys.executable, "args": ["-m", "mcp_servers.telegram"], "cwd": str(ROOT),
        "env": {"TELEGRAM_BOT_TOKEN": telegram.token, "TELEGRAM_API_BASE": telegram.url,
                "TELEGRAM_CHAT_ID": str(OWNER), "TELEGRAM_KEYS_PATH": str(tmp_path / "telegram.keys.db")}}})
    running = await Engine(settings.model_copy(update={
        "llm_base_url": llm.base_url, "llm_api_key": "sk-fake-test-key", "llm_model": "chat",
        "bundled_skills_dir": BUNDLED_DIR, "mcp_config": config, "notifier_tool": "telegram_send_message",
        "notify_interval": timedelta(0)}), client).start()
    yield running
    await running.stop()


def replying_to(sent: dict[str, Any]) -> dict[str, Any]:
    """``reply_to_message`` as Telegram gives it: the bot's message the user replied to."""
    return {"message_id": sent["message_id"], "date": 0, "chat": {"id": OWNER, "type": "private"},
            "from": {"id": 123456, "is_bot": True, "first_name": "Skills"}, "text": sent["text"]}


def user_message(request_messages: list[dict[str, Any]]) -> str:
    return [m for m in request_messages if m["role"] == "user"][-1]["content"]


async def test_a_reply_to_a_delivered_notice_goes_on_from_its_result(
        notifying: Engine, llm: ScriptedLLM, telegram: FakeBotApi) -> None:
    llm.script("chat", [say("Two new mails: the ACME invoice, due Friday, and a note from Ann."),
                        say("The ACME invoice is due on Friday."),
                        say("You're welcome.")])
    await notifying.skills.register({"name": "inbox digest", "instructions": "Summarize my new mail.",
                                     "required_tools": ["outbox_list_messages"], "schedule": "0 7 * * *"})
    run = await notifying.skills.run("inbox digest")
    assert isinstance(run, RunRecord) and run.status == "success"
    [notice] = await eventually(lambda: [m for m in telegram.sent if m["text"].startswith("✅ inbox digest:")])
    assert str(notice["chat_id"]) == str(OWNER) and run.summary in notice["text"]

    api = BotApi(telegram.token, telegram.url)
    stop = asyncio.Event()
    bot = asyncio.create_task(TelegramBot(notifying.skills, api, [str(OWNER)], poll_seconds=1).run(stop))
    try:
        asked = len(llm.requests_for("chat"))
        telegram.message(OWNER, "when is the invoice due?", reply_to_message=replying_to(notice))
        answer = await eventually(lambda: [m for m in telegram.sent
                                                 if m["text"].startswith("The ACME invoice is due on Friday.\n")],
                                  timeout=60)
        first = user_message(llm.requests_for("chat")[asked].messages)
        assert f"<{BLOCK}>" in first and first.endswith("My message: when is the invoice due?")
        block = first.split(f"<{BLOCK}>")[1].split(f"</{BLOCK}>")[0]
        assert run.run_id in block and '"name": "inbox digest"' in block
        assert "the ACME invoice, due Friday" in block

        # A reply to the assistant's own answer is no notice: a plain message of the same session.
        telegram.message(OWNER, "thanks", reply_to_message=replying_to(answer[0]))
        await eventually(lambda: f"You're welcome.\n• {NOTHING}" in telegram.replies(OWNER), timeout=60)
        later = llm.requests_for("chat")[-1].messages
        assert user_message(later) == "thanks" and f"<{BLOCK}>" in str(later)  # the first reply stays in history
    finally:
        stop.set()
        await asyncio.wait_for(bot, 30)
        await api.aclose()
