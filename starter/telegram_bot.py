"""`skills telegram`: talk to the assistant from Telegram.

The adapter long-polls the Bot API (``getUpdates``), hands each text message of an
allowed user in an allowed chat to the assistant (one ChatTurn workflow, exactly as ``skills chat`` runs it;
the chat id is the session, so a conversation goes on from message to message), and
answers in the same chat with ``sendMessage``. While the assistant thinks, the chat
shows "typing".

Environment, shared with the ``telegram`` MCP server:

- ``TELEGRAM_BOT_TOKEN``: the bot's token from @BotFather (never logged);
- ``TELEGRAM_API_BASE``: the Bot API's address, ``https://api.telegram.org`` by default;
- ``SKILLS_TELEGRAM_CHATS``: the chat ids allowed to talk to the assistant (or ``--chat``);
- ``SKILLS_TELEGRAM_USERS``: the user ids allowed to (or ``--user``); by default the users whose
  private chats are allowed (a private chat's id is its user's id).

A message is served only if its chat is allowed AND its sender is: in an allowed group, a member
who is not an allowed user is ignored like a stranger, so a group never lets everyone in to manage
the skills. An ignored message gets no answer and no model call; its chat and user ids are logged,
so the owner can find their own ids by writing to the bot once.

Delivery: messages are handled one at a time, in order, and acknowledged to Telegram
only once answered. An adapter killed mid-message gets that message again when it
starts; the chat turn is keyed by the update's id, so the assistant does not act twice,
and the reply is sent again.

A reply (Telegram's "Reply") to a run's completion notice that the ``telegram`` notifier delivered goes
on from that result: the worker remembered which run the notice told of (by its chat and message id), and
the turn opens with that result and its skill as context (docs/chat.md, "Replying to a result"). A reply
to any other message is a plain message.

Approvals (docs/approvals.md): every few seconds the adapter lists what waits for the owner's yes
(a run's call of a tool that needs approval) and posts each new one to the allowed chats, showing the
call, with Approve and Deny buttons, and "Always for this skill" (approve, and make a standing grant for the
skill's calls of the tool with these same arguments); a chat reply whose turn proposed changes carries
Approve and Deny too. A press
counts only from an allowed user in an allowed chat (the same rule as a message); anyone else's is
answered "not allowed" and changes nothing.

Run it next to a worker: ``skills telegram`` or ``python -m starter.telegram_bot``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, cast

import click
import httpx2
from temporalio.service import RPCError

from client import SkillsClient
from mcp_servers.telegram import API_BASE_ENV, DEFAULT_API_BASE, TOKEN_ENV, split_message
from skills.chat.reply import NoticeRef
from skills.errors import SkillsError, TemporalUnavailableError
from skills.messages.chat import ChatReply
from skills.owner.approvals import Approval
from skills.owner.grants import Grant, as_text
from starter import exit_process
from starter.command import (
    CONTEXT_SETTINGS,
    Globals,
    current,
    prepare_process,
    process_command,
    refuse_json,
    run_command,
)

log = logging.getLogger("skills.telegram")

POLL_SECONDS = 30
"""How long one getUpdates waits for a message (Telegram's long polling)."""
TYPING_EVERY = 4.0
"""Telegram shows "typing" for 5 seconds after each sendChatAction."""
RETRY_DELAYS = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
"""Waits between attempts when the Bot API cannot be reached or fails."""
APPROVAL_POLL_SECONDS = 5.0
"""How often the adapter looks for new approvals to post."""
HELP = (
    "Hello! Tell me what to do and when, and I schedule it: \"remind me in 5 minutes to drink water\", "
    "\"every morning at 7 send me the weather\", \"what skills do I have?\", \"delete the water reminder\". "
    "Under each answer, the quoted block is the engine's account of what was done; text outside it is the model's."
)


class TelegramError(Exception):
    """The Bot API refused a call (``ok: false``), with Telegram's own words."""

    def __init__(self, method: str, code: int, description: str, retry_after: float | None = None) -> None:
        super().__init__(f"Telegram refused {method} ({code}): {description}")
        self.code = code
        self.retry_after = retry_after


class FatalTelegramError(TelegramError):
    """A refusal that waiting will not fix: a bad token, or another consumer of the updates."""


class Chats(Protocol):
    async def chat(self, message: str, session_id: str | None = None, turn_id: str | None = None, *,
                   reply_to_notice: NoticeRef | None = None) -> ChatReply: ...


class Answers(Protocol):
    """The owner's side of approvals (``SkillsClient``): an adapter given one posts them and takes answers."""

    async def approvals(self) -> list[Approval]: ...
    async def approve(self, approval_id: int, by: str = ...) -> Any: ...
    async def deny(self, approval_id: int, reason: str = ..., by: str = ...) -> Any: ...
    async def approval(self, approval_id: int) -> Approval: ...
    async def grant(self, tool: str, *, skill: str | int | None = ..., where: dict[str, str] | None = ...,
                    by: str = ...) -> Grant: ...


class BotApi:
    """The few Bot API methods the adapter needs, with errors that never quote the token."""

    def __init__(self, token: str, base: str = DEFAULT_API_BASE) -> None:
        self._token = token
        self.bot_id = token.split(":", 1)[0]
        """The bot's public id (the token's first part): update ids are unique per bot."""
        self._base = f"{base.rstrip('/')}/bot{token}"
        self._http = httpx2.AsyncClient(timeout=httpx2.Timeout(POLL_SECONDS + 15.0))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def call(self, method: str, **params: Any) -> Any:
        try:
            response = await self._http.post(f"{self._base}/{method}", json=params)
        except httpx2.HTTPError as exc:
            reason = (str(exc) or type(exc).__name__).replace(self._token, "***")
            raise ConnectionError(f"cannot reach the Telegram Bot API ({method}): {reason}") from None
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise TelegramError(method, response.status_code, "an answer that is not Bot API JSON")
        if answer.get("ok") is True:
            return answer.get("result")
        code = int(answer.get("error_code") or response.status_code)
        description = str(answer.get("description") or "no description").replace(self._token, "***")
        if code == 401:
            raise FatalTelegramError(method, code, f"{description}; check {TOKEN_ENV}")
        if code == 409:
            raise FatalTelegramError(method, code, f"{description}; only one adapter may poll a bot, and a "
                                     "bot with a webhook cannot be polled (deleteWebhook removes it)")
        retry_after = (answer.get("parameters") or {}).get("retry_after")
        raise TelegramError(method, code, description, float(retry_after) if retry_after is not None else None)


@dataclass
class Incoming:
    update_id: int
    chat_id: str
    text: str | None
    """None for a message without text (a photo, a sticker)."""
    user_id: str | None = None
    """The sender (``from.id``); None when Telegram names none (a channel's post)."""
    reply_to: int | None = None
    """The id of the message this one replies to (``reply_to_message``), in the same chat."""


def incoming(update: dict[str, Any]) -> Incoming | None:
    """The message of an update, or None for updates that carry none."""
    message = update.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("chat"), dict):
        return None
    sender = message.get("from")
    user_id = sender.get("id") if isinstance(sender, dict) else None
    replied = message.get("reply_to_message")
    replied_id = replied.get("message_id") if isinstance(replied, dict) else None
    return Incoming(update_id=int(update["update_id"]), chat_id=str(message["chat"].get("id")),
                    text=message.get("text"), user_id=str(user_id) if user_id is not None else None,
                    reply_to=replied_id if isinstance(replied_id, int) and not isinstance(replied_id, bool) else None)


