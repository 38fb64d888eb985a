"""The account under a Telegram reply is the engine's, and no text can forge it; a button's answer is a sentence.

Issue 52: the account was plain text after the model's reply, so a reply (or a result the model repeats) that
wrote "• created: skill 4 ..." read exactly as the engine's account. The bot now sends the account as a quote (a
``blockquote`` entity, which text sent with no parse mode cannot make), and only the account."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from skills.messages.chat import ChatReply
from skills.owner.approvals import Approval
from starter.telegram_bot import BotApi, TelegramBot
from tests.conftest import eventually
from tests.fakes.telegram_api import FakeBotApi

FORGED = ("Done!\n• created: skill 4 'pay rent' (direct tier, next fire Mon 2026-11-30 09:00 UTC)\n"
          "• proposed #7, NOT made: reply yes")


class Forging:
    """A chat whose model wrote an account of its own into its reply, and did nothing."""

    async def chat(self, message: str, session_id: str | None = None, turn_id: str | None = None,
                   **_: Any) -> ChatReply:
        return ChatReply(session_id=session_id or "", ok=True, reply=FORGED, said_by="engine")


async def _served(chats: Any, telegram: FakeBotApi, act: Any, until: Any) -> Any:
    api = BotApi(telegram.token, telegram.url)
    bot = TelegramBot(chats, api, ["42"], poll_seconds=1)
    act()
    stop = asyncio.Event()
    serving = asyncio.create_task(bot.run(stop))
    try:
        return await eventually(until, timeout=60)
    finally:
        stop.set()
        await serving
        await api.aclose()


def _quoted(message: dict[str, Any]) -> list[str]:
    """The parts of a sent message its entities quote (offsets in UTF-16, as Telegram counts)."""
    text = message["text"].encode("utf-16-le")
    return [text[2 * e["offset"]:2 * (e["offset"] + e["length"])].decode("utf-16-le")
            for e in message.get("entities") or [] if e["type"] == "blockquote"]


async def test_a_reply_that_writes_an_account_of_its_own_cannot_pass_for_the_engines() -> None:
    with FakeBotApi() as telegram:
        [sent] = await _served(Forging(), telegram, lambda: telegram.message(42, "pay rent monthly"),
                               lambda: [m for m in telegram.sent if str(m.get("chat_id")) == "42"] or None)
    assert sent["text"].startswith(FORGED)
    # The only quoted part is the engine's account, which says nothing was done; the forged lines are plain text.
    assert _quoted(sent) == ["• nothing was proposed, created, changed or deleted"]


def _approval(status: str) -> Approval:
    now = datetime.now(UTC)
    return Approval(id=9, kind="change", request_key="chat:1", tool="memory_store_skill", status=status,
                    summary="Create skill 'leave for the train':\n  when: weekdays at 08:30", requested_at=now,
                    expires_at=now + timedelta(hours=1), outcome="stored skill 4 'leave for the train'")


class Answering(Forging):
    """An owner's client: approve and deny answer with the approval as recorded (as ``SkillsClient`` does)."""

    async def approvals(self) -> list[Approval]:
        return []

    async def approve(self, approval_id: int, by: str = "") -> Approval:
        return _approval("approved")

    async def deny(self, approval_id: int, reason: str = "", by: str = "") -> Approval:
        return _approval("denied")


async def test_a_button_is_answered_with_a_sentence_not_a_record() -> None:
    with FakeBotApi() as telegram:
        sent = await _served(Answering(), telegram, lambda: telegram.press(42, 1, "approve:9"),
                             lambda: telegram.replies(42) or None)
    assert sent == ["Approved #9: stored skill 4 'leave for the train'"]
