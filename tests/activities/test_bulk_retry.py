"""A registration run again after a lost attempt: what the lost attempt stored after its last heartbeat (a bulk one)
got through are its own, not names another skill took.

At a load of 32, `register_many` came back with "already has a skill named 'bench rss 0'": the batch activity's
first attempt stored items, missed its heartbeat timeout, and the retry began again from the items its last
delivered heartbeat listed."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from temporalio.client import Client
from temporalio.testing import ActivityEnvironment

from activities.registration import RegistrationActivities
from activities.schedules import ScheduleActivities
from adapters.schedules import ScheduleWriter
from adapters.store import Store
from config.settings import Settings
from skills.messages.manage import RegisterInput, RegisterManyInput
from tests.conftest import schedule_exists
from tests.fakes.tools import FixedTools


def skill(name: str, message: str = "hi") -> dict[str, object]:
    return {"name": name, "instructions": "Remind me", "schedule": "0 9 * * *", "notify_on_completion": False,
            "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": message}}]}


def retry(heartbeat: list[object], scheduled: datetime) -> ActivityEnvironment:
    """The environment of the activity's second attempt, with what the first's last delivered heartbeat said."""
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, attempt=2, heartbeat_details=[heartbeat], scheduled_time=scheduled)
    return env


async def test_a_retried_batch_keeps_what_its_lost_attempt_stored_and_refuses_what_others_did(
        client: Client, settings: Settings) -> None:
    store = Store.open(settings.store_url, schedule_prefix=settings.task_queue)
    registration = RegistrationActivities(store, settings, FixedTools(["outbox_send_message"]),
                                          schedules=ScheduleActivities(ScheduleWriter(client), settings, store))
    now = datetime.now(UTC)
    # Stored an hour before the batch was asked for, with the definition the batch's item 3 has.
    prepared = registration.prepare_skill(RegisterInput(data=skill("owned"))).normalized
    assert prepared is not None
    owned = store.skills.create_skill(prepared.spec, trigger_as_written=None, disabled_reason=None,
                                      now=now - timedelta(hours=1))
    scheduled = now - timedelta(minutes=1)  # when the batch's activity was first scheduled

    batch = RegisterManyInput(items=[skill("lost 0"), skill("lost 1"), skill("lost 2"), skill("owned")], by="me")
    first = await ActivityEnvironment().run(registration.register_skills, batch.model_copy(update={"items": batch.items[:3]}))
    assert all(item.ok for item in first.items)
    # Its answer was lost, and its last heartbeat to get through listed item 0 alone.
    answer = await retry([first.items[0].model_dump(mode="json")], scheduled).run(registration.register_skills, batch)

    assert [(i.index, i.ok) for i in answer.items] == [(0, True), (1, True), (2, True), (3, False)], answer.items
    assert [i.skill_id for i in answer.items[:3]] == [i.skill_id for i in first.items]
    assert [e.field for e in answer.items[3].errors] == ["name"]  # 'owned' was another's: refused, as before
    assert sorted(s.name for s in store.skills.list_skills()) == ["lost 0", "lost 1", "lost 2", "owned"]
    for item in answer.items[:3]:
        assert item.schedule_id is not None and await schedule_exists(client, item.schedule_id)
    assert owned.id == store.skills.find_skill("owned").id

    # A name taken by a skill of another definition is refused on a retry too.
    other = await retry([], scheduled).run(
        registration.register_skills, RegisterManyInput(items=[skill("lost 1", message="something else")]))
    assert [(i.ok, [e.field for e in i.errors]) for i in other.items] == [(False, ["name"])]


async def test_a_registration_run_again_after_its_answer_was_lost_is_its_own_and_another_name_is_refused(
        client: Client, settings: Settings) -> None:
    # RegisterSkill's one local activity is run again with its workflow task when the worker died after the save
    # and before the task completed: the name is taken, by this registration's own skill.
    store = Store.open(settings.store_url, schedule_prefix=settings.task_queue)
    registration = RegistrationActivities(store, settings, FixedTools(["outbox_send_message"]),
                                          schedules=ScheduleActivities(ScheduleWriter(client), settings, store))
    asked = RegisterInput(data=skill("water"), by="me", asked_at=datetime.now(UTC) - timedelta(seconds=1))
    first = await ActivityEnvironment().run(registration.register_skill, asked)
    assert first.result.ok and first.result.skill is not None

    again = await ActivityEnvironment().run(registration.register_skill, asked)

    assert again.result.ok, again.result.errors
    assert again.result.skill is not None and again.result.skill.id == first.result.skill.id
    assert again.result.skill.schedule_id and await schedule_exists(client, again.result.skill.schedule_id)
    assert [s.name for s in store.skills.list_skills()] == ["water"]
    # Another registration of the name is refused as before: one asked after the skill was stored, one of
    # another definition, and one with no start (a client's own activity, or the workflow before this change).
    for refused in (asked.model_copy(update={"asked_at": first.result.skill.created_at + timedelta(minutes=1)}),
                    asked.model_copy(update={"data": skill("water", message="something else")}),
                    asked.model_copy(update={"asked_at": None})):
        answer = await ActivityEnvironment().run(registration.register_skill, refused)
        assert not answer.result.ok and [e.field for e in answer.result.errors] == ["name"], refused
    assert [s.name for s in store.skills.list_skills()] == ["water"]
