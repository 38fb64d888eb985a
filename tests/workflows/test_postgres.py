"""The engine on PostgreSQL: one worker end to end, then three worker processes on one store and
one task queue, as a deployment with replicas runs them. Fires of the same skill never make two
run records, every failure is counted, a one-shot retires once, the maintenance round runs
once per action of its one schedule."""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

from adapters.store import Store, migrations
from client import SkillsClient
from config.settings import Settings
from skills.naming import engine_job_id
from skills.spec.models import FIRED
from tests.conftest import (
    ROOT,
    Engine,
    eventually,
    free_port,
    schedule_exists,
    trigger_schedule,
    worker_process,
    write_mcp_config,
)
from tests.service.http import answers

VERDICT = ROOT / "tests" / "mcp_servers" / "verdict_server.py"


def verdict_skill(name: str, ok: bool, **trigger: Any) -> dict[str, Any]:
    return {"name": name, "instructions": f"say {ok}", "notify_on_completion": False,
            "execution_plan": [{"id": "v", "toolName": "verdict_verdict", "parameters": {"ok": ok}}],
            **(trigger or {"schedule": "0 0 1 1 *"})}  # fires only when triggered (or on New Year)


async def test_an_engine_on_postgresql_registers_and_runs_a_skill(client: Client, settings: Settings,
                                                                  pg_url: str) -> None:
    engine = await Engine(settings.model_copy(update={"database_url": pg_url.replace("+psycopg", "")}),
                          client).start()
    try:
        skill = (await engine.skills.register({
            "name": "water", "instructions": "remind", "notify_on_completion": False, "schedule": "0 0 1 1 *",
            "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "Drink water!"}}]})).skill
        assert skill is not None and skill.schedule_id is not None
        await trigger_schedule(client, skill.schedule_id)
        assert [m["message"] for m in await eventually(engine.outbox)] == ["Drink water!"]
        store = Store.open(pg_url)
        runs = await eventually(lambda: [r for r in store.runs.list_runs(skill.id) if r.status != "running"])
        assert [(r.status, r.trigger) for r in runs] == [("success", "schedule")]
    finally:
        await engine.stop()
    assert migrations.current(store.engine) == migrations.head()


async def pollers(client: Client, queue: str) -> int:
    request = DescribeTaskQueueRequest(namespace=client.namespace, task_queue=TaskQueue(name=queue),
                                       task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY)
    return len((await client.workflow_service.describe_task_queue(request)).pollers)


async def executions(client: Client, query: str) -> list[str]:
    return [w.id async for w in client.list_workflows(query)]


async def test_three_workers_on_one_store_record_each_fire_once(client: Client, settings: Settings,
                                                                 pg_url: str, tmp_path: Path) -> None:
    queue = settings.task_queue
    settings = settings.model_copy(update={"mcp_config": write_mcp_config(tmp_path / "mcp.json", {
        "verdict": {"command": sys.executable, "args": [str(VERDICT)]}})})
    # A maintenance round every 10 s: the test counts one workflow per action, which any two actions show, and
    # the test lasts a minute or two. At 2 s, the rounds (three workers, one PostgreSQL) were a quarter of its CPU.
    env = {"SKILLS_DATABASE_URL": pg_url, "SKILLS_FAILURE_LIMIT": "1000", "SKILLS_BACKOFF_STEPS": "0",
           "SKILLS_MAINTENANCE_INTERVAL": "10"}
    skills = SkillsClient(client, queue)
    address = client.service_client.config.target_host
    ports = [free_port() for _ in range(3)]
    # Three processes started at once on a new database: they create and migrate it together.
    with worker_process(settings, address, **env, SKILLS_HEALTH_PORT=str(ports[0])) as one, \
            worker_process(settings, address, **env, SKILLS_HEALTH_PORT=str(ports[1])) as two, \
            worker_process(settings, address, **env, SKILLS_HEALTH_PORT=str(ports[2])) as three:
        workers = (one, two, three)

        async def all_ready() -> bool:
            # Each polls and has its store (ready): a registration or a fire may land on any of them, and waits
            # there for the verdict server, which each worker connects when first needed (a first connect that
            # failed on this busy machine is tried again by the registration that needs it).
            for worker in workers:
                assert worker.process is not None and worker.process.poll() is None, worker.log.read_text()
            for port in ports:
                answer = await answers(port, "/readyz")
                if not answer or answer[0] != 200:
                    return False
            return await pollers(client, queue) >= 3

        await eventually(all_ready, timeout=180, interval=0.5)  # three processes starting on a busy machine

        fine = [(await skills.register(verdict_skill(f"fine-{i}", True))).skill for i in range(2)]
        failing = [(await skills.register(verdict_skill(f"failing-{i}", False))).skill for i in range(2)]
        shot = (await skills.register(verdict_skill("once", True, in_minutes=3 / 60))).skill
        scheduled = [s for s in fine + failing if s is not None]
        assert len(scheduled) == 4 and shot is not None

        async def fire_and_run(skill_ref: Any) -> None:
            for _ in range(3):  # scheduled fires, one after the other (the schedule skips overlaps)
                await trigger_schedule(client, skill_ref.schedule_id)
            # Manual runs of the same skill at once: their outcomes race on its failure counter.
            await asyncio.gather(*(skills.run(skill_ref.id, wait=False) for _ in range(4)))

        await asyncio.gather(*(fire_and_run(s) for s in scheduled))

        store = Store.open(pg_url)

        def finished() -> bool:
            runs = store.runs.list_runs(limit=1000)
            return (len([r for r in runs if r.skill_id != shot.id]) == 4 * 7 and len(runs) == 4 * 7 + 1
                    and all(r.status != "running" for r in runs))

        await eventually(finished, timeout=120, interval=0.5)
        runs = store.runs.list_runs(limit=1000)

        # One record per workflow execution, none twice.
        for skill in [*scheduled, shot]:
            mine = [r for r in runs if r.skill_id == skill.id]
            query = f"SkillName = '{skill.name}' AND TaskQueue = '{queue}'"
            count = len(mine)
            ids = await eventually(lambda q=query, n=count: _if_count(executions(client, q), n), timeout=30)
            assert sorted(ids) == sorted(r.workflow_id for r in mine)
            assert len({r.run_id for r in mine}) == len(mine)
            fires = [r.scheduled_at for r in mine if r.trigger == "schedule"]
            assert len(fires) == len(set(fires)) == (1 if skill.id == shot.id else 3)

        # Every failure counted, every success resets.
        for skill in failing:
            mine = [r for r in runs if r.skill_id == skill.id]
            assert Counter(r.status for r in mine) == {"error": 7}
            assert store.skills.get_skill(skill.id).consecutive_failures == 7
        for skill in fine:
            assert {r.status for r in runs if r.skill_id == skill.id} == {"success"}
            assert store.skills.get_skill(skill.id).consecutive_failures == 0

        # The one-shot fired once and retired once.
        once = store.skills.get_skill(shot.id)
        assert (once.enabled, once.disabled_reason, once.schedule_id) == (False, FIRED, None)
        assert not await schedule_exists(client, shot.schedule_id)

        # The maintenance round: one schedule, one workflow per action, whatever the replicas.
        maintenance = client.get_schedule_handle(engine_job_id(queue, "maintenance"))
        await eventually(lambda: _actions(maintenance, 2), timeout=60, interval=0.5)
        await maintenance.pause()  # a fixed number of actions to count against

        async def one_run_per_action() -> bool:
            actions = (await maintenance.describe()).info.num_actions
            listed = await executions(client, f"WorkflowType = 'Maintenance' AND TaskQueue = '{queue}'")
            return len(listed) == len(set(listed)) == actions

        await eventually(one_run_per_action, timeout=60, interval=0.5)
        for worker in workers:
            assert worker.process is not None and worker.process.poll() is None, worker.log.read_text()


async def _if_count(found: Any, count: int) -> list[str] | None:
    ids = await found
    return ids if len(ids) == count else None


async def _actions(handle: Any, at_least: int) -> bool:
    return (await handle.describe()).info.num_actions >= at_least
