"""Mistakes refused at registration, not at fire time: through the client, a real worker and its
real MCP servers (the outbox), with nothing stored."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from temporalio.client import Client

from client.management import ManagementTools, answering
from config.settings import Settings
from skills.errors import McpConfigError, SkillNotFoundError, SkillValidationError
from skills.spec.limits import MIB
from tests.conftest import PYTHON, ROOT, Engine, eventually, schedule_exists
from tests.fakes.llm_server import ScriptedLLM, say


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


async def test_a_skill_read_back_as_skills_get_shows_it_can_be_sent_again(engine: Engine) -> None:
    await engine.skills.register(reminder(schedule="0 9 * * *"))
    skill = await engine.skills.get("drink water")
    shown = {**skill.model_dump(mode="json", by_alias=True), "tier": skill.tier, "next_fire": None}
    result = await engine.skills.update("drink water", shown)
    assert any(note == "ignored 'schedule_id': it is kept by the engine, not given" for note in result.notes)
    assert result.skill is not None and result.skill.id == skill.id


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


# --- limits ------------------------------------------------------------------------------------


@pytest.mark.parametrize("megabytes", [3, 10])
async def test_an_oversize_body_is_refused_before_it_reaches_temporal(engine: Engine, client: Client,
                                                                      megabytes: int) -> None:
    # Before: "Blob data size exceeds limit" (2-3 MB) or a raw RPCError "larger than max 4194304" (10 MB).
    big = "a" * megabytes * MIB
    for attempt in (lambda: engine.skills.register(reminder(instructions=big)),
                    lambda: engine.skills.update("drink water", {"description": big})):
        with pytest.raises(SkillValidationError) as refused:
            await attempt()
        [error] = refused.value.errors
        assert error.field == "" and error.message.startswith("the skill is ")
        assert error.message.endswith("bytes as JSON; the limit is 1.5 MiB (1,572,864 bytes)")

    # Nothing was started: once a later registration is visible, it is the only one.
    await engine.skills.register(reminder())
    query = f"WorkflowType = 'RegisterSkill' AND TaskQueue = '{engine.settings.task_queue}'"

    async def started() -> list[str]:
        return [w.id async for w in client.list_workflows(query)]

    assert len(await eventually(started, timeout=30)) == 1


async def test_instructions_over_their_limit_are_refused_by_the_registration(engine: Engine) -> None:
    # Within the whole body's limit, so it reaches the worker, whose normalizer names the field.
    assert await refusal(engine, reminder(instructions="a" * (MIB + 1))) == [
        "instructions: is 1,048,577 bytes in UTF-8; the limit is 1 MiB (1,048,576 bytes)"]
    assert await engine.skills.list() == []


async def test_oversize_input_over_mcp_is_a_refusal_of_the_input(engine: Engine) -> None:
    store = answering("memory_store_skill", ManagementTools(engine.skills).memory_store_skill)
    result = await store(reminder(instructions="a" * 3 * MIB))
    said = "\n".join(block.text for block in result.content if block.type == "text")
    assert result.is_error and said.startswith("Refused; nothing was changed.")
    assert "the limit is 1.5 MiB" in said and "not a problem with the input" not in said


async def test_a_big_skill_within_the_limits_leaves_stdout_to_the_answer(engine: Engine, tmp_path: Path) -> None:
    # Over the SDK's 512 KiB warning size: its core printed [TMPRL1103] on stdout, breaking `--json`.
    script = tmp_path / "register.py"
    # It ends as the `skills` commands do (run_then_exit): a client left open at the interpreter's teardown
    # aborted it, now and then, with "Fatal Python error: PyGILState_Release" (temporalio/sdk-python#300).
    script.write_text(
        "import sys\n"
        "from client import SkillsClient, connect\n"
        "from starter import run_then_exit\n"
        "async def main():\n"
        "    skills = SkillsClient(await connect(sys.argv[1], sys.argv[2]), sys.argv[3])\n"
        "    result = await skills.register({'name': 'big', 'instructions': 'a' * 700_000})\n"
        "    print(result.model_dump_json(include={'ok'}))\n"
        "run_then_exit(main())\n"
    )
    temporal = engine.skills.client
    done = await asyncio.create_subprocess_exec(
        PYTHON, str(script), temporal.service_client.config.target_host, temporal.namespace,
        engine.settings.task_queue, cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(done.communicate(), timeout=120)
    assert done.returncode == 0, err.decode()
    assert json.loads(out) == {"ok": True}, out.decode()


# --- numbers and nesting: every value bounded, refused with its field ---------------------------


async def test_a_huge_notify_interval_is_refused_by_the_worker_and_nothing_is_stored(engine: Engine) -> None:
    # Before: registered (exit 0); the first fire raised OverflowError in SkillRun's workflow code,
    # retried the workflow task for ever and made the schedule skip every later fire.
    assert await refusal(engine, reminder(schedule="0 9 * * *", notify_interval_minutes=2_000_000_000_000)) == [
        "notify_interval_minutes: must be between 0 and 525600 (got 2000000000000)"]
    assert await refusal(engine, reminder(interval_minutes=10**15)) == [
        "trigger_config.interval_minutes: must be between 1 and 525600 (got 1000000000000000)"]
    assert await engine.skills.list() == []
    # The same through the management tools a model calls, whose schema says the same range.
    store = answering("memory_store_skill", ManagementTools(engine.skills).memory_store_skill)
    result = await store(reminder(schedule="0 9 * * *", notify_interval_minutes=2_000_000_000_000))
    said = "\n".join(block.text for block in result.content if block.type == "text")
    assert result.is_error and "notify_interval_minutes: must be between 0 and 525600" in said


async def test_deeply_nested_json_in_a_registration_is_a_field_error(engine: Engine) -> None:
    # Before: RecursionError in the registration activity, retried, with no field named.
    deep = "[" * 50_000 + "]" * 50_000
    plan = [{"toolName": "outbox_send_message", "parameters": deep}]
    assert await refusal(engine, reminder(execution_plan=plan)) == [
        "execution_plan[0].parameters: is JSON nested more than 32 levels deep; at most 32 are allowed"]
    nested: object = "x"
    for _ in range(5_000):
        nested = [nested]
    [error] = await refusal(engine, reminder(execution_plan=[
        {"toolName": "outbox_send_message", "parameters": {"message": "hi", "extra": nested}}]))
    assert error == "the skill nests lists and objects more than 32 levels deep; at most 32 are allowed"
    assert await engine.skills.list() == []


async def test_text_no_payload_can_carry_is_a_field_error_and_a_message_with_it_is_answered(
        engine: Engine) -> None:
    # Found by the fuzz suite. Before: the client raised pydantic's "surrogates not allowed" while writing
    # the workflow's input, naming no field; a chat message with one (a JSON "\udcff" escape decodes to
    # it) never reached the assistant.
    assert await refusal(engine, reminder(instructions="drink \udcff water")) == [
        "instructions: is not valid Unicode: a lone surrogate ('\\udcff') at character 6"]
    with pytest.raises(SkillValidationError, match=r"data\.where\.0: is not valid Unicode"):
        await engine.skills.emit("parcel.arrived", {"where": ["porch \ud800"]})
    assert await engine.skills.list() == []


async def test_a_time_zone_too_long_for_a_file_name_is_refused_at_once(engine: Engine) -> None:
    # Found by the fuzz suite. Before: ZoneInfo read the name as a file and raised OSError (file name too
    # long), which the normalizer did not expect: prepare_skill failed ten times and the client gave up
    # after 120 s without a word about the field.
    for zone in ("{{" * 20_000, "Europe/" + "x" * 300):
        errors = await asyncio.wait_for(refusal(engine, reminder(schedule="0 9 * * *", timezone=zone)), 60)
        assert errors == [f"trigger_config.timezone: is {len(zone):,} characters; a time zone name has at most 64 "
                          "(use an IANA name such as America/New_York)"]
    assert await engine.skills.list() == []


async def test_an_agent_id_too_long_for_a_search_attribute_is_refused(engine: Engine) -> None:
    # Found by the fuzz suite. Before: a 40 KB agent id registered (an event skill has no schedule to fail),
    # and then every run failed to start: Temporal caps the SkillAgent search attribute at 2,048 bytes.
    assert await refusal(engine, reminder(agent_id="a" * 40_000, trigger_config={"event": "parcel.arrived"})) == [
        "agent_id: is 40,000 characters long; the limit is 100"]
    assert await engine.skills.list() == []


async def test_a_message_with_a_lone_surrogate_is_answered(assistant: Engine, llm: ScriptedLLM) -> None:
    # Nothing to refuse in a person's message: the bad character becomes U+FFFD and the turn goes on.
    llm.script("chat", [say("Hello to you.")])
    reply = await assistant.skills.chat("hello \udcff there", session_id="surrogates")
    assert reply.ok and reply.reply == "Hello to you."
    [asked] = llm.requests_for("chat")
    assert asked.messages[-1]["content"].endswith("hello \ufffd there")


async def test_a_skill_id_past_a_database_integer_is_not_found(engine: Engine) -> None:
    # Before: SQLite's OverflowError failed the read activity, retried until the client gave up.
    for ref in ("9" * 30, "18446744073709551616", "²"):
        with pytest.raises(SkillNotFoundError):
            await engine.skills.get(ref)


async def test_a_placeholder_bomb_registers_in_bounded_time(engine: Engine) -> None:
    # Before: ~12 s of the worker's CPU at 40 KB of "{{", minutes at the plan limit, per registration.
    started = asyncio.get_running_loop().time()
    plan = [{"toolName": "outbox_send_message", "parameters": {"message": "{{" * 100_000}}]
    result = await engine.skills.register(reminder(execution_plan=plan))
    assert result.skill is not None and result.skill.tier == "direct"
    assert asyncio.get_running_loop().time() - started < 30  # a hang guard, with a worker round trip in it


# --- YAML the worker reads -------------------------------------------------------------------


async def test_a_worker_refuses_an_argument_rules_file_that_is_an_alias_bomb(client: Client, settings: Settings,
                                                                            tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("hallucinated:\n" + "".join(
        f"  {name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
        for prev, name in zip(["", *"abcdefgh"], "abcdefghi", strict=True)))
    with pytest.raises(McpConfigError) as refused:
        await Engine(settings.model_copy(update={"argument_rules": rules}), client).start()
    assert str(refused.value).startswith(f"{rules}: YAML aliases (*name) would expand the document by ")
