"""The webhook MCP server over real stdio, against fake Slack and Discord incoming webhooks on loopback."""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from adapters.mcp import McpServerConfig, ToolHub
from mcp_servers.webhook import webhook_format
from tests.mcp_servers.http_fake import Answer, FakeApi, Request, fake_api

ROOT = Path(__file__).resolve().parents[2]
SLACK_PATH = "/services/T0001/B0002/sEcReTsLaCkPaRt"
DISCORD_PATH = "/api/webhooks/1234567890/dIsCoRdSeCrEt-token"


def slack(_request: Request) -> Answer:
    return Answer(200, "ok")  # what Slack answers a good post


def discord(_request: Request) -> Answer:
    return Answer(204)  # what Discord answers a good post without ?wait=true


@pytest.fixture(scope="module")
def shared_api() -> Iterator[FakeApi]:
    with fake_api(slack) as fake:
        yield fake


@pytest.fixture
def api(shared_api: FakeApi) -> FakeApi:
    shared_api.requests = []
    return shared_api


def webhook_server(env: dict[str, str]) -> McpServerConfig:
    return McpServerConfig(command=sys.executable, args=["-m", "mcp_servers.webhook"], env=env, cwd=ROOT)


@pytest.fixture(scope="module")
async def hub(shared_api: FakeApi) -> AsyncIterator[ToolHub]:
    """Two webhook servers, as a user would configure them: the URL from the environment."""
    servers = {
        "slack": webhook_server({"WEBHOOK_URL": "${TEST_SLACK_WEBHOOK}"}),
        "discord": webhook_server({"WEBHOOK_URL": "${TEST_DISCORD_WEBHOOK}"}),
    }
    environ = {"TEST_SLACK_WEBHOOK": shared_api.url + SLACK_PATH, "TEST_DISCORD_WEBHOOK": shared_api.url + DISCORD_PATH}
    async with ToolHub(servers, environ=environ, catalog_ttl=None) as hub:
        yield hub


async def test_slack_gets_a_text_body(api: FakeApi, hub: ToolHub, caplog: pytest.LogCaptureFixture) -> None:
    api.responder = slack
    caplog.set_level(logging.DEBUG)
    result = await hub.call("slack_send_message", {"message": "Backup *done*"})

    assert result.ok and result.text == "Posted to the slack webhook at 127.0.0.1."
    assert result.structured == {"format": "slack", "parts": 1}
    [request] = api.requests
    assert (request.method, request.path, request.body) == ("POST", SLACK_PATH, {"text": "Backup *done*"})
    assert request.headers["content-type"] == "application/json"
    assert "sEcReTsLaCkPaRt" not in caplog.text


async def test_discord_gets_a_content_body_in_parts_of_2000(api: FakeApi, hub: ToolHub) -> None:
    api.responder = discord
    text = "\n".join(f"{i:03d} " + "y" * 95 for i in range(25))  # 2524 characters
    result = await hub.call("discord_send_message", {"message": text})

    assert result.ok and result.structured == {"format": "discord", "parts": 2}
    assert [r.path for r in api.requests] == [DISCORD_PATH, DISCORD_PATH]
    assert [set(r.body) for r in api.requests] == [{"content"}, {"content"}]
    assert "".join(r.body["content"] for r in api.requests) == text
    assert all(len(r.body["content"]) <= 2000 for r in api.requests)


@pytest.mark.parametrize(
    ("server", "answer", "expected"),
    [
        ("slack", Answer(404, "no_service"),
         "the webhook at 127.0.0.1 refused the message: HTTP 404: no_service; is WEBHOOK_URL still a live webhook?"),
        ("slack", Answer(400, "invalid_payload"), "refused the message: HTTP 400: invalid_payload"),
        ("discord", Answer(400, {"message": "Cannot send an empty message", "code": 50006}),
         'refused the message: HTTP 400: {"message": "Cannot send an empty message", "code": 50006}'),
        ("discord", Answer(429, {"message": "You are being rate limited.", "retry_after": 1.5},
                           headers={"Retry-After": "2"}),
         "HTTP 429: {\"message\": \"You are being rate limited.\", \"retry_after\": 1.5}; retry after 2 s"),
    ],
)
async def test_a_refusal_is_a_clear_tool_error_without_the_url(
    api: FakeApi, hub: ToolHub, server: str, answer: Answer, expected: str
) -> None:
    api.responder = lambda _request: answer
    result = await hub.call(f"{server}_send_message", {"message": "hi"})

    assert result.is_error and expected in result.text
    assert "sEcReT" not in result.text and "SeCrEt" not in result.text
    assert len(api.requests) == 1


async def test_misconfiguration_is_a_clear_tool_error(api: FakeApi) -> None:
    servers = {
        "nourl": webhook_server({}),
        "badformat": webhook_server({"WEBHOOK_URL": api.url + SLACK_PATH, "WEBHOOK_FORMAT": "teams"}),
    }
    async with ToolHub(servers, catalog_ttl=None) as hub:
        no_url = await hub.call("nourl_send_message", {"message": "hi"})
        bad_format = await hub.call("badformat_send_message", {"message": "hi"})

    assert no_url.is_error and "WEBHOOK_URL is not set" in no_url.text
    assert bad_format.is_error and "WEBHOOK_FORMAT='teams' is not one of slack, discord, auto" in bad_format.text
    assert api.requests == []


async def test_an_unreachable_webhook_is_a_tool_error_naming_only_the_host() -> None:
    with fake_api(slack) as gone:
        url = gone.url + SLACK_PATH
    async with ToolHub({"slack": webhook_server({"WEBHOOK_URL": url})}, catalog_ttl=None) as hub:
        result = await hub.call("slack_send_message", {"message": "hi"})

    assert result.is_error and "cannot reach the webhook at 127.0.0.1: ConnectError" in result.text
    assert "sEcReT" not in result.text


@pytest.mark.parametrize(
    ("url", "configured", "expected"),
    [
        ("https://hooks.slack.com/services/T/B/x", None, "slack"),
        ("https://discord.com/api/webhooks/1/x", None, "discord"),
        ("https://discordapp.com/api/webhooks/1/x", "auto", "discord"),
        ("https://chat.example.com/hooks/abc", "", "slack"),  # Mattermost and friends take Slack's shape
        ("https://chat.example.com/hooks/abc", "Discord", "discord"),
    ],
)
def test_the_format_follows_the_setting_or_the_url(url: str, configured: str | None, expected: str) -> None:
    assert webhook_format(url, configured) == expected
