"""Mistakes refused at registration, not at fire time: through the client, a real worker and its
real MCP servers (the outbox), with nothing stored."""

from __future__ import annotations

import pytest
from temporalio.client import Client

from skills.errors import SkillValidationError
from tests.conftest import Engine, schedule_exists


def reminder(**fields: object) -> dict[str, object]:
    return {
        "name": "drink water",
        "instructions": "Remind the user to drink water",
        "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "Drink water!"}}],
        "notify_on_completion": False,
        **fields,
    }


async def refusal(engine: Engine, data: dict[str, object]) -> list[str]:
    with pytest.raises(SkillValidationError) as refused:
        await engine.skills.register(data)
    return [str(e) for e in refused.value.errors]


async def test_a_misspelt_field_is_refused_and_nothing_is_stored(engine: Engine, client: Client) -> None:
    assert await refusal(engine, reminder(shedule="0 9 * * *")) == [
        "shedule: unknown field; did you mean 'schedule'?"]
    assert await engine.skills.list() == []
    assert not await schedule_exists(client, f"{engine.settings.task_queue}-1-drink-water")


async def test_an_update_with_a_misspelt_field_changes_nothing(engine: Engine) -> None:
    await engine.skills.register(reminder(schedule="0 9 * * *"))
    with pytest.raises(SkillValidationError) as refused:
        await engine.skills.update("drink water", {"nmae": "tea"})
    assert [str(e) for e in refused.value.errors] == ["nmae: unknown field; did you mean 'name'?"]
    assert [s.name for s in await engine.skills.list()] == ["drink water"]


async def test_a_misspelt_time_zone_gets_the_close_name(engine: Engine) -> None:
    assert await refusal(engine, reminder(schedule="0 9 * * *", timezone="Europe/Pari")) == [
        "trigger_config.timezone: unknown time zone 'Europe/Pari'; did you mean 'Europe/Paris'?"]


async def test_plan_parameters_are_checked_against_the_live_tools_schema(engine: Engine) -> None:
    # Before, this registered and every fire failed with "missing required argument 'message'".
    plan = [{"toolName": "outbox_send_message", "parameters": {"msg": "hi"}}]
    assert await refusal(engine, reminder(schedule="0 9 * * *", execution_plan=plan)) == [
        "execution_plan[0] (outbox_send_message).parameters.msg: unknown parameter; did you mean 'message'?",
        "execution_plan[0] (outbox_send_message): missing required parameter 'message'",
    ]
    plan = [{"id": "list", "toolName": "outbox_list_messages", "parameters": {"limit": "a few"}}]
    assert await refusal(engine, reminder(execution_plan=plan)) == [
        "execution_plan[0] (outbox_list_messages).parameters.limit: 'a few' is not of type 'integer'"]
    assert await engine.skills.list() == []


async def test_what_a_call_would_accept_is_accepted(engine: Engine) -> None:
    # A number as text is coerced by the argument pipeline; a placeholder stands for any type.
    plan = [{"id": "list", "toolName": "outbox_list_messages", "parameters": {"limit": "3"}},
            {"id": "send", "toolName": "outbox_send_message",
             "parameters": {"message": "{{list.messages.0.message}}", "chat_id": "{{list.messages.0.chat_id}}"}}]
    result = await engine.skills.register(reminder(execution_plan=plan))
    assert result.skill is not None and result.skill.tier == "direct"


async def test_a_tool_not_in_the_catalog_keeps_waiting_disabled(engine: Engine) -> None:
    plan = [{"toolName": "weather_forecast", "parameters": {"anything": 1}}]
    result = await engine.skills.register(reminder(execution_plan=plan, enabled=False))
    assert result.skill is not None and result.skill.disabled_reason == "missing tools"
