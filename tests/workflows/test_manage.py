"""RegisterSkill's compensation: when the schedule cannot follow the store, the store is put back.

A schedule sync that fails for good cannot be caused for real on a healthy dev server, so
here (and only here) the schedule activities are a stand-in: it fails a workflow's first schedule
write and hands every later one (the compensation's re-sync) to the real code. Everything else is
the real worker's code against a real store and server.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager

import pytest
from temporalio import activity
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker

from activities.registration import RegistrationActivities
from activities.schedules import ScheduleActivities
from activities.store import StoreActivities
from adapters.schedules import ScheduleWriter
from adapters.store import Store
from client import SkillsClient
from config.settings import Settings
from skills.errors import SkillValidationError
from skills.messages.manage import PreviousSchedule, ScheduleSynced
from skills.spec.models import Skill
from tests.conftest import schedule_exists
from tests.fakes.tools import FixedTools
from workflows.manage import ChangeSkill, RegisterSkill

REFUSAL = "the frontend refused the schedule"


class FailingFirstSync(ScheduleActivities):
    """Schedule activities whose first schedule write of each workflow fails, and the rest are the real ones."""

    def __init__(self, client: Client, settings: Settings, store: Store) -> None:
        super().__init__(ScheduleWriter(client), settings, store)
        self.failed: set[str] = set()

    async def follow(self, skill: Skill | None, previous: PreviousSchedule | None) -> ScheduleSynced:
        workflow_id = activity.info().workflow_id or ""
        if workflow_id not in self.failed:
            self.failed.add(workflow_id)
            raise ApplicationError(REFUSAL, non_retryable=True)
        return await super().follow(skill, previous)


@pytest.fixture
async def store(settings: Settings) -> Store:
    return Store.open(settings.store_url, schedule_prefix=settings.task_queue)


def _activities(settings: Settings, store: Store, schedules: ScheduleActivities) -> list[object]:
    registration = RegistrationActivities(store, settings, FixedTools(["outbox_send_message"]), schedules=schedules)
    reads = StoreActivities(store, settings.backoff)
    return [registration.register_skill, registration.set_skill_enabled, registration.delete_skill,
            reads.get_skill, reads.list_skills, schedules.delete_schedule, schedules.sync_schedule]


@asynccontextmanager
async def _worker(client: Client, settings: Settings, activities: list[object]) -> AsyncIterator[None]:
    with ThreadPoolExecutor(max_workers=4) as executor:
        async with Worker(client, task_queue=settings.task_queue, workflows=[RegisterSkill, ChangeSkill],
                          activities=activities, activity_executor=executor):
            yield


def _skill(name: str, **fields: object) -> dict[str, object]:
    return {"name": name, "instructions": "Remind me", "schedule": "0 9 * * *",
            "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "hi"}}], **fields}


async def test_a_new_skill_whose_schedule_fails_is_not_stored(client: Client, settings: Settings,
                                                              store: Store) -> None:
    skills = SkillsClient(client, settings.task_queue)
    async with _worker(client, settings, _activities(settings, store, FailingFirstSync(client, settings, store))):
        with pytest.raises(SkillValidationError) as refused:
            await skills.register(_skill(f"water {uuid.uuid4().hex[:6]}"))
        assert [e.field for e in refused.value.errors] == ["schedule"]
        assert REFUSAL in refused.value.errors[0].message
        assert await skills.list() == []  # the undo removed the row the save had written


async def test_a_failed_update_puts_the_stored_skill_and_its_schedule_back(client: Client, settings: Settings,
                                                                           store: Store) -> None:
    real = ScheduleActivities(ScheduleWriter(client), settings, store)
    skills = SkillsClient(client, settings.task_queue)
    async with _worker(client, settings, _activities(settings, store, real)):
        before = (await skills.register(_skill("tea"))).skill
    assert before is not None and before.schedule_id is not None

    async with _worker(client, settings, _activities(settings, store, FailingFirstSync(client, settings, store))):
        with pytest.raises(SkillValidationError) as refused:
            # A rename moves the schedule to a new id: the failed sync must leave the old one in place.
            await skills.update("tea", {"name": "green tea", "schedule": "30 7 * * *"})
        assert REFUSAL in refused.value.errors[0].message
        after = await skills.get(before.id)
    assert (after.name, after.trigger_config, after.schedule_id) == (
        before.name, before.trigger_config, before.schedule_id)
    assert after.updated_at == before.updated_at
    assert await schedule_exists(client, before.schedule_id)
    memo = await (await client.get_schedule_handle(before.schedule_id).describe()).memo_value("trigger")
    assert memo == {"schedule": "0 9 * * *"}
