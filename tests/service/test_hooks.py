"""``POST /hooks/<skill>`` on a real worker's health port: a skill fired from outside with its own token.

The attacks come first: each is refused with its status, and nothing runs."""

from __future__ import annotations

import asyncio
import hmac
import json
import secrets
import socket
import statistics
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, select
from temporalio.client import Client

from adapters.store import Store
from adapters.store.tables import SkillRow
from config.settings import Settings
from service import health
from service import hooks as service_hooks
from service.hooks import hook_routes
from skills.spec.models import RunRecord
from skills.when import hooks
from skills.when.hooks import MAX_HOOK_BODY, token_digest
from tests.conftest import Engine, eventually, free_port
from tests.history import readable


def on_order(name: str = "order-note", message: str = "Order {{event.data.x}} paid") -> dict[str, Any]:
    return {"name": name, "instructions": "Pass the order on.", "trigger_type": "event",
            "trigger_config": {"event": "order.paid"}, "notify_on_completion": False,
            "execution_plan": [{"id": "send", "toolName": "outbox_send_message", "parameters": {"message": message}}]}


@pytest.fixture
async def hooked(client: Client, settings: Settings) -> AsyncIterator[Engine]:
    engine = await Engine(settings.model_copy(update={"hooks": True, "health_port": free_port(),
                                                      "health_host": "127.0.0.1"}), client).start()
    yield engine
    await engine.stop()


def url(engine: Engine, ref: object) -> str:
    return f"http://127.0.0.1:{engine.settings.health_port}/hooks/{ref}"


@dataclass
class Answer:
    status_code: int
    text: str
    headers: dict[str, str]

    def json(self) -> Any:
        return json.loads(self.text)


async def post(engine: Engine, ref: object, token: str | None = None, body: Any = None, *, key: str | None = None,
               raw: bytes | None = None, scheme: str = "Bearer", method: str = "POST") -> Answer:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"{scheme} {token}"
    if key is not None:
        headers["Idempotency-Key"] = key
    content = raw if raw is not None else json.dumps(body).encode()
    request = urllib.request.Request(url(engine, ref), data=content if method == "POST" else None, headers=headers,
                                     method=method)

    def send() -> Answer:
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return Answer(response.status, response.read().decode(), {k.lower(): v for k, v in response.headers.items()})
        except urllib.error.HTTPError as e:
            return Answer(e.code, e.read().decode(), {k.lower(): v for k, v in e.headers.items()})

    return await asyncio.to_thread(send)


async def finished(engine: Engine, ref: str, count: int = 1) -> list[RunRecord] | None:
    runs = [r for r in await engine.skills.runs(ref) if r.status != "running"]
    return runs if len(runs) >= count else None


async def test_attacks_are_refused_and_nothing_runs(hooked: Engine) -> None:
    skills = hooked.skills
    target = (await skills.register(on_order())).skill
    other = (await skills.register(on_order("other", "other {{event.data.x}}"))).skill
    plain = (await skills.register(on_order("no-hook", "plain {{event.data.x}}"))).skill
    assert target and other and plain
    _, token = await skills.hook(target.id)
    _, other_token = await skills.hook("other")
    assert token and other_token and token != other_token and len(token) >= 43

    # No token at all: 401, whatever the path names (it says nothing about the skill).
    for ref in (target.id, "order-note", "no-such-skill"):
        answer = await post(hooked, ref, None, {"x": 1})
        assert answer.status_code == 401 and answer.headers["www-authenticate"].startswith("Bearer")
    assert (await post(hooked, target.id, token, {"x": 1}, scheme="Basic")).status_code == 401

    # A wrong token, another skill's token, a skill without a hook, no such skill: one and the same 404.
    nowhere = await post(hooked, "no-such-skill", token, {"x": 1})
    assert nowhere.status_code == 404
    for ref, presented in ((target.id, token[:-1] + ("A" if token[-1] != "A" else "B")), (target.id, other_token),
                           ("order-note", other_token), (plain.id, token), ("no-hook", token),
                           (999_999, token), ("..%2F..%2Fetc", token), (target.id, "x" * 5000)):
        answer = await post(hooked, ref, presented, {"x": 1})
        assert (answer.status_code, answer.text) == (404, nowhere.text), ref

    # The right token, with a body too big (refused before it is read), too deep, not JSON, a bad key.
    assert await _raw_post(hooked, target.id, token, MAX_HOOK_BODY + 1, b"[" + b"0" * (MAX_HOOK_BODY - 1) + b"]") == 413
    assert await _raw_post(hooked, target.id, token, 100 * 1024 * 1024) == 413  # declared, never sent
    deep = await post(hooked, target.id, token, raw=b"[" * 40 + b"]" * 40)
    assert deep.status_code == 400 and "more than 32 levels deep" in deep.json()["error"]
    deeper = await post(hooked, target.id, token, raw=b"[" * 30_000 + b"]" * 30_000)
    assert deeper.status_code == 400
    assert (await post(hooked, target.id, token, raw=b"{not json")).status_code == 400
    assert (await post(hooked, target.id, token, {"x": 1}, key="has space")).status_code == 400
    assert (await post(hooked, target.id, token, {"x": 1}, key="k" * 201)).status_code == 400
    # Another method: 405, and nothing looked up.
    assert (await post(hooked, target.id, token, method="GET")).status_code == 405

    # A disabled skill, with its own token: 409, nothing run.
    await skills.pause(target.id)
    disabled = await post(hooked, target.id, token, {"x": 1}, key="while-paused")
    assert disabled.status_code == 409 and "disabled" in disabled.json()["error"]
    await skills.resume(target.id)

    # A rotated token replaces the old one; a revoked one is gone.
    _, rotated = await skills.hook(target.id)
    assert rotated and (await post(hooked, target.id, token, {"x": 1})).status_code == 404
    await skills.hook("other", revoke=True)
    assert (await post(hooked, "other", other_token, {"x": 1})).status_code == 404
    assert not (await skills.get("other")).has_hook

    assert await skills.runs() == [] and hooked.outbox() == []


