"""The bundled servers honour idempotency keys: real server processes over stdio, reached as the
engine reaches them (the hub sends the key in the request's ``_meta``), against fakes of Telegram
and of an incoming webhook on loopback."""

from __future__ import annotations

import json
import re
import sqlite3
import sys
import time
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import asynccontextmanager, closing
from pathlib import Path

import pytest
from mcp.types import CallToolResult

from adapters.mcp import McpServerConfig, ToolHub
from mcp_servers.once import ACT, ServedKeys
from mcp_servers.outbox import keys_path
from tests.mcp_servers.http_fake import Answer, FakeApi, Request, fake_api
from tests.mcp_servers.test_telegram import TOKEN, bot_api

ROOT = Path(__file__).resolve().parents[2]


@asynccontextmanager
async def served(name: str, module: str, env: dict[str, str]) -> AsyncIterator[ToolHub]:
    config = McpServerConfig(command=sys.executable, args=["-m", module], env=env, cwd=ROOT)
    async with ToolHub({name: config}, catalog_ttl=None) as hub:
        yield hub


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def interrupted(path: Path, key: str, *, seconds_ago: float) -> None:
    """Make ``key`` look like a call whose server was killed after it began and before its result was
    kept: what a SIGKILL of the server between the effect and the record leaves behind."""
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("UPDATE served SET done = 0, result = NULL, began = ? WHERE key = ?", (time.time() - seconds_ago, key))


async def test_the_outbox_stores_a_repeated_key_once_and_answers_it_with_the_first_result(tmp_path: Path) -> None:
    outbox = tmp_path / "outbox.jsonl"
    async with served("outbox", "mcp_servers.outbox", {"SKILLS_OUTBOX_PATH": str(outbox)}) as hub:
        first = await hub.call("outbox_send_message", {"message": "Backup done"}, idempotency_key="skill-1/x/step-a/1")
        again = await hub.call("outbox_send_message", {"message": "Backup done"}, idempotency_key="skill-1/x/step-a/1")
        other = await hub.call("outbox_send_message", {"message": "Backup done"}, idempotency_key="skill-1/y/step-a/1")
        unkeyed = await hub.call("outbox_send_message", {"message": "Backup done"})

    assert first.ok and again.ok and other.ok and unkeyed.ok
    assert again.text == first.text and again.structured == first.structured
    assert other.structured["id"] != first.structured["id"]
    stored = lines(outbox)
    assert [line.get("idempotency_key") for line in stored] == ["skill-1/x/step-a/1", "skill-1/y/step-a/1", None]
    assert stored[0]["id"] == first.structured["id"]
    assert ServedKeys(keys_path(outbox), window_seconds=3600, max_keys=10).keys() == [
        "skill-1/x/step-a/1", "skill-1/y/step-a/1"]


async def test_the_same_key_with_other_arguments_is_refused_naming_the_key(tmp_path: Path) -> None:
    outbox = tmp_path / "outbox.jsonl"
    async with served("outbox", "mcp_servers.outbox", {"SKILLS_OUTBOX_PATH": str(outbox)}) as hub:
        await hub.call("outbox_send_message", {"message": "one"}, idempotency_key="k-1")
        refused = await hub.call("outbox_send_message", {"message": "two"}, idempotency_key="k-1")

    assert not refused.ok
    assert "idempotency key 'k-1' was already used for a different call" in refused.text
    assert [line["message"] for line in lines(outbox)] == ["one"]


async def test_the_window_is_bounded_by_count_and_by_age(tmp_path: Path) -> None:
    outbox = tmp_path / "outbox.jsonl"
    env = {"SKILLS_OUTBOX_PATH": str(outbox), "SKILLS_IDEMPOTENCY_MAX_KEYS": "2"}
    async with served("outbox", "mcp_servers.outbox", env) as hub:
        for key in ("a", "b", "c"):
            await hub.call("outbox_send_message", {"message": key}, idempotency_key=key)
        keys = ServedKeys(keys_path(outbox), window_seconds=3600, max_keys=2)
        assert keys.keys() == ["b", "c"]  # the oldest went when the third came
        await hub.call("outbox_send_message", {"message": "a"}, idempotency_key="a")  # forgotten: stored again
    assert [line["message"] for line in lines(outbox)] == ["a", "b", "c", "a"]

    # Age: a key older than the window is forgotten at the next call.
    with closing(sqlite3.connect(keys_path(outbox))) as db, db:
        db.execute("UPDATE served SET began = began - 7200 WHERE key = 'c'")
    env["SKILLS_IDEMPOTENCY_WINDOW_HOURS"] = "1"
    async with served("outbox", "mcp_servers.outbox", env) as hub:
        await hub.call("outbox_send_message", {"message": "d"}, idempotency_key="d")
    assert "c" not in ServedKeys(keys_path(outbox), window_seconds=3600, max_keys=2).keys()


