"""The telegram MCP server over real stdio, against a fake Bot API on loopback."""

from __future__ import annotations

import itertools
import logging
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from adapters.mcp import McpServerConfig, ToolHub, load_argument_rules
from mcp_servers.telegram import split_message
from tests.mcp_servers.http_fake import Answer, FakeApi, Request, Responder, fake_api

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "123456:AAFake-Token_forTests"


def bot_api() -> Responder:
    """The Bot API answering every sendMessage well, with message ids from 500 up."""
    ids = itertools.count(500)

    def answer(request: Request) -> Answer:
        return Answer(body={"ok": True, "result": {
            "message_id": next(ids), "date": 1760000000, "chat": {"id": request.body["chat_id"]},
            "text": request.body["text"],
        }})

    return answer


@pytest.fixture(scope="module")
def shared_api() -> Iterator[FakeApi]:
    with fake_api(bot_api()) as fake:
        yield fake


@pytest.fixture
def api(shared_api: FakeApi) -> FakeApi:
    """The module's fake Bot API, answering well, with no requests recorded yet."""
    shared_api.responder, shared_api.requests = bot_api(), []
    return shared_api


def server_env(api: FakeApi, **extra: str) -> dict[str, str]:
    return {"TELEGRAM_BOT_TOKEN": TOKEN, "TELEGRAM_API_BASE": api.url, "TELEGRAM_ALLOWED_CHATS": "4242, 1", **extra}


@asynccontextmanager
async def telegram(env: dict[str, str]) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_servers.telegram"], env=env, cwd=ROOT)
    async with Client(params) as client:
        yield client


@pytest.fixture(scope="module")
async def hub(shared_api: FakeApi) -> AsyncIterator[ToolHub]:
    # One server for the tests that need no special environment (a stdio start costs a second),
    # reached as the engine reaches it.
    config = McpServerConfig(command=sys.executable, args=["-m", "mcp_servers.telegram"],
                             env=server_env(shared_api), cwd=ROOT)
    async with ToolHub({"telegram": config}, catalog_ttl=None) as hub:
        yield hub


async def test_send_message_posts_send_message_to_the_bot_api(api: FakeApi, hub: ToolHub) -> None:
    result = await hub.call("telegram_send_message", {"chat_id": "4242", "message": "Drink water"})

    assert result.ok
    assert result.structured == {"chat_id": "4242", "message_ids": [500]}
    assert result.text == "Sent to Telegram chat 4242 (message 500)."
    [request] = api.requests
    assert (request.method, request.path) == ("POST", f"/bot{TOKEN}/sendMessage")
    assert request.headers["content-type"] == "application/json"
    assert request.body == {"chat_id": "4242", "text": "Drink water"}


async def test_default_chat_parse_mode_and_a_long_message_in_parts(api: FakeApi) -> None:
    long_text = "\n".join(f"line {i:04d} " + "x" * 90 for i in range(60))  # about 6000 characters
    async with telegram(server_env(api, TELEGRAM_CHAT_ID="-1001234567890")) as client:
        result = await client.call_tool("send_message", {"message": long_text, "parse_mode": "HTML"})

    assert not result.is_error and "in 2 parts" in result.content[0].text
    assert [r.body["chat_id"] for r in api.requests] == ["-1001234567890"] * 2
    assert all(r.body["parse_mode"] == "HTML" for r in api.requests)
    texts = [r.body["text"] for r in api.requests]
    assert "".join(texts) == long_text
    assert all(len(t) <= 4096 for t in texts) and texts[0].endswith("\n")  # cut at a line break


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (Answer(400, {"ok": False, "error_code": 400, "description": "Bad Request: chat not found"}),
         "Telegram refused the message (400): Bad Request: chat not found; has the user started a chat"),
        (Answer(401, {"ok": False, "error_code": 401, "description": "Unauthorized"}),
         "Telegram refused the message (401): Unauthorized; check TELEGRAM_BOT_TOKEN"),
        (Answer(429, {"ok": False, "error_code": 429, "description": "Too Many Requests: retry after 7",
                      "parameters": {"retry_after": 7}}),
         "Telegram refused the message (429): Too Many Requests: retry after 7; Telegram asks to retry after 7 s"),
        (Answer(502, "<html>Bad Gateway</html>"), "unexpected answer from the Telegram Bot API: HTTP 502"),
    ],
)
async def test_telegram_errors_come_back_as_clear_tool_errors(
    api: FakeApi, hub: ToolHub, answer: Answer, expected: str
) -> None:
    api.responder = lambda _request: answer
    result = await hub.call("telegram_send_message", {"chat_id": "1", "message": "hi"})

    assert result.is_error
    assert expected in result.text
    assert len(api.requests) == 1