async def _raw_post(engine: Engine, ref: object, token: str, length: int, body: bytes = b"") -> int:
    """The status of a POST that declares ``length`` bytes and sends ``body``: a body over the cap is
    answered at once, before (and without) reading it."""
    reader, writer = await asyncio.open_connection("127.0.0.1", engine.settings.health_port)
    writer.write(f"POST /hooks/{ref} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                 f"Content-Length: {length}\r\n\r\n".encode() + body)
    await writer.drain()
    status = (await asyncio.wait_for(reader.readline(), 10)).split()[1]
    writer.close()
    return int(status)


async def test_a_hook_runs_its_skill_once_per_key_with_the_body_as_its_event(hooked: Engine) -> None:
    skill = (await hooked.skills.register(on_order())).skill
    assert skill is not None
    shown, token = await hooked.skills.hook("order-note")
    assert token and shown.has_hook

    first = await post(hooked, skill.id, token, {"x": "A-17"}, key="order-17")
    assert first.status_code == 202, first.text
    assert first.json()["run"].endswith("-event-order-17") and first.json()["event_id"] == "order-17"
    runs = await eventually(lambda: finished(hooked, "order-note"), timeout=30)
    assert (runs[0].status, runs[0].trigger) == ("success", "hook")
    assert [m["message"] for m in hooked.outbox()] == ["Order A-17 paid"]

    # The same Idempotency-Key again: answered with the first run, nothing started again.
    again = await post(hooked, skill.id, token, {"x": "B-99"}, key="order-17")
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert again.json()["runs"] == [first.json()["run"]]

    # By name too; without a key every call is its own run.
    assert (await post(hooked, "order-note", token, {"x": "C-3"})).status_code == 202
    await eventually(lambda: finished(hooked, "order-note", 2), timeout=30)
    assert sorted(m["message"] for m in hooked.outbox()) == ["Order A-17 paid", "Order C-3 paid"]


async def test_only_the_tokens_digest_is_kept_and_never_a_payload(hooked: Engine, client: Client) -> None:
    skill = (await hooked.skills.register(on_order())).skill
    assert skill is not None
    _, token = await hooked.skills.hook(skill.id)
    assert token
    store = Store.open(hooked.settings.store_url)
    with Session(store.engine) as session:
        row = session.exec(select(SkillRow).where(SkillRow.id == skill.id)).one()
    assert row.hook_digest == token_digest(token)
    assert token.encode() not in _read(hooked)
    assert hook_routes(Settings(), store, client) == {}  # off by default: /hooks/ is not served at all
    # The ChangeSkill that set it carried the digest, not the token.
    async for listed in client.list_workflows(f"WorkflowType='ChangeSkill' AND TaskQueue='{hooked.settings.task_queue}'"):
        history = await client.get_workflow_handle(listed.id).fetch_history()
        # Decoded: in the JSON as it is, a payload's data is base64, where the token would not be found as it is.
        assert token not in readable(history.to_json_dict())
    assert not hasattr(await hooked.skills.get(skill.id), "hook_digest")


def _read(engine: Engine) -> bytes:
    """The store's bytes on disk, its write-ahead log included."""
    path = Path(engine.settings.store_url.removeprefix("sqlite:///"))
    return b"".join(p.read_bytes() for p in (path, path.with_name(path.name + "-wal")) if p.exists())


def test_tokens_are_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        seen.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hooks.hmac, "compare_digest", spy)
    digest = token_digest("right")
    assert hooks.token_matches("right", digest) and not hooks.token_matches("wrong", digest)
    assert len(seen) == 2 and all(len(a) == len(b) == 64 for a, b in seen)