async def test_the_outbox_killed_between_its_message_and_its_record_still_stores_once(tmp_path: Path) -> None:
    """The message's line carries its key, so the outbox finds it even when the key's record says
    only that the call began."""
    outbox = tmp_path / "outbox.jsonl"
    async with served("outbox", "mcp_servers.outbox", {"SKILLS_OUTBOX_PATH": str(outbox)}) as hub:
        first = await hub.call("outbox_send_message", {"message": "once"}, idempotency_key="k-once")
        interrupted(keys_path(outbox), "k-once", seconds_ago=0)
        again = await hub.call("outbox_send_message", {"message": "once"}, idempotency_key="k-once")
        # Begun long ago and not in the file: the message was never stored, so it is now.
        await hub.call("outbox_send_message", {"message": "late"}, idempotency_key="k-late")
        with closing(sqlite3.connect(keys_path(outbox))) as db, db:
            db.execute("UPDATE served SET done = 0, result = NULL, began = began - 600 WHERE key = 'k-late'")
        outbox.write_text("".join(line + "\n" for line in outbox.read_text().splitlines() if "k-late" not in line))
        late = await hub.call("outbox_send_message", {"message": "late"}, idempotency_key="k-late")

    assert again.ok and again.structured == first.structured
    assert late.ok
    assert [line["message"] for line in lines(outbox)] == ["once", "late"]


@pytest.fixture
def telegram_api() -> Iterator[FakeApi]:
    with fake_api(bot_api()) as fake:
        yield fake


async def test_telegram_sends_a_repeated_key_once_and_refuses_an_unknown_outcome(
        telegram_api: FakeApi, tmp_path: Path) -> None:
    env = {"TELEGRAM_BOT_TOKEN": TOKEN, "TELEGRAM_API_BASE": telegram_api.url, "TELEGRAM_ALLOWED_CHATS": "4242",
           "TELEGRAM_KEYS_PATH": str(tmp_path / "telegram.keys.db")}
    async with served("telegram", "mcp_servers.telegram", env) as hub:
        call = {"chat_id": "4242", "message": "Drink water"}
        first = await hub.call("telegram_send_message", call, idempotency_key="skill-2/at-1/step-s/1")
        again = await hub.call("telegram_send_message", call, idempotency_key="skill-2/at-1/step-s/1")
        refused = await hub.call("telegram_send_message", {**call, "message": "Eat"},
                                 idempotency_key="skill-2/at-1/step-s/1")
        # The server killed after it began a call and before it kept the result: it cannot know whether
        # Telegram got the message, so it does not send it a second time.
        interrupted(tmp_path / "telegram.keys.db", "skill-2/at-1/step-s/1", seconds_ago=600)
        unknown = await hub.call("telegram_send_message", call, idempotency_key="skill-2/at-1/step-s/1")

    assert first.ok and again.ok and again.structured == first.structured == {"chat_id": "4242", "message_ids": [500]}
    assert not refused.ok and "different call" in refused.text
    assert not unknown.ok and "did not finish" in unknown.text and "not made a second time" in unknown.text
    assert [request.body["text"] for request in telegram_api.requests] == ["Drink water"]


async def test_a_refused_send_forgets_its_key_so_the_retry_sends(telegram_api: FakeApi, tmp_path: Path) -> None:
    refusing = True

    def flaky(request: Request) -> Answer:
        if refusing:
            return Answer(429, body={"ok": False, "error_code": 429, "description": "Too Many Requests"})
        return bot_api()(request)

    telegram_api.responder = flaky
    env = {"TELEGRAM_BOT_TOKEN": TOKEN, "TELEGRAM_API_BASE": telegram_api.url, "TELEGRAM_ALLOWED_CHATS": "4242",
           "TELEGRAM_KEYS_PATH": str(tmp_path / "telegram.keys.db")}
    async with served("telegram", "mcp_servers.telegram", env) as hub:
        call = {"chat_id": "4242", "message": "hi"}
        failed = await hub.call("telegram_send_message", call, idempotency_key="k")
        refusing = False
        sent = await hub.call("telegram_send_message", call, idempotency_key="k")

    assert not failed.ok and "429" in failed.text
    assert sent.ok
    assert len(telegram_api.requests) == 2


async def test_the_webhook_posts_once_per_key_with_the_key_as_an_idempotency_key_header(tmp_path: Path) -> None:
    with fake_api(lambda _request: Answer(200, "ok")) as api:
        env = {"WEBHOOK_URL": api.url + "/services/T1/B2/secret", "WEBHOOK_KEYS_PATH": str(tmp_path / "w.keys.db")}
        async with served("webhook", "mcp_servers.webhook", env) as hub:
            first = await hub.call("webhook_send_message", {"message": "Build green"}, idempotency_key="skill-3/e/1")
            again = await hub.call("webhook_send_message", {"message": "Build green"}, idempotency_key="skill-3/e/1")
            unkeyed = await hub.call("webhook_send_message", {"message": "no key"})

    assert first.ok and again.ok and unkeyed.ok and again.text == first.text
    assert [(r.body["text"], r.headers.get("idempotency-key")) for r in api.requests] == [
        ("Build green", "skill-3/e/1"), ("no key", None)]


