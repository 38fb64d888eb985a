"""The LLM endpoint's adapter against a scripted OpenAI-compatible server: answers streamed and whole,
the endpoint's failures as the engine's errors (what to fix, whether to retry, after how long)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import pytest

from adapters.llm.endpoint import LlmEndpoint
from config.settings import Settings
from skills.errors import LlmModelNotFoundError, LlmOverloadedError, LlmRefusedError, LlmUnavailableError
from skills.llm.agent import ChatMessage
from tests.fakes.llm_server import ScriptedLLM, call, error, say

KEY = "sk-adapter"
ASKED = [ChatMessage(role="user", content="hello")]


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM(api_key=KEY) as server:
        yield server


def endpoint(settings: Settings, llm: ScriptedLLM, **changes: Any) -> LlmEndpoint:
    return LlmEndpoint(settings.model_copy(update={"llm_base_url": llm.base_url, "llm_api_key": KEY, **changes}))


class Progress:
    """What the caller is told while an answer comes: every beat's words, read when the body ends."""

    def __init__(self) -> None:
        self.said: list[str] = []

    @asynccontextmanager
    async def __call__(self, progress: str | Callable[[], str]) -> AsyncIterator[None]:
        yield
        self.said.append(progress() if callable(progress) else progress)


async def test_a_streamed_answer_comes_back_whole_with_its_calls_and_usage(settings: Settings,
                                                                          llm: ScriptedLLM) -> None:
    llm.script("m", [call("outbox_send", {"message": "hi"}, "call_1", content="Sending.", prompt_tokens=11,
                          completion_tokens=7)])
    progress = Progress()
    message = await endpoint(settings, llm).complete("m", ASKED, [], waiting=progress)
    assert (message.role, message.content, message.prompt_tokens, message.completion_tokens) == \
        ("assistant", "Sending.", 11, 7)
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [("call_1", "outbox_send", '{"message": "hi"}')]
    assert llm.requests_for("m")[0].body["stream"] is True
    assert progress.said == [f"{len('Sending.' + message.tool_calls[0].arguments)} characters received"]


async def test_an_endpoint_that_refuses_to_stream_is_asked_whole_from_then_on(settings: Settings,
                                                                             caplog: pytest.LogCaptureFixture) -> None:
    with ScriptedLLM(api_key=KEY, streaming=False) as llm:
        llm.script("m", [say("one"), say("two")])
        told = logging.getLogger("test.llm")
        adapter = LlmEndpoint(settings.model_copy(update={"llm_base_url": llm.base_url, "llm_api_key": KEY}),
                              log=told)
        progress = Progress()
        with caplog.at_level(logging.WARNING, logger="test.llm"):
            assert (await adapter.complete("m", ASKED, [], waiting=progress)).content == "one"
            assert (await adapter.complete("m", ASKED, [], waiting=progress)).content == "two"
        asked = [bool(r.body.get("stream")) for r in llm.requests_for("m")]
    assert asked == [True, False, False]  # refused once, then asked whole
    assert progress.said == ["waiting for the answer", "waiting for the answer"]
    assert [r.name for r in caplog.records if "refused to stream" in r.getMessage()] == ["test.llm"]


async def test_every_attempt_of_a_turn_carries_its_key_and_a_keeping_endpoint_answers_it_once(
        settings: Settings, llm: ScriptedLLM) -> None:
    """A turn's attempts share an ``Idempotency-Key``: an endpoint that keeps answers by it (as the scripted one
    does) gives a retried turn the answer it already gave, while an error that says "ask again" is not kept."""
    llm.script("m", [say("one"), say("two")])
    llm.script("busy", [error(503), say("ok")])
    adapter = endpoint(settings, llm)
    answers = [(await adapter.complete("m", ASKED, [], idempotency_key=key)).content
               for key in ("turn-a", "turn-a", "turn-b")]
    assert answers == ["one", "one", "two"]
    asked = llm.requests_for("m")
    assert [(r.headers.get("idempotency-key"), r.replayed) for r in asked] == \
        [("turn-a", False), ("turn-a", True), ("turn-b", False)]
    with pytest.raises(LlmOverloadedError):
        await adapter.complete("busy", ASKED, [], idempotency_key="turn-c")
    assert (await adapter.complete("busy", ASKED, [], idempotency_key="turn-c")).content == "ok"
    assert "idempotency-key" not in (await _plain(adapter, llm)).headers