def reply_text(reply: ChatReply) -> str:
    """The model's answer, then the engine's account (what the turn proposed or changed, with the next fire,
    or that it did nothing, and the correction of a reply that claims what did not happen), and what a
    matched skill's own tools could not do this turn."""
    return reply_message(reply)[0]


def reply_message(reply: ChatReply) -> tuple[str, int]:
    """``reply_text``, and where in it the engine's account begins: the bot sends the account as a quote
    (a ``blockquote`` entity, which no text can make: the reply is sent with no parse mode), so a model's
    reply, or a result it repeats, that writes "• created: skill 4 ..." reads as the plain text it is."""
    lines = [*reply.account_lines(), *(f"not available this turn: {reason}" for reason in reply.unavailable),
             *([f"left out to fit the model's context: {'; '.join(reply.left_out)}"] if reply.left_out else [])]
    said = reply.reply or "(no answer)"
    return "\n".join([said, *(f"• {line}" for line in lines)]), len(said) + 1


def account_entities(part: str, start: int, account_at: int) -> list[dict[str, Any]]:
    """The ``blockquote`` entity over the engine's account within ``part`` of a message (``part`` begins at
    ``start`` of it; the account at ``account_at``), in UTF-16 code units, as the Bot API counts."""
    cut = max(0, account_at - start)
    if cut >= len(part):
        return []
    return [{"type": "blockquote", "offset": _utf16(part[:cut]), "length": _utf16(part[cut:])}]


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def answered_text(said: Any, approval_id: int) -> str:
    """A button's answer as a sentence: ``Approved #9: ...``, never an approval record's repr."""
    if isinstance(said, Approval):
        verb = {"approved": "Approved", "denied": "Denied"}.get(said.status, f"Answered ({said.status})")
        what = said.outcome or (said.summary.splitlines()[0].rstrip(":") if said.summary else said.tool)
        return f"{verb} #{said.id}: {what}"
    return str(said) if said else f"Answered #{approval_id}."


