"""A slow endpoint is not an unreachable one: a model that answers slowly but steadily (a local model on
a CPU) finishes its turn, however long past SKILLS_LLM_TIMEOUT, while the turn heartbeats; silence past
SKILLS_LLM_TIMEOUT, or a turn past SKILLS_LLM_TURN_TIMEOUT, is reported as the timeout it is."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter

import client.skills_client as skills_client
from client.skills_client import wait_line
from config.settings import Settings
from skills.naming import LLM_TURN
from skills.run.deadline import LLM_MARGIN
from tests.conftest import Engine, eventually
from tests.fakes.llm_server import ScriptedLLM, call, say, slow
from workflows.options import HEARTBEAT

SILENCE = timedelta(seconds=4)
"""SKILLS_LLM_TIMEOUT in these tests: the old start-to-close of a turn was this plus LLM_MARGIN. Twice the
longest gap a scripted answer here leaves on purpose (with 2 s, a loaded machine's scheduling made one)."""


def briefing(model: str) -> dict[str, object]:
    return {"name": model, "instructions": "Send me a short good-morning note.", "model": model,
            "required_tools": ["outbox_send_message"], "notify_on_completion": False}


@pytest.fixture
async def patient(client: Client, settings: Settings, llm: ScriptedLLM) -> AsyncIterator[Engine]:
    engine = await Engine(settings.model_copy(update={
        "llm_base_url": llm.base_url, "llm_api_key": "sk-test", "llm_model": "default", "llm_timeout": SILENCE,
        "llm_turn_timeout": timedelta(seconds=60)}), client).start()
    yield engine
    await engine.stop()


async def test_a_slow_steady_answer_completes_past_the_old_timeout_while_the_turn_heartbeats(
        patient: Engine, llm: ScriptedLLM, client: Client) -> None:
    old_limit = (SILENCE + LLM_MARGIN).total_seconds()
    pieces = int(old_limit) + 3  # one a second: past the old start-to-close and the heartbeat timeout
    assert pieces > HEARTBEAT.total_seconds()
    llm.script("steady", [
        slow(call("outbox_send_message", {"message": "Good morning! " * 8}), first_after=1.5, every=1, pieces=pieces),
        say("Sent."),
    ])
    await patient.skills.register(briefing("steady"))
    started = await patient.skills.run("steady", wait=False)
    assert isinstance(started, str)
    handle = client.get_workflow_handle(started)

    async def received() -> bool:
        described = await handle.describe()
        for pending in described.raw_description.pending_activities:
            if pending.activity_type.name == LLM_TURN and pending.heartbeat_details.payloads:
                details = await pydantic_data_converter.decode(pending.heartbeat_details.payloads)
                return any("characters received" in str(d) for d in details)
        return False

    await eventually(received, timeout=30, interval=0.5)  # the turn tells what has come so far
    await eventually(lambda: _done(handle), timeout=90, interval=0.5)
    [record] = await patient.skills.runs("steady")
    assert (record.status, record.summary) == ("success", "Sent."), record.summary
    assert (record.finished_at - record.started_at).total_seconds() > old_limit
    assert [m["message"] for m in patient.outbox()] == ["Good morning! " * 8]


async def _done(handle: WorkflowHandle) -> bool:
    return (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED


async def test_silence_past_the_timeout_is_a_timeout_that_names_its_setting(patient: Engine,
                                                                           llm: ScriptedLLM) -> None:
    llm.script("mute", [slow(say("too late"), first_after=SILENCE.total_seconds() + 3)])
    await patient.skills.register(briefing("mute"))
    run = await patient.skills.run("mute")
    assert run.status == "error"
    assert f"timed out after {SILENCE.seconds} s without a word for the model 'mute'" in run.summary, run.summary
    assert "SKILLS_LLM_TIMEOUT" in run.summary and "could not be reached" not in run.summary
    assert len(llm.requests_for("mute")) == 1  # a timeout is not asked again


async def test_a_turn_past_its_whole_limit_is_a_timeout_that_names_its_setting(
        client: Client, settings: Settings, llm: ScriptedLLM) -> None:
    engine = await Engine(settings.model_copy(update={
        "llm_base_url": llm.base_url, "llm_api_key": "sk-test", "llm_model": "default", "llm_timeout": SILENCE,
        "llm_turn_timeout": timedelta(seconds=3)}), client).start()
    try:
        llm.script("endless", [slow(say("word " * 40), first_after=0.5, every=0.5, pieces=40)])
        await engine.skills.register(briefing("endless"))
        run = await engine.skills.run("endless")
        assert run.status == "error"
        assert "took longer than 3 s (SKILLS_LLM_TURN_TIMEOUT)" in run.summary, run.summary
    finally:
        await engine.stop()


async def test_an_endpoint_that_cannot_stream_is_asked_without(client: Client, settings: Settings) -> None:
    with ScriptedLLM(streaming=False) as llm:
        engine = await Engine(settings.model_copy(update={
            "llm_base_url": llm.base_url, "llm_api_key": "sk-test", "llm_model": "default",
            "llm_stream": False}), client).start()
        try:
            llm.script("plain", [say("Sent a note.", prompt_tokens=321, completion_tokens=4)])
            await engine.skills.register(briefing("plain"))
            run = await engine.skills.run("plain")
            assert (run.status, run.summary, run.prompt_tokens) == ("success", "Sent a note.", 321)
            assert "stream" not in llm.requests_for("plain")[0].body
        finally:
            await engine.stop()


async def test_a_streamed_answer_records_the_endpoints_usage(patient: Engine, llm: ScriptedLLM) -> None:
    llm.script("counted", [say("Done.", prompt_tokens=1234, completion_tokens=5)])
    await patient.skills.register(briefing("counted"))
    run = await patient.skills.run("counted")
    assert (run.status, run.prompt_tokens, run.completion_tokens) == ("success", 1234, 5)
    body = llm.requests_for("counted")[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


async def test_a_chat_says_what_it_waits_for(patient: Engine, llm: ScriptedLLM,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """`skills chat` with a slow local model: the wait is told (on stderr), with what has come."""
    monkeypatch.setattr(skills_client, "WAIT_NOTICE", timedelta(seconds=0.3))
    # Long enough for a second heartbeat to reach the server (the SDK sends one every 8 s at most).
    llm.script("default", [slow(say("Hello, " + "slowly " * 20), first_after=1, every=1, pieces=11)])
    told: list[str] = []
    reply = await patient.skills.chat("hello", session_id="slow", waiting=told.append)
    assert reply.ok and reply.reply.startswith("Hello, slowly")
    assert any(line.startswith("waiting for the model, ") and "waiting for the first token" in line
               for line in told), told
    assert any("characters received" in line for line in told), told


async def test_a_retry_says_it_is_one_and_why_and_waiting_counts_from_the_turns_start(
        client: Client, settings: Settings, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the endpoint down, the line said "waiting for the model, 0 s (waiting for the first
    token)" six times. Now it says which attempt it is, after what, and the seconds since the turn began."""
    monkeypatch.setattr(skills_client, "WAIT_NOTICE", timedelta(seconds=0.3))
    # No silence is tested here: the endpoint's first answer after it comes back up (its server starting in
    # this loaded process) is given all the time it needs; with 2 s, the project's CI once timed it out.
    engine = await Engine(settings.model_copy(update={
        "llm_base_url": llm.base_url, "llm_api_key": "sk-test", "llm_model": "default",
        "llm_timeout": timedelta(seconds=60), "llm_turn_timeout": timedelta(seconds=60)}), client).start()
    try:
        await _retried_turn(engine, llm)
    finally:
        await engine.stop()


async def _retried_turn(patient: Engine, llm: ScriptedLLM) -> None:
    llm.script("default", [say("Back again.")])
    llm.down()
    told: list[str] = []
    turn = asyncio.create_task(patient.skills.chat("hello", session_id="retry", waiting=told.append))

    def seconds(line: str) -> int:
        return int(line.removeprefix("waiting for the model, ").split(" s")[0])

    try:
        # Each attempt fails at once, so counted from its own start the wait was always 0 s; from the
        # turn's start it passes the 2 s the first retry waits.
        [line, *_] = await eventually(lambda: [t for t in told if "attempt " in t and seconds(t) >= 2],
                                      timeout=60, interval=0.2)
    finally:
        llm.up()
    reply = await turn
    assert reply.ok and reply.reply == "Back again."
    retries = [t for t in told if "attempt " in t]
    assert retries[0].startswith("waiting for the model, ") and " of 6" in retries[0], retries
    assert all("could not be reached" in t for t in retries), retries
    # Between attempts, the failed attempt's heartbeat ("waiting for the first token") is not said as news.
    waits = [t for t in retries if re.search(r"attempt \d+ of 6 in \d+ s", t)]
    assert waits and not any("waiting for the first token" in t for t in waits), retries
    assert seconds(line) >= 2


def test_a_wait_line_counts_from_the_turn_and_names_the_retry() -> None:
    began = datetime(2026, 11, 22, 8, tzinfo=UTC)
    failure = ("the LLM endpoint http://127.0.0.1:9/v1 could not be reached (Connection error: All connection "
               "attempts failed); is it running? (SKILLS_LLM_BASE_URL)")
    assert wait_line("the model", since=began, now=began + timedelta(seconds=14), attempt=3, maximum=6,
                     last_failure=failure, started=False, next_attempt=began + timedelta(seconds=18),
                     said="waiting for the first token") == (
        "waiting for the model, 14 s (attempt 3 of 6 in 4 s after the LLM endpoint http://127.0.0.1:9/v1 could "
        "not be reached (Connection error: All connection attempts failed))")
    assert wait_line("the model", since=began, now=began + timedelta(seconds=40), attempt=1, maximum=6,
                     last_failure="", started=True, next_attempt=None, said="312 characters received") == \
        "waiting for the model, 40 s (312 characters received)"
    retried = wait_line("the model", since=began, now=began + timedelta(seconds=50), attempt=2, maximum=6,
                        last_failure="the LLM endpoint answered 503", started=True, next_attempt=None,
                        said="waiting for the first token")
    assert retried == ("waiting for the model, 50 s (attempt 2 of 6 after the LLM endpoint answered 503; "
                       "waiting for the first token)")


async def test_an_endpoint_that_refuses_to_stream_is_asked_whole(client: Client, settings: Settings) -> None:
    """SKILLS_LLM_STREAM left on, an endpoint that answers `stream: true` with a 400: the turn is asked
    again whole, and the worker asks that endpoint whole from then on."""
    with ScriptedLLM(streaming=False) as llm:
        engine = await Engine(settings.model_copy(update={
            "llm_base_url": llm.base_url, "llm_api_key": "sk-test", "llm_model": "default"}), client).start()
        try:
            llm.script("whole", [say("First."), say("Second.")])
            await engine.skills.register(briefing("whole"))
            assert (await engine.skills.run("whole")).summary == "First."
            assert (await engine.skills.run("whole")).summary == "Second."
            asked = [bool(r.body.get("stream")) for r in llm.requests_for("whole")]
            assert asked == [True, False, False]  # refused once, then whole
        finally:
            await engine.stop()
