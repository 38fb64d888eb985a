"""A fake of the Telegram Bot API on loopback: long polling with offsets, as Telegram does it.

``getUpdates`` returns the pending updates whose id is at least ``offset``, waiting up to
its ``timeout`` for one to arrive; an offset confirms (and forgets) every update before
it, so an update that was fetched but not confirmed comes again, as after a crash.
``sendMessage`` and ``sendChatAction`` are recorded. A test plays the users::

    with FakeBotApi() as telegram:
        telegram.message(42, "remind me in 5 minutes to drink water")
        ... run the adapter with TELEGRAM_API_BASE=telegram.url, TELEGRAM_BOT_TOKEN=telegram.token ...
        await eventually(lambda: telegram.replies(42))
"""

from __future__ import annotations

import random
import threading
import time
from contextlib import ExitStack
from typing import Any

from tests.mcp_servers.http_fake import Answer, Request, fake_api

MAX_WAIT = 5.0
"""A long poll never waits longer than this here, so a stopped test is not held up."""


class FakeBotApi:
    def __init__(self, token: str | None = None) -> None:
        # Update ids are unique per bot, so every fake is a bot of its own.
        self.token = token or f"{random.randrange(10**8, 10**9)}:fake-bot-token"
        self.pending: list[dict[str, Any]] = []
        self.sent: list[dict[str, Any]] = []
        """Every sendMessage body, in order."""
        self.actions: list[dict[str, Any]] = []
        """Every sendChatAction body."""
        self.button_answers: list[dict[str, Any]] = []
        """Every answerCallbackQuery and editMessageReplyMarkup body, with its ``method``."""
        self.polls: list[dict[str, Any]] = []
        """Every getUpdates body (offsets show what the adapter confirmed)."""
        self.refuse: dict[str, tuple[int, str]] = {}
        """Method -> (error_code, description) to answer with instead."""
        self.calls: list[dict[str, Any]] = []
        """Every request the API was sent, answered or refused, as its body with its ``method``."""
        self._next_update = 1000
        self._next_message = 1
        self._changed = threading.Condition()
        self._closed = False
        self._stack = ExitStack()
        self.url = ""

    def __enter__(self) -> FakeBotApi:
        api = self._stack.enter_context(fake_api(self.answer))
        self.url = api.url
        return self

    def __exit__(self, *exc: object) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        self._stack.close()

    # --- the users' side --------------------------------------------------------------------

    def message(self, chat_id: int | str, text: str | None = None, sender: int | None = None, **extra: Any) -> int:
        """User ``sender`` writes ``text`` in ``chat_id`` (no text: a photo); the new update's id. Without
        ``sender``, the chat is a private one and its user writes (Telegram gives a private chat its
        user's id); a negative chat id is a group."""
        with self._changed:
            update_id = self._next_update
            self._next_update += 1
            chat = {"id": int(chat_id), "type": "private" if int(chat_id) > 0 else "supergroup"}
            author = {"id": int(sender if sender is not None else chat_id), "is_bot": False, "first_name": "User"}
            body: dict[str, Any] = {"message_id": self._next_message, "date": int(time.time()),
                                    "chat": chat, "from": author, **extra}
            if text is not None:
                body["text"] = text
            self._next_message += 1
            self.pending.append({"update_id": update_id, "message": body})
            self._changed.notify_all()
            return update_id

    def press(self, chat_id: int | str, message_id: int, data: str, sender: int | None = None) -> int:
        """User ``sender`` (the private chat's user by default) presses the inline button ``data`` under
        message ``message_id`` in ``chat_id``: a ``callback_query`` update; its id."""
        with self._changed:
            update_id = self._next_update
            self._next_update += 1
            chat = {"id": int(chat_id), "type": "private" if int(chat_id) > 0 else "supergroup"}
            author = {"id": int(sender if sender is not None else chat_id), "is_bot": False, "first_name": "User"}
            self.pending.append({"update_id": update_id, "callback_query": {
                "id": f"cb{update_id}", "from": author, "data": data, "chat_instance": "1",
                "message": {"message_id": message_id, "date": int(time.time()), "chat": chat}}})
            self._changed.notify_all()
            return update_id

    def with_buttons(self, chat_id: int | str) -> list[dict[str, Any]]:
        """The messages sent to ``chat_id`` with an inline keyboard (each body has its ``message_id``)."""
        return [m for m in self.sent if str(m["chat_id"]) == str(chat_id) and m.get("reply_markup")]

    def replies(self, chat_id: int | str) -> list[str]:
        return [m["text"] for m in self.sent if str(m["chat_id"]) == str(chat_id)]

    def confirmed(self, update_id: int) -> bool:
        """Whether the adapter has acknowledged ``update_id`` (asked for a later offset)."""
        return any((poll.get("offset") or 0) > update_id for poll in self.polls)

    # --- the Bot API ------------------------------------------------------------------------

    def answer(self, request: Request) -> Answer:
        prefix = f"/bot{self.token}/"
        if not request.path.startswith(prefix):
            return Answer(401, {"ok": False, "error_code": 401, "description": "Unauthorized"})
        method, body = request.path[len(prefix):], request.body or {}
        self.calls.append({"method": method, **body})
        if method in self.refuse:
            code, description = self.refuse[method]
            return Answer(code, {"ok": False, "error_code": code, "description": description})
        if method == "getMe":
            return _ok({"id": 123456, "is_bot": True, "first_name": "Skills", "username": "skills_test_bot"})
        if method == "getUpdates":
            return _ok(self._updates(body))
        if method == "sendMessage":
            if len(body.get("text") or "") > 4096:
                return Answer(400, {"ok": False, "error_code": 400, "description": "Bad Request: message is too long"})
            with self._changed:
                message_id = self._next_message
                self._next_message += 1
                self.sent.append({**body, "message_id": message_id})
            return _ok({"message_id": message_id, "chat": {"id": body.get("chat_id")}, "text": body.get("text")})
        if method == "sendChatAction":
            self.actions.append(body)
            return _ok(True)
        if method in ("answerCallbackQuery", "editMessageReplyMarkup"):
            self.button_answers.append({"method": method, **body})
            return _ok(True)
        return Answer(404, {"ok": False, "error_code": 404, "description": "Not Found"})

    def _updates(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        offset = int(body.get("offset") or 0)
        wait = min(float(body.get("timeout") or 0), MAX_WAIT)
        deadline = time.monotonic() + wait
        with self._changed:
            self.polls.append(body)
            self.pending = [u for u in self.pending if u["update_id"] >= offset]
            while not self.pending and not self._closed and time.monotonic() < deadline:
                self._changed.wait(deadline - time.monotonic())
            limit = int(body.get("limit") or 100)
            return list(self.pending[:limit])


def _ok(result: Any) -> Answer:
    return Answer(200, {"ok": True, "result": result})