def approval_text(approval: Approval) -> str:
    """What the owner reads before pressing a button: what would happen, and until when it waits."""
    what = "A run wants to call a tool" if approval.kind == "tool_call" else "The assistant proposes a change"
    return (f"🔐 Approval {approval.id}: {what}.\n{approval.summary}\n"
            f"Unanswered by {approval.expires_at:%Y-%m-%d %H:%M} UTC: denied.")


def buttons(approvals: Iterable[Approval]) -> dict[str, Any]:
    """An inline keyboard: Approve and Deny for each approval, and under a run's call of a skill's tool
    "Always for this skill" (approve it, and make a standing grant for this skill's calls with these arguments)."""
    rows: list[list[dict[str, str]]] = []
    for a in approvals:
        rows.append([{"text": f"✅ Approve {a.id}", "callback_data": f"approve:{a.id}"},
                     {"text": f"❌ Deny {a.id}", "callback_data": f"deny:{a.id}"}])
        if a.kind == "tool_call" and a.skill_id is not None:
            rows.append([{"text": "♾️ Always for this skill", "callback_data": f"always:{a.id}"}])
    return {"inline_keyboard": rows}


Choice = Literal["approve", "deny", "always"]


def pressed_button(data: Any) -> tuple[Choice, int] | None:
    """``approve:ID``, ``deny:ID`` or ``always:ID`` as (verb, id); None for anything else."""
    if not isinstance(data, str) or ":" not in data or len(data) > 64:
        return None
    verb, _, number = data.partition(":")
    if verb not in ("approve", "deny", "always") or not (number.isascii() and number.isdigit()):
        return None
    return cast(Choice, verb), int(number)


def standing_where(approval: Approval) -> dict[str, str]:
    """The grant "Always for this skill" makes: every argument of the approved call, as a ``where`` compares
    it. The narrower choice: it approves this skill's calls with these same values, not any call of the tool."""
    return {key: as_text(value) for key, value in approval.arguments.items()}


def is_command(text: str, name: str) -> bool:
    """``/name``, or ``/name@botname`` as Telegram writes commands in groups."""
    first = text.strip().split(maxsplit=1)[0] if text.strip() else ""
    return first.split("@", 1)[0].lower() == f"/{name}"