async def test_a_message_refused_after_its_first_parts_went_out_is_not_sent_again(
        telegram_api: FakeApi, tmp_path: Path) -> None:
    sent_ok = bot_api()

    def second_part_refused(request: Request) -> Answer:
        if len(telegram_api.requests) > 1:
            return Answer(400, body={"ok": False, "error_code": 400, "description": "Bad Request: message is too long"})
        return sent_ok(request)

    telegram_api.responder = second_part_refused
    env = {"TELEGRAM_BOT_TOKEN": TOKEN, "TELEGRAM_API_BASE": telegram_api.url, "TELEGRAM_ALLOWED_CHATS": "4242",
           "TELEGRAM_KEYS_PATH": str(tmp_path / "telegram.keys.db")}
    call = {"chat_id": "4242", "message": "x" * 4096 + "y" * 10}
    async with served("telegram", "mcp_servers.telegram", env) as hub:
        first = await hub.call("telegram_send_message", call, idempotency_key="long")
        again = await hub.call("telegram_send_message", call, idempotency_key="long")

    assert not first.ok and "1 earlier parts were sent" in first.text
    assert not again.ok and again.text == first.text  # the first answer, and the first part not sent again
    assert len(telegram_api.requests) == 2


def test_a_claim_waits_for_another_connection_making_the_keys_file_rather_than_failing(tmp_path: Path) -> None:
    """Two first calls at once (two runs notifying through one outbox, or two outboxes) both find the keys
    file new: while one makes it WAL, SQLite answers the other, which had read the file, "database is locked"
    at once, its busy timeout unused (waiting with a read held could deadlock). That escaped the tool as
    "Error executing tool send_message", and a run's notice was lost."""
    path = tmp_path / "outbox.keys.db"
    keys = ServedKeys(path, window_seconds=3600, max_keys=10)
    with closing(sqlite3.connect(path, isolation_level=None)) as other, ThreadPoolExecutor(1) as pool:
        other.execute("BEGIN IMMEDIATE")  # the other connection, holding the write lock as it makes the file WAL
        claim = pool.submit(keys.claim, "k-1", "d", None)
        with pytest.raises(FutureTimeout):  # waiting for it, not failed
            claim.result(timeout=1)
        other.execute("COMMIT")
        assert claim.result(timeout=30) == ACT
    assert keys.keys() == ["k-1"]


def test_pruning_the_kept_keys_reads_the_index_not_every_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every claim prunes the keys past the window and past the cap. With a scan and a sort of every key kept,
    a call cost 41 ms of CPU once a day of calls had filled the default cap of 10,000, against 3 ms with none.
    Every statement the keys run on ``served`` is read by an index: no full scan, no sort."""
    statements: list[str] = []
    connect = ServedKeys._connect

    def traced(self: ServedKeys) -> sqlite3.Connection:
        db = connect(self)
        db.set_trace_callback(statements.append)
        return db

    monkeypatch.setattr(ServedKeys, "_connect", traced)
    keys = ServedKeys(tmp_path / "k.db", window_seconds=3600, max_keys=3)
    for key in ("a", "b", "c", "d", "e"):
        assert keys.claim(key, "d", None) == ACT
        keys.finish(key, CallToolResult(content=[]))
    assert keys.keys() == ["c", "d", "e"]  # the newest three, as before
    queries = {q for q in statements if re.match(r"(SELECT|DELETE|UPDATE)\b.*\bFROM served\b|UPDATE served", q)}
    assert len(queries) >= 4
    with closing(sqlite3.connect(tmp_path / "k.db")) as db:
        for query in queries:
            plan = " / ".join(row[-1] for row in db.execute(f"EXPLAIN QUERY PLAN {query}"))
            assert not re.search(r"SCAN served(?! USING)", plan) and "TEMP B-TREE" not in plan, (query, plan)


def test_a_keys_file_removed_between_calls_is_made_again(tmp_path: Path) -> None:
    """A thread keeps its connection to the keys file from one call to the next; a file removed (or replaced)
    meanwhile is not written through the old connection, where its keys would be lost."""
    path = tmp_path / "k.db"
    keys = ServedKeys(path, window_seconds=3600, max_keys=10)
    assert keys.claim("a", "d", None) == ACT
    for leftover in tmp_path.glob("k.db*"):
        leftover.unlink()
    assert keys.claim("b", "d", None) == ACT
    assert keys.keys() == ["b"]
