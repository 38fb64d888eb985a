"""Which chat changes wait for the owner's yes, and what a plain yes is."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from skills.chat.proposals import applied_fields, next_fires, plain_answer, spec_digest, widening
from skills.spec.models import PlanStep, SkillSpec, TriggerConfig

AGENT = SkillSpec(agent_id="a", name="n", trigger_type="cron", instructions="Remind me",
                  trigger_config=TriggerConfig(schedule="0 9 * * *", timezone="UTC"),
                  required_tools=["outbox_send_message", "outbox_list_messages"])
DIRECT = AGENT.model_copy(update={"required_tools": ["outbox_send_message"], "execution_plan": [
    PlanStep(id="a", tool_name="outbox_send_message", parameters={"message": "hi"}),
    PlanStep(id="b", tool_name="outbox_send_message", parameters={"message": "again"})]})


@pytest.mark.parametrize("text", ["yes", "Yes!", "  ok. ", "Y", "do it", "Do  it!", "confirm", "👍", "OKAY"])
def test_plain_yes(text: str) -> None:
    assert plain_answer(text) is True


@pytest.mark.parametrize("text", ["no", "No.", "cancel", "don't", "nope"])
def test_plain_no(text: str) -> None:
    assert plain_answer(text) is False


@pytest.mark.parametrize("text", ["yes, but at 10", "I said yes", "yes yes yes yes yes yes yes", "ok and delete all",
                                  "", "   ", "y" * 500, "the user said yes", "yes\nalso emit ping"])
def test_anything_longer_is_a_message(text: str) -> None:
    assert plain_answer(text) is None


def change(before: SkillSpec, **update: object) -> list[str]:
    return widening(before, before.model_copy(update=update))


def test_what_widens() -> None:
    assert change(AGENT, required_tools=[*AGENT.required_tools, "webhook_post"]) == ["adds tools: webhook_post"]
    assert change(DIRECT, execution_plan=None, required_tools=["outbox_send_message"]) == \
        ["moves it to the Agent tier (an LLM decides what to call)"]
    assert change(AGENT.model_copy(update={"enabled": False}), enabled=True) == ["enables it"]
    assert change(AGENT, instructions="Send my mail away") == ["changes the instructions its LLM follows"]
    assert change(DIRECT, execution_plan=[PlanStep(id="a", tool_name="outbox_send_message",
                                                   parameters={"message": "hi", "chat_id": "evil"})]) == \
        ["changes what its plan calls"]
    assert change(AGENT.model_copy(update={"approval_required_tools": ["outbox_send_message"]}),
                  approval_required_tools=[]) == ["no longer asks approval for: outbox_send_message"]
    assert change(AGENT, model="big") == ["changes its model to big"]
    # An exemption lets a destructive tool run unattended: the owner confirms it, as a released approval.
    assert change(AGENT, approval_exempt_tools=["outbox_send_message"]) == [
        "runs tools marked destructive without asking: outbox_send_message"]


def test_what_narrows_or_leaves_what_runs_alone() -> None:
    assert change(AGENT, enabled=False) == []
    assert change(AGENT, required_tools=["outbox_send_message"]) == []
    assert change(AGENT, name="other", description="d", trigger_config=TriggerConfig(schedule="* * * * *",
                                                                                     timezone="UTC")) == []
    assert change(DIRECT, execution_plan=DIRECT.execution_plan[1:]) == []  # a step left out
    assert change(DIRECT, instructions="what the Direct tier never reads") == []
    assert change(AGENT.model_copy(update={"approval_exempt_tools": ["outbox_send_message"]}),
                  approval_exempt_tools=[]) == []  # asking again narrows


def test_applied_fields_store_exactly_the_spec() -> None:
    data = applied_fields(AGENT)
    assert data["execution_plan"] is None and data["name"] == "n"  # an update to Agent drops the old plan
    assert spec_digest(AGENT) == spec_digest(SkillSpec.model_validate(AGENT.model_dump()))
    assert spec_digest(AGENT) != spec_digest(AGENT.model_copy(update={"instructions": "x"}))


def test_next_fires() -> None:
    now = datetime(2026, 11, 24, 8, 0, tzinfo=UTC)
    assert [f.at.hour for f in next_fires(AGENT, now)] == [9, 9, 9]
    assert next_fires(AGENT.model_copy(update={"enabled": False}), now) == []
    # What the owner is shown is what the schedule will do: its skipped days marked, nothing past its end.
    weekdays = next_fires(AGENT.model_copy(update={"business_days_only": True}), datetime(2026, 11, 27, 8, 0, tzinfo=UTC))
    assert [(f.at.day, f.skipped) for f in weekdays] == [(27, None), (28, "weekend"), (29, "weekend"), (30, None),
                                                          (1, None)]
    assert len(next_fires(AGENT.model_copy(update={"max_runs": 2}), now)) == 2
    ending = AGENT.model_copy(update={"end_at": datetime(2026, 11, 25, 12, 0, tzinfo=UTC)})
    assert [f.at.day for f in next_fires(ending, now)] == [24, 25]


def test_every_reach_field_widens_unless_it_narrows() -> None:
    from skills.run.preflight import PreflightCheck
    from skills.spec.models import Destination

    out = Destination(tool="exfil_send", arguments={"to": "x@evil.example"})
    assert change(AGENT, deliver_to=[out]) == ["changes deliver_to: exfil_send to=x@evil.example"]
    assert change(AGENT.model_copy(update={"deliver_to": [out]}), deliver_to=[]) == []
    assert change(AGENT, context_from=["drink-water"]) == ["changes context_from: reads drink-water"]
    assert change(AGENT.model_copy(update={"context_from": ["a", "b"]}), context_from=["a"]) == []
    check = PreflightCheck(tool="outbox_list_messages", arguments={"limit": 1})
    assert change(AGENT, preflight=[check]) != []
    assert change(AGENT.model_copy(update={"preflight": [check]}), preflight=[]) == []
    assert change(AGENT, fallback_models=["other"]) != []
    assert change(AGENT, agent_id="someone-else") != []
    assert change(AGENT.model_copy(update={"deliver": "never"}), deliver="always") != []
    assert change(AGENT, deliver="never") == []
    assert change(AGENT, max_tokens_per_month=1000) == []
    assert change(AGENT.model_copy(update={"max_tokens_per_month": 1000}), max_tokens_per_month=None) != []
    event = AGENT.model_copy(update={"trigger_type": "event", "trigger_config": TriggerConfig(event="mail")})
    assert change(AGENT, trigger_type="event", trigger_config=TriggerConfig(event="mail")) != []
    assert change(event, trigger_config=TriggerConfig(event="other")) != []
    # Direct to Agent is said once, not again as a changed plan or new instructions.
    assert change(DIRECT, execution_plan=None, instructions="new") == [
        "moves it to the Agent tier (an LLM decides what to call)"]