def test_hooks_need_the_health_port() -> None:
    with pytest.raises(ValueError, match="SKILLS_HOOKS is on but SKILLS_HEALTH_PORT is off"):
        Settings(hooks=True, health_port=None)


# --- what a stranger can learn from the door ------------------------------------------------------


def _timed_post(port: int, ref: object, token: str) -> tuple[float, bytes]:
    """Seconds from the request's last byte to the answer's first, over a socket of its own."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"POST /hooks/{ref} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                     f"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}".encode())
        start = time.perf_counter()
        first = sock.recv(12)
        took = time.perf_counter() - start
        while sock.recv(4096):
            pass
    return took, first


async def test_a_wrong_token_is_answered_in_the_same_time_whether_the_skill_has_a_hook_or_not(
        hooked: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    skill = (await hooked.skills.register(on_order())).skill
    assert skill is not None
    await hooked.skills.hook(skill.id)
    wrong = secrets.token_urlsafe(32)
    compared: list[int] = []
    real = service_hooks.hmac.compare_digest

    def counting(a: bytes, b: bytes) -> bool:
        compared.append(len(b))
        return real(a, b)

    # The same work for both: as many constant-time comparisons, of digests of one length.
    monkeypatch.setattr(service_hooks.hmac, "compare_digest", counting)
    for ref in (skill.id, 999_999):
        compared.clear()
        took, first = await asyncio.to_thread(_timed_post, hooked.settings.health_port, ref, wrong)
        assert first.startswith(b"HTTP/1.1 404")
        assert compared == [64] * service_hooks.MAX_CANDIDATES, ref
    monkeypatch.undo()

    def measure(rounds: int) -> tuple[float, float]:
        # Interleaved, each pair in alternating order, and compared pair by pair: a slower moment of a
        # loaded machine (the suite runs four tests at once) weighs on both requests of a pair alike.
        differences, times = [], []
        for n in range(rounds):
            pair = [skill.id, 999_999] if n % 2 else [999_999, skill.id]
            took = {}
            for ref in pair:
                took[ref], first = _timed_post(hooked.settings.health_port, ref, wrong)
                assert first.startswith(b"HTTP/1.1 404")
            differences.append(took[skill.id] - took[999_999])
            times += took.values()
        return statistics.median(differences), statistics.median(times)

    # 0.4 ms apart (about 25%) when a skill without a hook was answered without a comparison and a skill
    # with one was loaded and compared; the same work now, so within the noise. A burst of load from the
    # tests beside this one can still tilt one round: a leak tilts every round, so three are allowed.
    rounds = []
    for _ in range(3):
        difference, typical = await asyncio.to_thread(measure, 300)
        rounds.append((difference, typical))
        if abs(difference) < 0.08 * typical + 50e-6:
            break
    else:
        raise AssertionError(f"a hook's presence shows in the time of a wrong token's answer: {rounds}")


async def test_a_request_without_a_token_is_refused_before_its_body_is_read(hooked: Engine,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # The time a client may take to send its body, 5 s in production, made one no loaded machine's answer comes
    # near: an answer that waited for the body would come after it, one that did not within seconds.
    monkeypatch.setattr(health, "REQUEST_TIMEOUT", 120.0)
    skill = (await hooked.skills.register(on_order())).skill
    assert skill is not None
    _, token = await hooked.skills.hook(skill.id)
    assert token
    for presented, status in ((None, b"401"), (secrets.token_urlsafe(32), b"404")):
        reader, writer = await asyncio.open_connection("127.0.0.1", hooked.settings.health_port)
        auth = f"Authorization: Bearer {presented}\r\n" if presented else ""
        # 60 KB declared (under the cap), not one byte sent: the answer comes at once, not after the timeout.
        writer.write(f"POST /hooks/{skill.id} HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: 60000\r\n\r\n".encode())
        await writer.drain()
        start = time.perf_counter()
        line = await asyncio.wait_for(reader.readline(), 60)
        took = time.perf_counter() - start
        writer.close()
        assert line.split()[1] == status and took < 30, (line, took)
