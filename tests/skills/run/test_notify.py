"""What a run's notices say, and when a run gets a completion notice."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from skills.run.notify import completion_due, failure_message, messaged_user
from skills.spec.models import RunRecord, Skill, SkillSpec, ToolCallRecord, TriggerConfig
from skills.spec.normalize import NormalizeContext, normalize

NOW = datetime(2025, 6, 1, 9, 0, tzinfo=UTC)
RETRY = NOW + timedelta(minutes=5)


def skill(notify: bool | None = None, **trigger: object) -> Skill:
    return Skill(id=1, agent_id="main", name="tea", instructions="x", created_at=NOW, updated_at=NOW,
                 trigger_type="cron" if trigger else "manual",
                 trigger_config=TriggerConfig(**trigger) if trigger else None,  # type: ignore[arg-type]
                 notify_on_completion=notify)


def run(summary: str = "", *calls: ToolCallRecord) -> RunRecord:
    return RunRecord(run_id="r", skill_id=1, skill_name="tea", workflow_id="w", started_at=NOW, tier="direct",
                     summary=summary, tool_calls=list(calls))


def tool(name: str, step: str = "step1", ok: bool = True, refused: bool = False) -> ToolCallRecord:
    return ToolCallRecord(step_id=step, tool=name, ok=ok, duration_ms=1, refused=refused)


@pytest.mark.parametrize(("summary", "said"), [
    ("LLM turn 1 failed: Connection error.", "LLM turn 1 failed: Connection error."),
    ("it said no!", "it said no!"),
    ("who knows?", "who knows?"),
    ("outbox_send_message failed: timed out", "outbox_send_message failed: timed out."),
])
def test_a_failure_ends_with_one_full_stop(summary: str, said: str) -> None:
    assert failure_message(skill(), run(summary), 1, None) == f"❌ tea: {said}"


def test_only_a_recurring_schedule_says_when_its_fires_resume() -> None:
    recurring = failure_message(skill(schedule="0 * * * *", timezone="UTC"), run("boom"), 2, RETRY)
    assert recurring == "❌ tea (failure 2 in a row): boom. Scheduled fires resume after 2025-06-01T09:05:00+00:00."
    one_shot = failure_message(skill(at=NOW), run("boom"), 1, RETRY)
    assert one_shot == "❌ tea: boom."


def test_a_run_messaged_the_user_when_a_messaging_tool_succeeded() -> None:
    notifier = "outbox_send_message"
    for name in ("outbox_send_message", "telegram_send_message", "webhook_send_message", "slack_post_message",
                 "my_notifier"):
        assert messaged_user(run("", tool(name)), "my_notifier"), name
    assert messaged_user(run("", tool("outbox_list_messages"), tool("telegram_send_message")), notifier)
    assert not messaged_user(run("", tool("outbox_list_messages")), notifier)
    assert not messaged_user(run("", tool("outbox_send_message", ok=False)), notifier)
    assert not messaged_user(run("", tool("outbox_send_message", refused=True)), notifier)
    assert not messaged_user(run("", tool("outbox_send_message", step="preflight-1")), notifier)


def test_notify_on_completion_unset_is_automatic() -> None:
    sent, silent = run("ok", tool("outbox_send_message")), run("ok", tool("outbox_list_messages"))
    due = {notify: (completion_due(skill(notify), sent, NOW, timedelta(minutes=10), "outbox_send_message"),
                    completion_due(skill(notify), silent, NOW, timedelta(minutes=10), "outbox_send_message"))
           for notify in (None, True, False)}
    assert due == {None: (False, True), True: (True, True), False: (False, False)}


@pytest.mark.parametrize(("given", "stored"), [(None, None), ("auto", None), (True, True), ("no", False)])
def test_notify_on_completion_is_read_as_automatic_always_or_never(given: object, stored: bool | None) -> None:
    ctx = NormalizeContext(now=NOW, default_timezone="UTC", default_agent_id="main", tool_catalog={"outbox_send_message"})
    data = {"name": "tea", "instructions": "x", **({} if given is None else {"notify": given})}
    assert normalize(data, ctx).spec.notify_on_completion is stored
    # An update that sets it to null makes it automatic again.
    existing = SkillSpec(agent_id="main", name="tea", trigger_type="manual", instructions="x",
                         notify_on_completion=True)
    assert normalize({"notify_on_completion": given}, ctx, existing=existing).spec.notify_on_completion is stored