async def _plain(adapter: LlmEndpoint, llm: ScriptedLLM) -> Any:
    llm.script("plain", [say("no key")])
    await adapter.complete("plain", ASKED, [])
    return llm.requests_for("plain")[-1]


async def test_a_rate_limit_is_retryable_after_the_endpoints_retry_after(settings: Settings, llm: ScriptedLLM) -> None:
    llm.script("busy", [error(429, retry_after=2.5)])
    with pytest.raises(LlmOverloadedError) as raised:
        await endpoint(settings, llm).complete("busy", ASKED, [])
    assert raised.value.retryable and raised.value.retry_after == timedelta(seconds=2.5)
    assert str(raised.value).startswith(f"the LLM endpoint {llm.base_url} answered 429 for the model 'busy': ")


@pytest.mark.parametrize(("headers", "after"), [
    ({"retry-after": "3"}, timedelta(seconds=3)),  # a proxy that says it in seconds only
    ({"retry-after-ms": "1500"}, timedelta(seconds=1.5)),
    ({"retry-after-ms": "soon", "retry-after": "4"}, timedelta(seconds=4)),
    ({}, None),
])
async def test_the_retry_after_is_read_from_either_header(settings: Settings, llm: ScriptedLLM,
                                                          headers: dict[str, str], after: timedelta | None) -> None:
    llm.script("busy", [error(503, headers=headers)])
    with pytest.raises(LlmOverloadedError) as raised:
        await endpoint(settings, llm).complete("busy", ASKED, [])
    assert raised.value.retry_after == after


@pytest.mark.parametrize(("status", "kind", "hint"), [
    (401, LlmRefusedError, "the endpoint refused the API key: set SKILLS_LLM_API_KEY (401: "),
    (403, LlmRefusedError, "the API key may not use this endpoint or model (403: "),
    (404, LlmModelNotFoundError, "the endpoint does not know the model 'm': set the skill's model or SKILLS_LLM_MODEL"),
    (422, LlmRefusedError, "the request was refused (422: "),
])
async def test_a_refusal_says_what_to_fix_and_is_not_retried(settings: Settings, llm: ScriptedLLM, status: int,
                                                             kind: type[LlmRefusedError], hint: str) -> None:
    llm.script("m", [error(status, {"error": {"message": "nope"}})])
    with pytest.raises(LlmRefusedError) as raised:
        await endpoint(settings, llm).complete("m", ASKED, [])
    assert type(raised.value) is kind and not raised.value.retryable
    assert str(raised.value).startswith(hint) and str(raised.value).endswith(f"({status}: nope)")
    assert raised.value.__cause__ is not None  # the SDK's error, for the failure's chain


async def test_an_unreachable_endpoint_says_so_without_the_sdks_chain(settings: Settings, llm: ScriptedLLM) -> None:
    adapter = endpoint(settings, llm)
    llm.down()
    with pytest.raises(LlmUnavailableError) as raised:
        await adapter.complete("m", ASKED, [])
    assert type(raised.value) is LlmUnavailableError and raised.value.retryable
    assert str(raised.value).startswith(f"the LLM endpoint {llm.base_url} could not be reached (Connection error: ")
    assert raised.value.__cause__ is None  # the chain's stack traces outgrew the failure size limit
    assert (await adapter.down() or "").startswith("unreachable: ")
    llm.up()
    assert await adapter.down() is None


async def test_a_models_context_is_read_from_the_model_list_once(settings: Settings) -> None:
    with ScriptedLLM(api_key=KEY, models=["m"], contexts={"m": 4096}) as llm:
        adapter = endpoint(settings, llm)
        assert await adapter.context("m") == 4096
        listed = llm.count
        assert await adapter.context("m") == 4096 and llm.count == listed
    assert await endpoint(settings, llm, llm_context=2048).context("m") == 2048