async def test_missing_configuration_is_a_clear_tool_error(api: FakeApi, hub: ToolHub) -> None:
    async with telegram({"TELEGRAM_API_BASE": api.url}) as tokenless:
        no_token = await tokenless.call_tool("send_message", {"chat_id": "1", "message": "hi"})
    no_chat = await hub.call("telegram_send_message", {"message": "hi"})
    empty = await hub.call("telegram_send_message", {"chat_id": "1", "message": "  "})

    assert no_token.is_error and "TELEGRAM_BOT_TOKEN is not set" in no_token.content[0].text
    assert no_chat.is_error and "no chat_id given and TELEGRAM_CHAT_ID is not set" in no_chat.text
    assert empty.is_error and "message is empty" in empty.text
    assert api.requests == []


async def test_an_unreachable_api_is_a_tool_error_without_the_token(api: FakeApi) -> None:
    with fake_api(bot_api()) as gone:
        closed_url = gone.url
    async with telegram({"TELEGRAM_BOT_TOKEN": TOKEN, "TELEGRAM_API_BASE": closed_url,
                         "TELEGRAM_ALLOWED_CHATS": "1"}) as client:
        result = await client.call_tool("send_message", {"chat_id": "1", "message": "hi"})

    assert result.is_error and "cannot reach the Telegram Bot API: ConnectError" in result.content[0].text
    assert TOKEN not in result.content[0].text


async def test_as_the_engine_notifier_with_the_default_chat_and_no_token_in_the_logs(
    api: FakeApi, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The engine calls ``telegram_send_message`` with a message only; the chat comes from its settings."""
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", TOKEN)
    config = McpServerConfig(
        command=sys.executable,
        args=["-m", "mcp_servers.telegram"],
        env={"TELEGRAM_BOT_TOKEN": "${TELEGRAM_BOT_TOKEN}", "TELEGRAM_API_BASE": api.url,
             "TELEGRAM_ALLOWED_CHATS": "987654321"},
        cwd=ROOT,
    )
    caplog.set_level(logging.DEBUG)
    rules = load_argument_rules(None, default_chat_id="987654321")
    async with ToolHub({"telegram": config}, rules=rules) as hub:
        sent = await hub.call("telegram_send_message", {"message": "Backup finished"})
        invented = await hub.call("telegram_send_message", {"message": "again", "chat_id": "user_primary_chat_12345"})

    assert sent.ok and invented.ok
    assert [r.body for r in api.requests] == [
        {"chat_id": "987654321", "text": "Backup finished"},
        {"chat_id": "987654321", "text": "again"},
    ]
    assert invented.adjusted == [
        "'chat_id': suspiciously long (23 characters), the configured default filled in"
    ]
    assert TOKEN not in caplog.text
    assert TOKEN not in config.model_dump_json()


async def test_a_chat_outside_the_allowed_destinations_is_refused_before_anything_is_sent(api: FakeApi) -> None:
    # A model (or a plan) that names another chat_id -- a prompt injection's own -- reaches nobody.
    env = {"TELEGRAM_BOT_TOKEN": TOKEN, "TELEGRAM_API_BASE": api.url, "SKILLS_TELEGRAM_CHATS": "4242, -100777",
           "TELEGRAM_CHAT_ID": "555"}
    async with telegram(env) as client:
        stolen = await client.call_tool("send_message", {"chat_id": "31337", "message": "the owner's mail"})
        channel = await client.call_tool("send_message", {"chat_id": "@attackers", "message": "hi"})
        group = await client.call_tool("send_message", {"chat_id": " -100777 ", "message": "to the group"})
        default = await client.call_tool("send_message", {"message": "to the default chat"})
    async with telegram({**env, "TELEGRAM_ALLOWED_CHATS": "@Owners_Channel"}) as narrowed:
        own = await narrowed.call_tool("send_message", {"chat_id": "@owners_channel", "message": "news"})
        former = await narrowed.call_tool("send_message", {"chat_id": "4242", "message": "hi"})
    async with telegram({"TELEGRAM_BOT_TOKEN": TOKEN, "TELEGRAM_API_BASE": api.url}) as unset:
        nowhere = await unset.call_tool("send_message", {"chat_id": "4242", "message": "hi"})

    assert stolen.is_error and stolen.content[0].text.endswith(
        "chat_id '31337' is not an allowed destination: this server sends only to 4242, -100777 and 555 "
        "(TELEGRAM_ALLOWED_CHATS, or SKILLS_TELEGRAM_CHATS, and TELEGRAM_CHAT_ID)")
    assert channel.is_error and "chat_id '@attackers' is not an allowed destination" in channel.content[0].text
    assert not group.is_error and not default.is_error and not own.is_error
    assert former.is_error and "sends only to @Owners_Channel and 555" in former.content[0].text
    assert nowhere.is_error and "no chat is an allowed destination: set TELEGRAM_ALLOWED_CHATS" in \
        nowhere.content[0].text
    assert [r.body["chat_id"] for r in api.requests] == ["-100777", "555", "@owners_channel"]


def test_split_message_cuts_at_line_breaks_and_keeps_every_character() -> None:
    assert split_message("short") == ["short"]
    assert split_message("") == [""]
    assert split_message("aaaa\nbbbb\ncc", limit=6) == ["aaaa\n", "bbbb\n", "cc"]
    assert split_message("x" * 10, limit=4) == ["xxxx", "xxxx", "xx"]
