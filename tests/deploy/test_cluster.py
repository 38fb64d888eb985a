"""The path a team takes to a real cluster, on the real dev server (docs/deploy.md).

- Temporal's env config: `skills setup` (a real process, like the Kubernetes Job) connects where
  TEMPORAL_ADDRESS/TEMPORAL_NAMESPACE say, or where a temporal.toml profile says
  (TEMPORAL_CONFIG_FILE + TEMPORAL_PROFILE), and so does `client.connect`.
- `skills setup` on a namespace that lacks the search attributes adds them, once; a skill then
  registers and runs there, and its runs are found by `SkillName`.
- Several engines (one per team, each its own task queue and store) on one namespace: the same
  skill name and agent in both, two schedules with distinct ids, each firing to its own worker,
  and deleting one leaves the other.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from client import connect
from client.temporal_cli import temporal_binary
from config.settings import Settings
from search_attributes import SEARCH_ATTRIBUTES
from skills.errors import SkillNotFoundError, SkillValidationError
from skills.naming import engine_job_id
from tests.conftest import Engine, eventually, schedule_exists, trigger_schedule

SKILLS = str(Path(sys.executable).parent / "skills")
ATTRIBUTES = sorted(SEARCH_ATTRIBUTES)


def standup(message: str = "standup in 5") -> dict[str, Any]:
    return {"name": "standup", "agent_id": "team", "instructions": "announce the standup",
            "schedule": "0 9 * * 1-5",
            "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": message}}]}


def team_settings(settings: Settings, tmp_path: Path, team: str) -> Settings:
    """The test's settings (conftest's `settings`) for one more engine: its own queue and store."""
    return settings.model_copy(update={"task_queue": f"{team}-{uuid.uuid4().hex[:8]}", "data_dir": tmp_path / team})


def address(env: WorkflowEnvironment) -> str:
    return env.client.service_client.config.target_host


def clean_environ(**extra: str) -> dict[str, str]:
    """This process's environment without any Temporal or engine setting, plus ``extra``: the
    variables a pod would get, and nothing a developer's shell exported."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "SKILLS_", "OPENAI_"))}
    return {**kept, "TEMPORAL_CONFIG_FILE": "/nonexistent/temporal.toml", **extra}


async def run(*args: str, env: dict[str, str]) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(*args, env=env, stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.STDOUT)
    output, _ = await asyncio.wait_for(process.communicate(), timeout=60)
    return process.returncode or 0, output.decode()


async def custom_attributes(client: Client, namespace: str) -> set[str]:
    listed = await client.operator_service.list_search_attributes(ListSearchAttributesRequest(namespace=namespace))
    return set(listed.custom_attributes)


@pytest.fixture
async def new_namespace(env: WorkflowEnvironment) -> Callable[[], Awaitable[str]]:
    """Makes namespaces the way an operator would (`temporal operator namespace create`)."""

    async def make() -> str:
        name = f"team-{uuid.uuid4().hex[:8]}"
        code, output = await run(temporal_binary(), "operator", "namespace", "create", "--namespace", name,
                                 "--address", address(env), env=clean_environ())
        assert code == 0, output
        # The frontend learns of a new namespace on its next cache refresh.
        await eventually(lambda: _answers(env.client, name), timeout=30, interval=0.5)
        return name

    return make


async def _answers(client: Client, namespace: str) -> bool:
    try:
        await client.operator_service.list_search_attributes(ListSearchAttributesRequest(namespace=namespace))
    except Exception:
        return False
    return True


@pytest.fixture
async def namespace_client(env: WorkflowEnvironment) -> AsyncIterator[Callable[[str], Awaitable[Client]]]:
    """Clients on other namespaces; their schedules are deleted at the end."""
    made: list[Client] = []

    async def make(namespace: str) -> Client:
        client = await Client.connect(address(env), namespace=namespace, data_converter=pydantic_data_converter)
        made.append(client)
        return client

    yield make
    for client in made:
        async for listed in await client.list_schedules():
            await client.get_schedule_handle(listed.id).delete()


async def test_setup_prepares_a_new_namespace_named_by_the_environment(
    env: WorkflowEnvironment, new_namespace: Callable[[], Awaitable[str]],
    namespace_client: Callable[[str], Awaitable[Client]], settings: Settings, tmp_path: Path,
) -> None:
    namespace = await new_namespace()
    assert not await custom_attributes(env.client, namespace) & set(ATTRIBUTES)
    client = await namespace_client(namespace)
    engine = await Engine(team_settings(settings, tmp_path, "solo"), client).start()
    try:
        await _refused_then_set_up(env, namespace, engine, client)
    finally:
        await engine.stop()


