"""History and undo on a real worker: every change keeps a revision saying who made it, and a revert
restores a revision's definition through the road of every update, schedule included."""

from __future__ import annotations

import pytest
from temporalio.client import Client

from client import SkillsClient
from skills.errors import SkillNotFoundError
from tests.conftest import Engine, schedule_exists


def _skill(name: str, cron: str) -> dict[str, object]:
    return {"name": name, "instructions": "Remind me to stretch", "schedule": cron,
            "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "stretch"}}]}


async def _hours(client: Client, schedule_id: str) -> set[int]:
    """The hours the schedule fires at (Temporal describes a cron as calendars)."""
    schedule = (await client.get_schedule_handle(schedule_id).describe()).schedule
    return {hour for calendar in schedule.spec.calendars for r in calendar.hour
            for hour in range(r.start, (r.end or r.start) + 1, r.step or 1)}


async def test_history_lists_every_change_and_a_revert_restores_the_old_schedule(engine: Engine,
                                                                                 client: Client) -> None:
    cli = SkillsClient(client, engine.settings.task_queue, by="cli")
    mcp = SkillsClient(client, engine.settings.task_queue, by="mcp")
    skill = (await cli.register(_skill("stretch", "0 9 * * *"))).skill
    assert skill is not None and skill.schedule_id is not None
    await mcp.update("stretch", {"schedule": "30 17 * * 1-5", "max_steps": 4})
    await cli.pause("stretch")
    assert await _hours(client, skill.schedule_id) == {17}

    history = await cli.history("stretch")
    assert [(r.rev, r.action, r.by) for r in history] == [(3, "updated", "cli"), (2, "updated", "mcp"),
                                                          (1, "created", "cli")]
    assert [c.field for c in history[0].diff] == ["enabled"]
    assert {"trigger_config", "max_steps"} <= {c.field for c in history[1].diff}

    reverted = await mcp.revert("stretch", 1)
    assert reverted.ok and reverted.skill is not None and reverted.skill.id == skill.id
    assert reverted.skill.enabled and reverted.skill.max_steps == 10 and reverted.next_fire is not None
    assert reverted.next_fire.minute == 0  # the 9 o'clock schedule again, resumed as revision 1 was
    assert await _hours(client, skill.schedule_id) == {9}
    [newest, *_] = await cli.history(skill.id)
    assert (newest.rev, newest.action, newest.by) == (4, "reverted", "mcp")

    # A deleted skill's history stays, and a revert registers it again.
    await cli.delete("stretch")
    assert not await schedule_exists(client, skill.schedule_id)
    assert (await cli.history("stretch"))[0].action == "deleted"
    again = await cli.revert("stretch", 2)
    assert again.ok and again.skill is not None and again.skill.id != skill.id
    assert again.skill.max_steps == 4 and again.skill.schedule_id is not None
    assert [(r.rev, r.action) for r in await cli.history("stretch")] == [(1, "reverted")]
    with pytest.raises(SkillNotFoundError):
        await cli.revert("stretch", 7)