class TelegramBot:
    def __init__(self, chats: Chats, api: BotApi, allowed: Iterable[str], poll_seconds: int = POLL_SECONDS,
                 users: Iterable[str] | None = None) -> None:
        self.chats = chats
        self.api = api
        self.allowed = frozenset(str(chat).strip() for chat in allowed)
        self.users = allowed_users(self.allowed, users)
        """Who may talk to the assistant, in one of the allowed chats."""
        self.poll_seconds = poll_seconds
        self.offset: int | None = None
        """The next update to ask for: everything before it is answered (Telegram forgets it)."""
        self.answers: Answers | None = chats if hasattr(chats, "approvals") else None  # type: ignore[assignment]
        self.posted: set[int] = set()
        """The approvals posted by this adapter (a restarted one posts those still waiting again)."""

    async def run(self, stop: asyncio.Event) -> None:
        """Poll and answer until ``stop`` is set; a fatal refusal (bad token, a second poller) raises."""
        posting = asyncio.create_task(self.post_approvals(stop)) if self.answers is not None else None
        try:
            await self._poll(stop)
        finally:
            if posting is not None:
                posting.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await posting

    async def _poll(self, stop: asyncio.Event) -> None:
        failures = 0
        while not stop.is_set():
            try:
                updates = await _until(stop, self.api.call(
                    "getUpdates", timeout=self.poll_seconds, allowed_updates=["message", "callback_query"],
                    **({"offset": self.offset} if self.offset is not None else {})))
            except FatalTelegramError:
                raise
            except (ConnectionError, TelegramError) as exc:
                delay = RETRY_DELAYS[min(failures, len(RETRY_DELAYS) - 1)]
                if isinstance(exc, TelegramError) and exc.retry_after:
                    delay = exc.retry_after
                failures += 1
                log.warning("%s; polling again in %.0f s", exc, delay)
                await _wait(stop, delay)
                continue
            if updates is None:  # stopped while waiting
                break
            failures = 0
            for update in updates:
                try:
                    await _until(stop, self.handle(update))
                except RPCError as exc:
                    # Temporal is unreachable: keep the message (Telegram gives it again) and wait.
                    log.warning("Temporal refused the chat turn (%s); trying again in %.0f s", exc, RETRY_DELAYS[2])
                    await _wait(stop, RETRY_DELAYS[2])
                    break
                if stop.is_set():  # stopped mid-message: not acknowledged, so it comes again
                    break
                self.offset = int(update["update_id"]) + 1
        await self.acknowledge()

    async def acknowledge(self) -> None:
        """Tell Telegram what was answered (it learns it from the next getUpdates' offset), so a
        restart does not answer it twice. Best effort: at worst a reply is sent again."""
        if self.offset is None:
            return
        with contextlib.suppress(ConnectionError, TelegramError):
            await asyncio.wait_for(self.api.call("getUpdates", offset=self.offset, limit=1, timeout=0), 5.0)

    async def post_approvals(self, stop: asyncio.Event) -> None:
        """Post each new approval to the allowed chats, with its buttons, until ``stop``."""
        assert self.answers is not None
        while not stop.is_set():
            try:
                for approval in reversed(await self.answers.approvals()):  # oldest first
                    if approval.id in self.posted or approval.kind != "tool_call":
                        continue  # a proposed change comes with the chat's reply that proposed it
                    self.posted.add(approval.id)
                    for chat in sorted(self.allowed):
                        await self.send(chat, approval_text(approval), reply_markup=buttons([approval]))
            except (SkillsError, RPCError) as exc:
                log.warning("could not list the approvals: %s", exc)
            await _wait(stop, APPROVAL_POLL_SECONDS)

    async def handle(self, update: dict[str, Any]) -> None:
        """Answer one update (never raises for a message the assistant could not handle)."""
        if isinstance(update.get("callback_query"), dict):
            await self.pressed(update["callback_query"])
            return
        message = incoming(update)
        if message is None:
            return
        if message.chat_id not in self.allowed:
            log.warning("ignored a message from chat %s: it is not in SKILLS_TELEGRAM_CHATS", message.chat_id)
            return
        if not self.serves(message.chat_id, message.user_id):
            log.warning("ignored a message from user %s in chat %s: the user is not in SKILLS_TELEGRAM_USERS",
                        message.user_id or "(none)", message.chat_id)
            return
        if message.text is None or not message.text.strip():
            await self.send(message.chat_id, "I can only read text messages.")
            return
        if is_command(message.text, "start") or is_command(message.text, "help"):
            await self.send(message.chat_id, HELP)
            return
        log.info("chat %s: a message of %d characters%s", message.chat_id, len(message.text),
                 " (a reply)" if message.reply_to is not None else "")
        # A reply to a delivered notice goes on from that run's result: the worker knows which run it told of.
        replying = ({"reply_to_notice": NoticeRef(chat_id=message.chat_id, message_id=message.reply_to)}
                    if message.reply_to is not None else {})
        async with self.typing(message.chat_id):
            try:
                reply = await self.chats.chat(message.text, session_id=f"telegram-{message.chat_id}",
                                              turn_id=f"bot{self.api.bot_id}-update{message.update_id}", **replying)
                (text, account_at), markup = reply_message(reply), buttons(reply.proposals) if reply.proposals else None
            except SkillsError as exc:
                log.error("chat %s: %s", message.chat_id, exc)
                (text, account_at), markup = (f"Sorry, I could not handle that: {exc}", None), None
        await self.send(message.chat_id, text, reply_markup=markup, account_at=account_at)

    async def pressed(self, query: dict[str, Any]) -> None:
        """An Approve or Deny button: answered for an allowed user in an allowed chat, refused otherwise."""
        sender = query.get("from") if isinstance(query.get("from"), dict) else {}
        message = query.get("message") if isinstance(query.get("message"), dict) else {}
        chat = message.get("chat") if isinstance(message.get("chat"), dict) else {}
        user_id = str(sender["id"]) if sender.get("id") is not None else None
        chat_id = str(chat.get("id"))
        choice = pressed_button(query.get("data"))
        if choice is None or self.answers is None or not self.serves(chat_id, user_id):
            log.warning("ignored a button from user %s in chat %s", user_id or "(none)", chat_id)
            await self._answer_press(query, "Not allowed.")
            return
        verb, approval_id = choice
        by = f"telegram:{user_id}"
        try:
            if verb == "always":
                text = await self._always(approval_id, by)
            else:
                said = (await self.answers.approve(approval_id, by=by) if verb == "approve" else
                        await self.answers.deny(approval_id, "denied from Telegram", by=by))
                text = answered_text(said, approval_id)
        except SkillsError as exc:
            text = f"Could not answer approval {approval_id}: {exc}"
        await self._answer_press(query, text[:200])
        with contextlib.suppress(ConnectionError, TelegramError):
            # The buttons go: the message now says what was answered, and a second press has nothing to hit.
            await self.api.call("editMessageReplyMarkup", chat_id=chat_id, message_id=message.get("message_id"),
                                reply_markup={"inline_keyboard": []})
        await self.send(chat_id, text)

    async def _always(self, approval_id: int, by: str) -> str:
        """"Always for this skill": a standing grant for this skill's calls of the tool with these arguments
        (made by the ``ChangeGrant`` workflow, as ``skills grant`` makes one), then the call approved. A call
        no grant can name (no skill, too many or too long arguments) is left waiting, and the owner told."""
        assert self.answers is not None
        approval = await self.answers.approval(approval_id)
        if not approval.pending:
            return f"Approval {approval_id} was already answered: {approval.status} by {approval.decided_by}."
        if approval.kind != "tool_call" or approval.skill_id is None:
            return f"Approval {approval_id} is not a skill's call: answer it with Approve or Deny."
        where = standing_where(approval)
        try:
            grant = await self.answers.grant(approval.tool, skill=approval.skill_id, where=where, by=by)
        except SkillsError as exc:
            return (f"No standing grant made ({exc}); approval {approval_id} still waits: "
                    "answer it with Approve or Deny.")
        said = answered_text(await self.answers.approve(approval_id, by=by), approval_id)
        values = ", ".join(f"{k}={v}" for k, v in where.items()) or "no arguments"
        return (f"{said} Grant {grant.id} made: {approval.tool} of '{approval.skill_name}' is approved "
                f"without asking when its arguments are these same values ({values}); any other call still "
                f"asks. `skills revoke {grant.id}` undoes it.")

    async def _answer_press(self, query: dict[str, Any], text: str) -> None:
        with contextlib.suppress(ConnectionError, TelegramError):
            await self.api.call("answerCallbackQuery", callback_query_id=str(query.get("id")), text=text)

    def serves(self, chat_id: str, user_id: str | None) -> bool:
        """Whether a message of ``user_id`` in ``chat_id`` is answered: both must be allowed."""
        return chat_id in self.allowed and user_id is not None and user_id in self.users

    async def send(self, chat_id: str, text: str, reply_markup: dict[str, Any] | None = None,
                   account_at: int | None = None) -> None:
        """The text in as many messages as Telegram's length limit needs (buttons under the last), the engine's
        account (from ``account_at``) quoted; a refusal is logged, not raised."""
        parts = split_message(text)
        start = 0
        for i, part in enumerate(parts):
            markup = {"reply_markup": reply_markup} if reply_markup and i == len(parts) - 1 else {}
            entities = account_entities(part, start, account_at) if account_at is not None else []
            if entities:
                markup["entities"] = entities
            start += len(part)
            try:
                await self.api.call("sendMessage", chat_id=chat_id, text=part, **markup)
            except FatalTelegramError:
                raise
            except (ConnectionError, TelegramError) as exc:
                log.error("could not answer chat %s: %s", chat_id, exc)
                return

    @contextlib.asynccontextmanager
    async def typing(self, chat_id: str) -> AsyncIterator[None]:
        """Show "typing" in the chat until the block ends (best effort)."""

        async def keep_typing() -> None:
            while True:
                with contextlib.suppress(ConnectionError, TelegramError):
                    await self.api.call("sendChatAction", chat_id=chat_id, action="typing")
                await asyncio.sleep(TYPING_EVERY)

        task = asyncio.create_task(keep_typing())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def allowed_users(chats: Iterable[str], users: Iterable[str] | None) -> frozenset[str]:
    """The users given, or else the users of the allowed private chats (Telegram gives a private chat its
    user's id; a group's id is negative, a channel's a name): a group alone lets nobody in."""
    given = frozenset(str(user).strip() for user in users or () if str(user).strip())
    return given or frozenset(chat for chat in chats if chat.isdigit())


