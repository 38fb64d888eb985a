"""Event triggers in pure code: the normalizer's event form, {{event.…}} in plans, an emit's checks."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from skills.errors import PlanError, SkillValidationError
from skills.llm.agent import opening_messages
from skills.run.plans import analyse_plan, resolve
from skills.spec.models import Skill
from skills.spec.normalize import NormalizeContext, normalize
from skills.when.events import EventInfo, check_event, event_workflow_id

NOW = datetime(2026, 2, 14, 15, 0, tzinfo=UTC)
CTX = NormalizeContext(now=NOW, default_timezone="Europe/Paris", default_agent_id="thinker",
                       tool_catalog={"outbox_send_message"})
SEND = [{"id": "send", "toolName": "outbox_send_message", "parameters": {"message": "{{event.data.text}}"}}]
EVENT = {"name": "mail.in", "id": "m-1", "time": "2026-02-14T15:00:00Z",
         "data": {"text": "hello", "from": {"name": "Ada"}, "tags": ["a", "b"], "name": "in data"}}


def ok(**data: Any):
    return normalize({"name": "pass on", "instructions": "Pass the mail on.", **data}, CTX)


def refused(**data: Any) -> dict[str, str]:
    with pytest.raises(SkillValidationError) as info:
        ok(**data)
    return {e.field: e.message for e in info.value.errors}


def test_an_event_trigger_is_inferred_and_has_no_schedule() -> None:
    done = ok(trigger_config={"event": " mail.in "}, execution_plan=SEND)
    spec = done.spec
    assert spec.trigger_type == "event" and spec.subscribed_event == "mail.in"
    assert spec.trigger_config is not None and spec.trigger_config.event == "mail.in"
    assert not spec.is_scheduled and spec.tier == "direct"
    assert spec.trigger_config.describe() == "on event 'mail.in'"
    assert any("inferred as 'event'" in note for note in done.notes)


@pytest.mark.parametrize("data", [
    {"trigger_type": "event", "event": "mail.in"},  # flattened to the root
    {"trigger_type": "event", "trigger_config": {"eventName": "mail.in"}},
    {"triggerType": "event", "on_event": "mail.in"},
    {"trigger_type": "cron", "trigger_config": {"event": "mail.in"}},
])
def test_the_event_is_read_as_models_write_it(data: dict[str, Any]) -> None:
    spec = ok(**data).spec
    assert (spec.trigger_type, spec.subscribed_event) == ("event", "mail.in")


def test_a_time_zone_may_come_along_for_now_placeholders() -> None:
    spec = ok(trigger_config={"event": "mail.in", "timezone": "Asia/Tokyo"}).spec
    assert spec.trigger_config is not None and spec.trigger_config.timezone == "Asia/Tokyo"


@pytest.mark.parametrize(("data", "message"), [
    ({"trigger_type": "event"}, "is required for trigger_type 'event'"),
    ({"trigger_type": "event", "trigger_config": {"event": None}}, "is required for trigger_type 'event'"),
    ({"trigger_config": {"event": ""}}, "is required: the name of the event"),
    ({"trigger_config": {"event": ["a"]}}, "must be a string, got list"),
    ({"trigger_config": {"event": "mail in"}}, "'mail in' is not a valid event name"),
    ({"trigger_config": {"event": "-mail"}}, "is not a valid event name"),
    ({"trigger_config": {"event": "x" * 101}}, "is not a valid event name"),
    ({"trigger_config": {"event": "a:b"}}, "is not a valid event name"),
])
def test_a_bad_event_is_refused_naming_trigger_config_event(data: dict[str, Any], message: str) -> None:
    problems = refused(**data)
    assert message in problems["trigger_config.event"]


def test_an_event_and_a_schedule_together_are_refused() -> None:
    problems = refused(trigger_config={"event": "mail.in", "schedule": "0 9 * * *"})
    assert "either event or a schedule" in problems["trigger_config"]


def test_updates_switch_between_a_schedule_and_an_event() -> None:
    cron = ok(schedule="0 9 * * *").spec
    evented = normalize({"trigger_config": {"event": "mail.in"}}, CTX, existing=cron).spec
    assert evented.trigger_type == "event" and evented.trigger_config is not None
    assert (evented.trigger_config.event, evented.trigger_config.schedule) == ("mail.in", None)
    back = normalize({"schedule": "30 7 * * *"}, CTX, existing=evented).spec
    assert back.trigger_type == "cron" and back.trigger_config is not None
    assert (back.trigger_config.schedule, back.trigger_config.event) == ("30 7 * * *", None)
    manual = normalize({"trigger_type": "manual"}, CTX, existing=evented).spec
    assert manual.trigger_type == "manual" and manual.trigger_config is None


def test_event_placeholders_keep_a_plan_direct_but_only_on_an_event_skill() -> None:
    assert analyse_plan(ok(trigger_config={"event": "mail.in"}, execution_plan=SEND).spec.execution_plan or []).direct
    problems = refused(schedule="0 9 * * *", execution_plan=SEND)
    assert "not started by events" in problems["execution_plan[0].parameters"]


def test_a_plan_reads_the_event() -> None:
    parameters = {"whole": "{{event.data}}", "short": "{{event.from.name}}", "listed": "{{ event.tags.1 }}",
                  "text": "{{event.name}}/{{event.id}} at {{event.time}}: {{event.text}}",
                  "data_name": "{{event.data.name}}", "all": "{{event}}"}
    filled = resolve(parameters, {}, NOW, "UTC", EVENT)
    assert filled["whole"] == EVENT["data"] and filled["short"] == "Ada" and filled["listed"] == "b"
    assert filled["text"] == "mail.in/m-1 at 2026-02-14T15:00:00Z: hello"
    assert filled["data_name"] == "in data" and filled["all"] == EVENT


def test_a_missing_event_field_or_no_event_fails_the_step_saying_why() -> None:
    with pytest.raises(PlanError, match="has no 'data.subject'"):
        resolve({"m": "{{event.subject}}"}, {}, NOW, "UTC", EVENT)
    with pytest.raises(PlanError, match="not started by one"):
        resolve({"m": "{{event.text}}"}, {}, NOW, "UTC", None)


def test_the_agent_gets_the_event_after_its_task() -> None:
    spec = ok(trigger_config={"event": "mail.in"}).spec
    skill = Skill(**spec.model_dump(), id=1, created_at=NOW, updated_at=NOW)
    event = EventInfo(name="mail.in", id="m-1", data={"text": "hello"}, time=NOW)
    system, task = opening_messages(skill, NOW, ["outbox_send_message"], event)
    assert task.content is not None and task.content.startswith("Pass the mail on.")
    assert "'mail.in'" in task.content and '"data": {"text": "hello"}' in task.content
    assert "mail.in" not in (system.content or "")
    assert opening_messages(skill, NOW, [])[1].content == "Pass the mail on."


def test_an_emit_is_checked_field_by_field() -> None:
    assert check_event("mail.in", "msg-<1@x>", {"a": 1}) != []
    assert check_event("mail.in", "1f0c:7b@mail.example.com", {"a": 1}) == []
    fields = {e.field: e.message for e in check_event("", 5, "x" * 70_000)}
    assert set(fields) == {"event", "id", "data"} and "limit is 64 KiB" in fields["data"]
    assert event_workflow_id("skills", "mail.in", "m-1") == "skills-event:mail.in:m-1"

