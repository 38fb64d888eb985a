"""A skill's next 30 days: runs from its schedule (skipped days, end and max runs applied), messages from
what a run sends, tokens from the median of comparable recorded runs, or "no history"."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from skills.spec.models import SkillSpec
from skills.when.outlook import MAX_COUNTED, messages_per_run, outlook, runs_ahead, tokens_ahead

NOW = datetime(2026, 12, 1, 0, 0, tzinfo=UTC)  # a Tuesday
NOTIFIER = "outbox_send_message"


def spec(schedule: str = "0 * * * *", **fields: object) -> SkillSpec:
    base: dict[str, object] = {
        "name": "s", "agent_id": "main", "instructions": "x", "trigger_type": "cron",
        "trigger_config": {"schedule": schedule, "timezone": "UTC"},
        "execution_plan": [{"id": "step1", "tool_name": "outbox_list_messages", "parameters": {}}],
        "required_tools": ["outbox_list_messages"]}
    return SkillSpec.model_validate({**base, **fields})


def test_runs_come_from_the_schedule_with_its_skips_end_and_max_runs() -> None:
    assert runs_ahead(spec(), NOW, anchor=NOW) == (720, False)  # hourly, 30 days
    assert runs_ahead(spec("0 9 * * *"), NOW, anchor=NOW) == (30, False)
    assert runs_ahead(spec("0 9 * * *", business_days_only=True), NOW, anchor=NOW)[0] == 22
    assert runs_ahead(spec("0 9 * * *", end_at=NOW + timedelta(days=10)), NOW, anchor=NOW)[0] == 10
    assert runs_ahead(spec("0 9 * * *", max_runs=12), NOW, anchor=NOW, done=5)[0] == 7
    assert runs_ahead(spec("0 9 * * *", enabled=False), NOW, anchor=NOW) == (0, False)
    assert runs_ahead(spec(trigger_type="manual", trigger_config=None), NOW, anchor=NOW) == (0, False)
    every_minute = runs_ahead(spec("* * * * *"), NOW, anchor=NOW)
    assert every_minute == (min(43_200, MAX_COUNTED), 43_200 >= MAX_COUNTED)


def test_messages_count_the_plan_and_the_result() -> None:
    sends = spec(execution_plan=[{"id": "s", "tool_name": "telegram_send_message", "parameters": {"message": "hi"}}],
                 required_tools=["telegram_send_message"])
    assert messages_per_run(sends, NOTIFIER)[0] == 1  # it sends its own: no notice (automatic)
    assert messages_per_run(spec(), NOTIFIER) == (1, "1 each: its result to the notifier")
    two = spec(deliver_to=[{"tool": "outbox_send_message"}, {"tool": "telegram_send_message"}])
    assert messages_per_run(two, NOTIFIER)[0] == 2
    assert messages_per_run(spec(deliver="never"), NOTIFIER)[0] == 0
    agent = spec(execution_plan=None, required_tools=["gmail_list_messages"])
    count, how = messages_per_run(agent, NOTIFIER)
    assert count == 1 and how.startswith("at least 1 each")


def test_tokens_are_a_median_of_comparable_runs_or_no_history() -> None:
    assert tokens_ahead(30, [1000, 3000, 2000], [], "m") == (60_000, "2,000 a run, the median of 3 of this skill's runs")
    assert tokens_ahead(30, [], [500, 700], "m")[1] == "600 a run, the median of 2 of other skills' on m runs"
    assert tokens_ahead(30, [], [], "m") == (None, "no history to estimate from")
    agent = spec("0 7 * * *", execution_plan=None, required_tools=["gmail_list_messages"])
    view = outlook(agent, NOW, anchor=NOW, notifier_tool=NOTIFIER)
    assert view.lines() == ["next 30 days: 30 runs; at least 30 messages (at least 1 each: its result to the "
                            "notifier, and what the model sends); tokens: no history to estimate from"]
    priced = outlook(agent, NOW, anchor=NOW, notifier_tool=NOTIFIER, own_tokens=[2_000], price=0.6)
    assert "60,000 tokens, about 0.04 at SKILLS_LLM_PRICE (2,000 a run" in priced.lines()[0]
    capped = outlook(agent.model_copy(update={"max_tokens_per_month": 50_000}), NOW, anchor=NOW,
                     notifier_tool=NOTIFIER, own_tokens=[2_000])
    assert capped.lines()[0].endswith("over its max_tokens_per_month of 50,000: fires will be skipped)")
    direct = outlook(spec(), NOW, anchor=NOW, notifier_tool=NOTIFIER)
    assert direct.tokens is None and direct.lines() == [
        "next 30 days: 720 runs; 720 messages (1 each: its result to the notifier)"]