async def _until(stop: asyncio.Event, call: Any) -> Any:
    """``call``'s result, or None if ``stop`` is set first (the call is cancelled)."""
    task = asyncio.ensure_future(call)
    stopped = asyncio.create_task(stop.wait())
    done, _ = await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        stopped.cancel()
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return None


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


# --- command line -------------------------------------------------------------------------


@click.command("telegram", context_settings=CONTEXT_SETTINGS,
               short_help="Answer Telegram messages with the assistant.")
@click.option("--chat", "chats", multiple=True, metavar="ID",
              help="A chat id allowed to talk to the assistant; repeat it (default: $SKILLS_TELEGRAM_CHATS).")
@click.option("--user", "users", multiple=True, metavar="ID",
              help="A user id allowed to talk to the assistant in those chats; repeat it (default: "
                   "$SKILLS_TELEGRAM_USERS, else the users of the allowed private chats).")
@process_command
def telegram_command(chats: tuple[str, ...], users: tuple[str, ...]) -> int:
    """Answer Telegram messages of the allowed users in the allowed chats with the assistant (Bot API long
    polling; needs TELEGRAM_BOT_TOKEN). Exit 2 on missing configuration, 1 if Telegram or Temporal refuses."""
    refuse_json("telegram")
    options = current()
    settings = options.settings()
    token = os.environ.get(TOKEN_ENV, "").strip()
    allowed = list(chats) or settings.telegram_chats
    if not token:
        print(f"error: {TOKEN_ENV} is not set: give the bot's token from @BotFather", file=sys.stderr)
        return 2
    if not allowed:
        print("error: no chat may talk to the assistant: set SKILLS_TELEGRAM_CHATS (comma-separated chat ids) "
              "or give --chat; write to the bot once and its log names your chat id", file=sys.stderr)
        return 2
    # Logs on stderr, redacted; httpx's INFO lines (request URLs, which carry the token) stay quiet.
    prepare_process(settings, long_running=True)
    try:
        asyncio.run(_serve(options, token, allowed, list(users) or settings.telegram_users))
    except (TemporalUnavailableError, TelegramError, ConnectionError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


async def _serve(options: Globals, token: str, chats: list[str], users: list[str]) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)

    async def connect() -> SkillsClient:
        return await SkillsClient.connect(task_queue=options.queue, address=options.address,
                                          namespace=options.namespace)

    await serve(connect, token, chats, stop, users=users)
    log.info("stopped")


async def serve(connect: Callable[[], Awaitable[Chats]], token: str, chats: Iterable[str],
                stop: asyncio.Event, users: Iterable[str] | None = None) -> None:
    """Check the token (getMe), connect, and answer until ``stop`` is set (``skills dev`` runs this too).
    ``users`` who may talk in ``chats``: by default the users of the allowed private chats."""
    api = BotApi(token, os.environ.get(API_BASE_ENV) or DEFAULT_API_BASE)
    try:
        me = await api.call("getMe")  # a bad token fails here, before anything else
        bot = TelegramBot(await connect(), api, chats, users=users)
        log.info("answering as @%s for users %s in chats %s", (me or {}).get("username"),
                 ", ".join(sorted(bot.users)) or "(none)", ", ".join(sorted(bot.allowed)))
        await bot.run(stop)
    finally:
        await api.aclose()


def main(argv: list[str] | None = None) -> None:
    exit_process(run_command(telegram_command, argv, "python -m starter.telegram_bot"))


if __name__ == "__main__":
    main()
