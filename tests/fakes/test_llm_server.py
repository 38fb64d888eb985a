"""The scripted LLM server, driven by the real openai client exactly as the engine builds it."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator

import openai
import pytest

from tests.fakes.llm_server import (
    Recorded,
    ScriptedLLM,
    call,
    calls,
    error,
    estimate_tokens,
    expect,
    hang_until,
    long,
    message_chars,
    say,
    scripted_llm,  # noqa: F401 - a fixture, used by name
    scripted_llm_fixture,
    slow,
)

KEY = "sk-test-key"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "outbox_send_message",
            "description": "Send a message",
            "parameters": {"type": "object", "properties": {"message": {"type": "string"}}},
        },
    }
]

llm = scripted_llm_fixture(api_key=KEY, models=["health-model"])


def client_for(server: ScriptedLLM, api_key: str = KEY) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=server.base_url, api_key=api_key, max_retries=0, timeout=10)


@pytest.fixture
async def client(llm: ScriptedLLM) -> AsyncIterator[openai.AsyncOpenAI]:
    async with client_for(llm) as c:
        yield c


async def ask(client: openai.AsyncOpenAI, model: str, text: str = "hello", **kwargs: object):
    return await client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": text}],
        **kwargs,  # type: ignore[arg-type]
    )


async def test_final_answer_with_explicit_usage(llm: ScriptedLLM, client: openai.AsyncOpenAI) -> None:
    llm.script("m", [say("Done.", prompt_tokens=120, completion_tokens=7)])
    answer = await ask(client, "m")
    assert answer.object == "chat.completion" and answer.model == "m" and answer.id.startswith("chatcmpl-")
    assert answer.choices[0].finish_reason == "stop"
    assert answer.choices[0].message.content == "Done." and answer.choices[0].message.tool_calls is None
    assert answer.usage is not None
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens, answer.usage.total_tokens) == (
        120,
        7,
        127,
    )


async def test_default_usage_follows_the_sizes(llm: ScriptedLLM, client: openai.AsyncOpenAI) -> None:
    llm.script("m", [say("x" * 40)])
    answer = await ask(client, "m", "y" * 400)
    assert answer.usage is not None
    assert answer.usage.prompt_tokens == estimate_tokens(message_chars([{"content": "y" * 400}])) == 100
    assert answer.usage.completion_tokens == 10


async def test_tool_calls_are_parsed_by_the_client(llm: ScriptedLLM, client: openai.AsyncOpenAI) -> None:
    llm.script(
        "m",
        [
            call("outbox_send_message", {"message": "hi"}, id="call_1"),
            calls(
                [call("get_time", {"tz": "UTC"}), ("outbox_send_message", {"message": "two"})],
                content="Working.",
            ),
        ],
    )
    first = await ask(client, "m", tools=TOOLS)
    assert first.choices[0].finish_reason == "tool_calls"
    (only,) = first.choices[0].message.tool_calls or []
    assert only.id == "call_1" and only.type == "function"
    assert only.function.name == "outbox_send_message" and json.loads(only.function.arguments) == {
        "message": "hi"
    }

    second = await ask(client, "m", tools=TOOLS)
    message = second.choices[0].message
    assert message.content == "Working."
    assert [tc.function.name for tc in message.tool_calls or []] == ["get_time", "outbox_send_message"]
    assert [json.loads(tc.function.arguments) for tc in message.tool_calls or []] == [
        {"tz": "UTC"},
        {"message": "two"},
    ]
    ids = [tc.id for tc in message.tool_calls or []]
    assert all(i.startswith("call_") for i in ids) and len(set(ids)) == 2


async def test_malformed_arguments_arrive_as_given(llm: ScriptedLLM, client: openai.AsyncOpenAI) -> None:
    llm.script("m", [call("outbox_send_message", '{"message": "unterminated')])
    answer = await ask(client, "m", tools=TOOLS)
    (tool_call,) = answer.choices[0].message.tool_calls or []
    assert tool_call.function.arguments == '{"message": "unterminated'


async def test_rate_limit_carries_retry_after(llm: ScriptedLLM, client: openai.AsyncOpenAI) -> None:
    llm.script("m", [error(429, retry_after=1), say("after the wait")])
    with pytest.raises(openai.RateLimitError) as raised:
        await ask(client, "m")
    assert raised.value.response.headers["retry-after"] == "1"
    assert raised.value.response.headers["retry-after-ms"] == "1000"
    assert raised.value.code == "rate_limit_exceeded" and "Rate limit reached for m" in raised.value.message
    assert raised.value.request_id and raised.value.request_id.startswith("req_")
    assert (await ask(client, "m")).choices[0].message.content == "after the wait"


async def test_server_errors(llm: ScriptedLLM, client: openai.AsyncOpenAI) -> None:
    llm.script("m", [error(500), error(503), error(502, body="<html>Bad gateway</html>")])
    with pytest.raises(openai.InternalServerError) as raised:
        await ask(client, "m")
    assert raised.value.status_code == 500 and raised.value.type == "server_error"
    with pytest.raises(openai.InternalServerError, match="overloaded"):
        await ask(client, "m")
    with pytest.raises(openai.InternalServerError) as raised:
        await ask(client, "m")
    assert raised.value.status_code == 502 and raised.value.body == "<html>Bad gateway</html>"


async def test_scripted_client_errors(llm: ScriptedLLM, client: openai.AsyncOpenAI) -> None:
    llm.script(
        "m", [error(401), error(400), error(404), error(400, {"error": {"message": "custom", "type": "x"}})]
    )
    with pytest.raises(openai.AuthenticationError) as auth:
        await ask(client, "m")
    assert auth.value.code == "invalid_api_key"
    with pytest.raises(openai.BadRequestError):
        await ask(client, "m")
    with pytest.raises(openai.NotFoundError, match="model `m` does not exist"):
        await ask(client, "m")
    with pytest.raises(openai.BadRequestError, match="custom"):
        await ask(client, "m")


async def test_the_api_key_is_checked(llm: ScriptedLLM) -> None:
    llm.script("m", [say("only with the right key")])
    async with client_for(llm, api_key="sk-wrong-key") as wrong:
        with pytest.raises(openai.AuthenticationError) as raised:
            await ask(wrong, "m")
        with pytest.raises(openai.AuthenticationError):
            await wrong.models.list()
    assert (
        raised.value.code == "invalid_api_key"
        and "Incorrect API key provided: sk-***ey" in raised.value.message
    )
    assert llm.remaining("m") == 1  # a refused request plays no step
    async with client_for(llm) as right:
        assert (await ask(right, "m")).choices[0].message.content == "only with the right key"
    assert all("authorization" not in r.headers for r in llm.requests)
    assert [r.status for r in llm.requests] == [401, 401, 200]


async def test_models_list(llm: ScriptedLLM, client: openai.AsyncOpenAI) -> None:
    llm.script("chat-model", [])
    models = await client.models.list()
    assert [m.id for m in models.data] == ["chat-model", "health-model"]
    assert (await client.models.retrieve("health-model")).owned_by == "scripted"
    with pytest.raises(openai.NotFoundError):
        await client.models.retrieve("nope")


async def test_scripts_per_model_are_independent_and_concurrent(
    llm: ScriptedLLM, client: openai.AsyncOpenAI
) -> None:
    release = threading.Event()
    llm.script("slow", [hang_until(release, say("slow done")), say("slow second")])
    llm.script("fast", [say("fast one"), say("fast two")])

    slow = asyncio.create_task(ask(client, "slow"))
    # The slow turn is in flight and holds its step while the other model keeps answering.
    await llm.wait_for("slow")
    assert (await ask(client, "fast")).choices[0].message.content == "fast one"
    assert (await ask(client, "fast")).choices[0].message.content == "fast two"
    assert not slow.done()
    release.set()
    assert (await slow).choices[0].message.content == "slow done"
    assert (await ask(client, "slow")).choices[0].message.content == "slow second"


async def test_many_concurrent_requests(llm: ScriptedLLM, client: openai.AsyncOpenAI) -> None:
    for i in range(5):
        llm.script(f"c{i}", [say(f"{i}-a"), say(f"{i}-b")])
    answers = await asyncio.gather(*(ask(client, f"c{i}") for i in range(5) for _ in range(2)))
    contents = sorted(a.choices[0].message.content or "" for a in answers)
    assert contents == sorted(f"{i}-{s}" for i in range(5) for s in "ab")
    assert llm.count == 10


async def test_running_out_of_script_is_a_loud_500(llm: ScriptedLLM, client: openai.AsyncOpenAI) -> None:
    llm.script("m", [say("one")])
    await ask(client, "m")
    with pytest.raises(openai.InternalServerError, match="script for model 'm' has no step 2"):
        await ask(client, "m")
    with pytest.raises(openai.InternalServerError, match="script for model 'm' has no step 2"):
        await ask(client, "m")  # a retry sees the same message
    with pytest.raises(openai.InternalServerError, match="script for model 'other' has no step 1"):
        await ask(client, "other")
    llm.script("m", [say("appended")])  # appending later resumes the script
    assert (await ask(client, "m")).choices[0].message.content == "appended"


async def test_down_and_up(llm: ScriptedLLM, client: openai.AsyncOpenAI) -> None:
    llm.script("m", [say("before"), say("after")])
    await client.models.list()  # leaves a pooled keep-alive connection behind
    base_url = llm.base_url
    llm.down()
    assert not llm.is_up
    with pytest.raises(openai.APIConnectionError):
        await client.models.list()
    with pytest.raises(openai.APIConnectionError):
        await ask(client, "m")
    llm.up()
    assert llm.base_url == base_url
    assert (await ask(client, "m")).choices[0].message.content == "before"
    assert llm.remaining("m") == 1


async def test_requests_are_recorded(llm: ScriptedLLM, client: openai.AsyncOpenAI) -> None:
    assert llm.count == 0  # nothing is sent until a client asks: how a Direct-tier test proves zero requests
    llm.script("m", [call("outbox_send_message", {"message": "hi"}, id="call_9"), say("Sent.")])
    started = time.time()
    first = await ask(client, "m", "send hi", tools=TOOLS)
    tool_call = (first.choices[0].message.tool_calls or [])[0]
    await client.chat.completions.create(
        model="m",
        tools=TOOLS,  # type: ignore[arg-type]
        messages=[
            {"role": "user", "content": "send hi"},
            first.choices[0].message.model_dump(exclude_none=True),  # type: ignore[list-item]
            {"role": "tool", "tool_call_id": tool_call.id, "content": "sent"},
        ],
    )
    await client.models.list()

    assert llm.count == 3
    assert [(r.method, r.path) for r in llm.requests] == [
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/chat/completions"),
        ("GET", "/v1/models"),
    ]
    first_request, second_request = llm.requests_for("m")
    assert first_request.step == 1 and second_request.step == 2
    assert first_request.tool_names == ["outbox_send_message"]
    assert first_request.messages == [{"role": "user", "content": "send hi"}]
    assert second_request.messages[-1] == {"role": "tool", "tool_call_id": "call_9", "content": "sent"}
    assert second_request.messages[1]["tool_calls"][0]["function"]["name"] == "outbox_send_message"
    assert started <= first_request.time <= time.time()
    assert "user-agent" in first_request.headers and "authorization" not in first_request.headers
    assert llm.requests_for("other") == []


async def test_long_answer(llm: ScriptedLLM, client: openai.AsyncOpenAI) -> None:
    llm.script("m", [long(200_000)])
    answer = await ask(client, "m")
    assert len(answer.choices[0].message.content or "") == 200_000
    assert answer.usage is not None and answer.usage.completion_tokens == 50_000


async def test_expect_checks_the_request() -> None:
    def offers_only_the_outbox(request: Recorded) -> None:
        assert request.tool_names == ["outbox_send_message"], request.tool_names

    with ScriptedLLM() as server:
        server.script(
            "m", [expect(offers_only_the_outbox, say("checked")), expect(lambda r: False, say("never"))]
        )
        async with client_for(server) as c:
            assert (await ask(c, "m", tools=TOOLS)).choices[0].message.content == "checked"
            with pytest.raises(openai.BadRequestError, match="expectation for model 'm' step 2 failed"):
                await ask(c, "m", tools=TOOLS)
        assert len(server.failures) == 1


async def test_hang_that_is_never_released_times_out() -> None:
    with ScriptedLLM() as server:
        server.script("m", [hang_until(threading.Event(), timeout=0.2)])
        async with client_for(server) as c:
            with pytest.raises(openai.InternalServerError, match="hang_until event not set within 0.2s"):
                await ask(c, "m")


async def test_stop_lets_go_of_a_hanging_turn() -> None:
    server = ScriptedLLM().start()
    server.script("m", [hang_until(threading.Event())])
    async with client_for(server) as c:
        turn = asyncio.create_task(ask(c, "m"))
        await server.wait_for("m")
        started = time.monotonic()
        await asyncio.to_thread(server.stop)
        assert time.monotonic() - started < 2
        with pytest.raises((openai.InternalServerError, openai.APIConnectionError)):
            await turn


async def test_wait_for_times_out_clearly(llm: ScriptedLLM) -> None:
    with pytest.raises(TimeoutError, match="0 of 1 requests for model 'm'"):
        await llm.wait_for("m", timeout=0.05)


async def test_streaming_is_refused_by_an_endpoint_that_cannot() -> None:
    with ScriptedLLM(streaming=False) as server:
        server.script("m", [say("unused")])
        async with client_for(server) as c:
            with pytest.raises(openai.BadRequestError, match="streaming"):
                await ask(c, "m", stream=True)


async def test_an_answer_streams_in_chunks_with_its_usage_last(llm: ScriptedLLM, client: openai.AsyncOpenAI) -> None:
    llm.script("m", [slow(say("Every weekday at 9."), pieces=3),
                     slow(call("memory_store_skill", {"name": "stand up", "instructions": "x"}), pieces=3)])
    chunks = [c async for c in await ask(client, "m", stream=True, stream_options={"include_usage": True})]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Every weekday at 9." and len([c for c in chunks if c.choices]) >= 4
    assert chunks[-1].choices == [] and chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens > 0

    chunks = [c async for c in await ask(client, "m", stream=True)]
    parts = [t for c in chunks for t in (c.choices[0].delta.tool_calls or [])]
    assert parts[0].function.name == "memory_store_skill" and parts[0].id
    assert json.loads("".join(p.function.arguments or "" for p in parts)) == {"name": "stand up", "instructions": "x"}
    assert all(c.usage is None for c in chunks)  # not asked for
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


async def test_a_slow_model_is_silent_then_answers_piece_by_piece(llm: ScriptedLLM,
                                                                 client: openai.AsyncOpenAI) -> None:
    llm.script("m", [slow(say("abcd"), first_after=0.3, every=0.2, pieces=4), slow(say("whole"), first_after=0.2)])
    started = time.monotonic()
    arrivals = [time.monotonic() - started async for _ in await ask(client, "m", stream=True)]
    assert arrivals[0] >= 0.3 and arrivals[-1] >= 0.9
    started = time.monotonic()
    assert (await ask(client, "m")).choices[0].message.content == "whole"  # not streamed: all at the end
    assert time.monotonic() - started >= 0.2


async def test_the_plain_fixture_has_no_key(scripted_llm: ScriptedLLM) -> None:  # noqa: F811
    scripted_llm.script("m", [say("hi")])
    async with client_for(scripted_llm, api_key="anything") as c:
        assert (await ask(c, "m")).choices[0].message.content == "hi"
