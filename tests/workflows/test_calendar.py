"""Business days and holidays on a real worker and server: a skill that skips them gets a schedule whose
fires are exactly the ones `skills next` lists, and Maintenance renews its skip list before it runs out."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from temporalio.client import Client, ScheduleUpdate, ScheduleUpdateInput

from adapters.store import Store
from skills.errors import SkillValidationError
from skills.when.calendar import SKIP_HORIZON
from tests.conftest import Engine

SKIPPED = "skipped days: "


def standup(**fields: Any) -> dict[str, Any]:
    return {"name": f"standup {uuid.uuid4().hex[:6]}", "instructions": "Post the standup reminder",
            "trigger_config": {"schedule": "0 9 * * *", "timezone": "America/New_York"},
            "skip_holidays": "US", "business_days_only": True,
            "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "Standup!"}}],
            **fields}


async def server_fires(client: Client, schedule_id: str) -> list[datetime]:
    return [t.astimezone(UTC) for t in (await client.get_schedule_handle(schedule_id).describe()).info.next_action_times]


def as_started(server: list[datetime], listed: list[datetime], spread_seconds: int) -> bool:
    """The server's next start times are the listed fires, each up to the spread after its own (Temporal draws
    the jitter; `skills next` lists the schedule's times): exactly them when there is no spread."""
    spread = timedelta(seconds=spread_seconds)
    return len(server) == len(listed) and all(at <= got <= at + spread for got, at in zip(server, listed, strict=True))


async def skip_comments(client: Client, schedule_id: str) -> list[str]:
    spec = (await client.get_schedule_handle(schedule_id).describe()).schedule.spec
    return [c.comment for c in spec.skip if c.comment.startswith(SKIPPED)]


async def test_skills_next_lists_the_fires_the_server_will_start(engine: Engine, client: Client) -> None:
    result = await engine.skills.register(standup())
    skill = result.skill
    assert skill is not None and skill.schedule_id is not None
    assert (skill.skip_holidays, skill.business_days_only) == ("US", True)

    found = await engine.skills.next(skill.name, count=10)
    fires = [fire.at.astimezone(UTC) for fire in found.fires if fire.skipped is None]
    # A new reminder (a Direct plan) is not spread: the server starts each listed fire at its exact time.
    assert len(fires) == 10 and found.spread_seconds == 0
    assert as_started(await server_fires(client, skill.schedule_id), fires, found.spread_seconds)
    # Ten daily fires span a weekend at least: the schedule really skips, and the answer says so.
    assert any(fire.skipped == "weekend" for fire in found.fires)
    assert all(fire.at.utcoffset() == fire.at.astimezone(found.fires[0].at.tzinfo).utcoffset() for fire in found.fires)
    assert found.timezone == "America/New_York" and result.next_fire == fires[0]

    stored = await engine.skills.get(skill.id)
    assert stored.skips_until is not None
    assert abs(stored.skips_until - (datetime.now(UTC) + SKIP_HORIZON)) < timedelta(days=3)
    assert len(await skip_comments(client, skill.schedule_id)) >= 13  # a calendar per month, 13 months and more


async def test_a_country_the_package_does_not_know_is_refused(engine: Engine) -> None:
    with pytest.raises(SkillValidationError) as caught:
        await engine.skills.register(standup(skip_holidays="Atlantis"))
    assert [e.field for e in caught.value.errors] == ["skip_holidays"]
    assert caught.value.errors[0].message.startswith("unknown country 'Atlantis'")
    assert await engine.skills.list() == []


async def test_maintenance_renews_a_skip_list_that_runs_out(engine: Engine, client: Client) -> None:
    skill = (await engine.skills.register(standup())).skill
    assert skill is not None and skill.schedule_id is not None
    # Thirteen months later, as far as the store and the schedule can tell: the list ends in a week.
    store = Store.open(engine.settings.store_url, schedule_prefix=engine.settings.task_queue)
    store.skills.set_skips_until(skill.id, datetime.now(UTC) + timedelta(days=7))

    def without_skips(current: ScheduleUpdateInput) -> ScheduleUpdate:
        spec = current.description.schedule.spec
        current.description.schedule.spec = dataclasses.replace(
            spec, skip=[c for c in spec.skip if not c.comment.startswith(SKIPPED)])
        return ScheduleUpdate(schedule=current.description.schedule)

    await client.get_schedule_handle(skill.schedule_id).update(without_skips)
    assert await skip_comments(client, skill.schedule_id) == []

    report = await client.execute_workflow("Maintenance", id=f"maintenance-{uuid.uuid4().hex[:8]}",
                                           task_queue=engine.settings.task_queue)
    assert report["skips_renewed"] == [skill.name]
    assert len(await skip_comments(client, skill.schedule_id)) >= 13
    renewed = store.skills.get_skill(skill.id)
    assert renewed.skips_until is not None and renewed.skips_until > datetime.now(UTC) + timedelta(days=390)
    found = await engine.skills.next(skill.id, count=10)
    assert as_started(await server_fires(client, skill.schedule_id),
                      [fire.at.astimezone(UTC) for fire in found.fires if fire.skipped is None], found.spread_seconds)
    # Renewed, it is not due again: the next round leaves it alone.
    again = await client.execute_workflow("Maintenance", id=f"maintenance-{uuid.uuid4().hex[:8]}",
                                          task_queue=engine.settings.task_queue)
    assert again["skips_renewed"] == []


async def test_an_update_that_stops_skipping_clears_the_list(engine: Engine, client: Client) -> None:
    skill = (await engine.skills.register(standup())).skill
    assert skill is not None and skill.schedule_id is not None
    updated = (await engine.skills.update(skill.id, {"skip_holidays": None, "business_days_only": False})).skill
    assert updated is not None and (updated.skip_holidays, updated.business_days_only) == (None, False)
    assert await skip_comments(client, skill.schedule_id) == []
    assert (await engine.skills.get(skill.id)).skips_until is None
    found = await engine.skills.next(skill.id, count=10)
    assert all(fire.skipped is None for fire in found.fires)
    assert as_started(await server_fires(client, skill.schedule_id), [fire.at.astimezone(UTC) for fire in found.fires],
                      found.spread_seconds)
