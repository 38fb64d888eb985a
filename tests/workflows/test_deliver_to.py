"""deliver_to: a skill's result goes where its owner said (send tools of the catalog with fixed arguments),
each destination a durable step of its own with the run's idempotency key; what became of each is on the
run; when every destination fails, the owner hears it through the notifier, once. Real worker, the real
outbox and telegram servers (Telegram's HTTP API is the local fake)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from temporalio.client import Client

from client import SkillsClient
from config.settings import Settings
from skills.errors import SkillValidationError
from skills.messages.run import DigestItem, DigestStart
from skills.naming import DELIVERY_DIGEST, DIGEST_SIGNAL
from skills.spec.models import Destination, RunRecord
from tests.conftest import Engine, WorkerProcess, eventually, worker_process, write_mcp_config
from tests.fakes.telegram_api import FakeBotApi
from tests.mcp_servers.http_fake import Answer, FakeApi, fake_api
from tests.starter.test_cli import address_of, options, run_skills

OWNER = "42"
ROOT = str(Path(__file__).resolve().parents[2])


@pytest.fixture
def telegram() -> Iterator[FakeBotApi]:
    with FakeBotApi() as api:
        yield api


@pytest.fixture
def slack() -> Iterator[FakeApi]:
    with fake_api(lambda _request: Answer(200, "ok")) as api:  # what Slack answers a good post
        yield api


@pytest.fixture
async def engine(client: Client, settings: Settings, tmp_path: Path, telegram: FakeBotApi,
                 slack: FakeApi) -> AsyncIterator[Engine]:
    config = write_mcp_config(tmp_path / "mcp.json", {
        "webhook": {"command": sys.executable, "args": ["-m", "mcp_servers.webhook"], "cwd": ROOT,
                    "env": {"WEBHOOK_URL": slack.url + "/services/T0001/B0002/secret",
                            "SKILLS_DATA_DIR": str(tmp_path / "webhook-data")}},
        "telegram": {"command": sys.executable, "args": ["-m", "mcp_servers.telegram"],
                     "cwd": ROOT,
                     "env": {"TELEGRAM_BOT_TOKEN": telegram.token, "TELEGRAM_API_BASE": telegram.url,
                             "TELEGRAM_ALLOWED_CHATS": OWNER,
                             "SKILLS_DATA_DIR": str(tmp_path / "telegram-data")}},
    })
    running = await Engine(settings.model_copy(update={"mcp_config": config, "telegram_chats": [OWNER]}),
                           client).start()
    yield running
    await running.stop()


def report(**fields: object) -> dict[str, object]:
    """A Direct skill whose plan only reads: its result is the completion notice, which deliver_to sends."""
    return {"name": "report", "instructions": "Count the outbox.", "notify_on_completion": True,
            "execution_plan": [{"toolName": "outbox_list_messages", "parameters": {"limit": 1}}], **fields}


async def test_the_result_goes_to_each_destination_once_and_each_outcome_is_on_the_run(
        engine: Engine, telegram: FakeBotApi, slack: FakeApi) -> None:
    await engine.skills.register(report(deliver_to=[
        {"tool": "outbox_send_message", "chat_id": "family"},
        {"tool": "telegram_send_message", "chat_id": OWNER},
        "webhook_send_message",
    ]))
    run = await engine.skills.run("report")
    assert run.status == "success"
    [record] = await engine.skills.runs("report")
    assert [(d.destination, d.status) for d in record.deliveries] == [
        ("outbox_send_message chat_id=family", "delivered"), (f"telegram_send_message chat_id={OWNER}", "delivered"),
        ("webhook_send_message", "delivered")]
    [sent] = engine.outbox()
    assert sent["chat_id"] == "family" and sent["message"].startswith("✅ report")  # not the default chat
    assert [text for text in telegram.replies(OWNER) if text.startswith("✅ report")] == [sent["message"]]
    assert [r.body for r in slack.requests] == [{"text": sent["message"]}]

    shown = await asyncio.to_thread(run_skills, "runs", "report", *options(engine))
    assert "success, delivered 3/3" in shown.stdout, shown.stdout
    got = await asyncio.to_thread(run_skills, "get", "report", *options(engine))
    assert f"telegram_send_message chat_id={OWNER}: delivered" in got.stdout, got.stdout
    assert "next 30 days    0 runs" in got.stdout  # on demand only


async def test_a_failing_destination_is_retried_then_failed_and_the_owner_hears_it_once(
        engine: Engine, telegram: FakeBotApi) -> None:
    await engine.skills.register(report(deliver_to=[{"tool": "telegram_send_message", "chat_id": OWNER}]))
    telegram.refuse["sendMessage"] = (400, "Bad Request: chat not found")  # the bot was removed from the chat
    run = await engine.skills.run("report")
    assert run.status == "success"  # the run did its work; its delivery did not reach anyone
    [record] = await engine.skills.runs("report")
    [delivery] = record.deliveries
    assert delivery.status == "failed" and "telegram_send_message" in delivery.error
    attempts = [c for c in telegram.calls if c["method"] == "sendMessage" and str(c.get("chat_id")) == OWNER]
    assert len(attempts) == 3  # retried with backoff, then failed
    [told] = engine.outbox()  # through the notifier, once
    assert told["message"].startswith("⚠️ report: its result reached none of its destinations")


async def test_destinations_are_checked_at_registration_by_field(engine: Engine) -> None:
    for deliver_to, field, words in [
        ([{"tool": "telegram_send_mesage", "chat_id": OWNER}], "deliver_to[0].tool", "did you mean"),
        ([{"tool": "telegram_send_message", "chat_id": "666"}], "deliver_to[0].chat_id", "not an allowed destination"),
        ([{"tool": "outbox_list_messages"}], "deliver_to[0].tool", "takes no `message`"),
        ([{"tool": "memory_delete_skill"}], "deliver_to[0].tool", "management"),
        ([{"tool": "outbox_send_message", "message": "hi"}], "deliver_to[0].message", "the run's result"),
        ([{"tool": "outbox_send_message"}] * 6, "deliver_to", "at most 5"),
        ("not a list", "deliver_to[0].tool", "unknown tool"),
    ]:
        with pytest.raises(SkillValidationError) as refused:
            await engine.skills.register(report(name=f"bad {field}", deliver_to=deliver_to))
        assert any(e.field == field and words in e.message for e in refused.value.errors), refused.value.errors
    assert await engine.skills.list() == []  # nothing half-written


async def test_a_worker_killed_between_two_destinations_delivers_each_once(client: Client,
                                                                          settings: Settings) -> None:
    """SIGKILL as soon as the first destination has the result: the second may or may not have had it
    too; the worker that picks the run up sends what is missing, and nothing twice (each delivery its own
    step of history, with its own idempotency key, which the outbox honours)."""
    skills = SkillsClient(client, settings.task_queue)
    outbox = settings.outbox_path

    def sent() -> list[dict[str, object]]:
        return [json.loads(line) for line in outbox.read_text().splitlines()] if outbox.exists() else []

    first = WorkerProcess(settings, address_of(client)).start()
    try:
        await skills.register(report(deliver_to=[{"tool": "outbox_send_message", "chat_id": "a"},
                                                 {"tool": "outbox_send_message", "chat_id": "b"}]))
        workflow_id = await skills.run("report", wait=False)
        assert isinstance(workflow_id, str)
        await eventually(lambda: any(m.get("chat_id") == "a" for m in sent()), timeout=60, interval=0.02)
        first.kill()  # no drain, no goodbye
    finally:
        first.stop()
    with worker_process(settings, address_of(client)):
        finished = await client.get_workflow_handle(workflow_id).result()
        assert finished["status"] == "success"
        [record] = await eventually(lambda: _with_deliveries(skills), timeout=60)
    assert sorted(str(m.get("chat_id")) for m in sent()) == ["a", "b"]  # each once
    assert [d.status for d in record.deliveries] == ["delivered", "delivered"]


async def _with_deliveries(skills: SkillsClient) -> list[RunRecord]:
    return [r for r in await skills.runs("report") if r.deliveries]


async def test_a_destinations_digest_sends_the_results_of_its_minutes_as_one_message(engine: Engine,
                                                                                     client: Client) -> None:
    # The digest gathers for its minutes from the first result: the second run, a whole run later, must end within
    # them on a loaded machine (6 s could pass before it did, and then each result was a digest of its own).
    digest = {"tool": "outbox_send_message", "chat_id": "morning", "digest_minutes": 0.5}
    for name in ("weather", "inbox"):
        await engine.skills.register(report(name=name, instructions=f"The {name}.", deliver_to=[digest]))
    assert (await engine.skills.run("weather")).status == "success"
    assert (await engine.skills.run("inbox")).status == "success"
    for name in ("weather", "inbox"):
        [record] = await engine.skills.runs(name)
        assert [d.status for d in record.deliveries] in (["queued"], ["delivered"])
    [sent] = await eventually(lambda: [m for m in engine.outbox() if m.get("chat_id") == "morning"], timeout=120)
    assert sent["message"].startswith("📬 2 results:")
    assert "• weather: " in sent["message"] and "• inbox: " in sent["message"]
    for name in ("weather", "inbox"):  # each run says its result went, in the digest
        await eventually(lambda name=name: _delivered(engine, name), timeout=30)
    assert len([m for m in engine.outbox() if m.get("chat_id") == "morning"]) == 1  # once


async def test_a_forged_digest_sends_nothing_its_owner_did_not_ask_for(engine: Engine, client: Client) -> None:
    """DeliveryDigest carries references only: a namespace holder who starts one naming another skill's run and
    a destination of their choosing gets nothing sent (the destination is read from the skill, and must match)."""
    await engine.skills.register(report(name="private", deliver_to=[{"tool": "outbox_send_message", "chat_id": "me"}]))
    run = await engine.skills.run("private")
    skill = await engine.skills.get("private")
    forged = Destination(tool="outbox_send_message", arguments={"chat_id": "attacker"}, digest_minutes=0.05)
    handle = await client.start_workflow(
        DELIVERY_DIGEST, DigestStart(key=forged.key, minutes=0.05), id="delivery-digest-forged",
        task_queue=engine.settings.task_queue, start_signal=DIGEST_SIGNAL,
        start_signal_args=[DigestItem(run_id=run.run_id, skill_id=skill.id, destination=0)])
    assert await handle.result() == 1  # it ran, and sent nothing
    assert [m.get("chat_id") for m in engine.outbox()] == ["me"]


async def _delivered(engine: Engine, name: str) -> bool:
    [record] = await engine.skills.runs(name)
    return [d.status for d in record.deliveries] == ["delivered"]
