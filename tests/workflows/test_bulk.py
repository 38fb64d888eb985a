"""Bulk registration (`skills register` of a list or a folder, SkillsClient.register_many): every item on
its own road, refused on its own by its position, nothing half-stored."""

from __future__ import annotations

from temporalio.client import Client

from skills.spec.limits import MAX_SKILL_BYTES
from tests.conftest import Engine, schedule_exists


def skill(name: str, **fields: object) -> dict[str, object]:
    return {"name": name, "instructions": "Remind me", "schedule": "0 9 * * *", "notify_on_completion": False,
            "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": name}}], **fields}


async def test_many_skills_are_registered_and_each_refusal_names_its_item(engine: Engine, client: Client) -> None:
    items: list[object] = [skill(f"bulk {i}") for i in range(25)]
    items[3] = skill("bulk bad tool", execution_plan=[{"toolName": "no_such_tool", "parameters": {}}])
    items[7] = skill("bulk 0")  # the name of item 0: the second is refused
    items[11] = "not a skill"
    items[19] = skill("bulk huge", instructions="x" * (MAX_SKILL_BYTES + 1))

    result = await engine.skills.register_many(items)

    assert [item.index for item in result.items] == list(range(25))
    assert [item.index for item in result.refused] == [3, 7, 11, 19]
    by_index = {item.index: item for item in result.items}
    assert "no_such_tool" in " ".join(e.message for e in by_index[3].errors)
    assert [e.field for e in by_index[7].errors] == ["name"]
    assert [e.field for e in by_index[11].errors] == ["item"]
    assert by_index[19].errors  # refused by the client, before any payload is sent

    stored = {s.name: s for s in await engine.skills.list()}
    assert sorted(stored) == sorted(item.name for item in result.registered)
    assert "bulk bad tool" not in stored and "bulk huge" not in stored
    for item in result.registered:
        assert item.skill_id == stored[item.name].id and item.next_fire is not None
        assert item.schedule_id == stored[item.name].schedule_id
        assert await schedule_exists(client, item.schedule_id)