async def _refused_then_set_up(env: WorkflowEnvironment, namespace: str, engine: Engine, client: Client) -> None:
    # Before setup: the worker starts, a registration is refused saying what to do, nothing is stored.
    with pytest.raises(SkillValidationError) as refused:
        await engine.skills.register(standup())
    assert f"namespace '{namespace}' lacks the engine's search attributes" in str(refused.value)
    assert "run `skills setup`" in str(refused.value)
    with pytest.raises(SkillNotFoundError):
        await engine.skills.get("standup", agent_id="team")

    # Configured as the Kubernetes Job is: Temporal's env config, no flags.
    # The Job shares the workers' store: setup migrates it (already at head here) first.
    environ = clean_environ(TEMPORAL_ADDRESS=address(env), TEMPORAL_NAMESPACE=namespace,
                            SKILLS_DATA_DIR=str(engine.settings.data_dir))
    code, output = await run(SKILLS, "setup", env=environ)
    assert code == 0, output
    assert f"search attributes added: {', '.join(ATTRIBUTES)}" in output
    assert await custom_attributes(env.client, namespace) >= set(ATTRIBUTES)
    code, output = await run(SKILLS, "setup", env=environ)
    assert (code, output.strip().splitlines()[-1]) == (0, "search attributes already registered")

    # Now the same skill registers and runs there, and its runs are found by SkillName.
    skill = (await engine.skills.register(standup())).skill
    assert skill is not None and skill.schedule_id
    await trigger_schedule(client, skill.schedule_id)
    await eventually(lambda: [m["message"] for m in engine.outbox()] == ["standup in 5"])

    async def found() -> list[str]:
        return [w.id async for w in client.list_workflows("SkillName='standup' AND SkillAgent='team'")]

    assert await eventually(found)


async def test_setup_and_connect_follow_a_temporal_toml_profile(
    env: WorkflowEnvironment, new_namespace: Callable[[], Awaitable[str]], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    namespace = await new_namespace()
    config = tmp_path / "temporal.toml"
    config.write_text(f'[profile.default]\naddress = "127.0.0.1:1"\nnamespace = "nowhere"\n\n'
                      f'[profile.team]\naddress = "{address(env)}"\nnamespace = "{namespace}"\n')

    environ = clean_environ(TEMPORAL_CONFIG_FILE=str(config), TEMPORAL_PROFILE="team")
    code, output = await run(SKILLS, "setup", env=environ)
    assert code == 0, output
    assert await custom_attributes(env.client, namespace) >= set(ATTRIBUTES)

    # The library reads the same: the profile, and the variables over it.
    for name in list(os.environ):
        if name.startswith("TEMPORAL_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(config))
    monkeypatch.setenv("TEMPORAL_PROFILE", "team")
    client = await connect()
    assert (client.service_client.config.target_host, client.namespace) == (address(env), namespace)
    assert set(ATTRIBUTES) <= await custom_attributes(client, client.namespace)

    monkeypatch.setenv("TEMPORAL_NAMESPACE", "default")
    client = await connect()
    assert (client.service_client.config.target_host, client.namespace) == (address(env), "default")

    monkeypatch.setenv("TEMPORAL_PROFILE", "default")  # a profile pointing nowhere: the error says where
    monkeypatch.delenv("TEMPORAL_NAMESPACE")
    with pytest.raises(Exception, match="cannot reach Temporal at 127.0.0.1:1"):
        await connect()


async def test_two_engines_share_a_namespace_without_clashing(client: Client, settings: Settings,
                                                              tmp_path: Path) -> None:
    a = await Engine(team_settings(settings, tmp_path, "team-a"), client).start()
    b = await Engine(team_settings(settings, tmp_path, "team-b"), client).start()
    try:
        skill_a = (await a.skills.register(standup("A: standup"))).skill
        skill_b = (await b.skills.register(standup("B: standup"))).skill
        assert skill_a is not None and skill_b is not None
        # Same name, same agent, same store id (each engine has its own store): the ids differ by queue.
        assert (skill_a.name, skill_a.agent_id, skill_a.id) == (skill_b.name, skill_b.agent_id, skill_b.id)
        assert skill_a.schedule_id != skill_b.schedule_id
        assert skill_a.schedule_id.startswith(f"{a.settings.task_queue}-")
        assert skill_b.schedule_id.startswith(f"{b.settings.task_queue}-")
        for engine in (a, b):
            for job in ("maintenance", "sync-files"):
                assert await schedule_exists(client, engine_job_id(engine.settings.task_queue, job))

        # Each fires to its own worker.
        await trigger_schedule(client, skill_a.schedule_id)
        await eventually(lambda: [m["message"] for m in a.outbox()] == ["A: standup"])
        await trigger_schedule(client, skill_b.schedule_id)
        await eventually(lambda: [m["message"] for m in b.outbox()] == ["B: standup"])
        assert [m["message"] for m in a.outbox()] == ["A: standup"]
        for engine in (a, b):  # the message is sent before the run is recorded: wait for the record
            async def recorded(engine: Engine = engine) -> bool:
                return [r.status for r in await engine.skills.runs("standup")] == ["success"]

            await eventually(recorded)

        # Deleting one leaves the other, which still fires.
        await a.skills.delete("standup", agent_id="team")
        assert not await schedule_exists(client, skill_a.schedule_id)
        assert await schedule_exists(client, skill_b.schedule_id)
        assert (await b.skills.get("standup", agent_id="team")).schedule_id == skill_b.schedule_id
        await trigger_schedule(client, skill_b.schedule_id)
        await eventually(lambda: len(b.outbox()) == 2)
        assert [m["message"] for m in a.outbox()] == ["A: standup"]
    finally:
        await a.stop()
        await b.stop()
