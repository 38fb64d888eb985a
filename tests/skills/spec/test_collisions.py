"""A new skill that closely repeats one its agent has: named, with why, and never refused."""

from __future__ import annotations

from datetime import UTC, datetime

from skills.spec.collisions import collision_note, collisions
from skills.spec.models import Skill, SkillSpec

NOW = datetime(2026, 11, 26, 8, 30, tzinfo=UTC)


def spec(name: str = "water", **fields: object) -> SkillSpec:
    base: dict[str, object] = {
        "name": name, "agent_id": "main", "instructions": "Remind the user to drink water.",
        "trigger_type": "cron", "trigger_config": {"schedule": "0 * * * *", "timezone": "UTC"},
        "execution_plan": [{"id": "step1", "tool_name": "outbox_send_message",
                            "parameters": {"message": "Drink water!"}}],
        "required_tools": ["outbox_send_message"]}
    return SkillSpec.model_validate({**base, **fields})


def stored(skill_id: int, s: SkillSpec) -> Skill:
    return Skill.model_validate({**s.model_dump(), "id": skill_id, "created_at": NOW, "updated_at": NOW})


def test_the_same_plan_at_times_that_meet_is_named_with_its_reasons() -> None:
    existing = stored(7, spec("drink water", instructions="Tell me to have a glass."))
    [found] = collisions(spec("hydrate"), [existing], NOW)
    assert (found.skill_id, found.name, found.reasons) == (7, "drink water", ["the same plan", "fire times that meet"])
    note = collision_note([found])
    assert note is not None and note.startswith("closely repeats skill 7 'drink water' (the same plan, fire times")
    assert "memory_update_skill with skill_id 7" in note and "`skills update 7`" in note


def test_the_same_plan_at_other_times_is_another_skill() -> None:
    evening = stored(7, spec("evening", instructions="x", trigger_config={"schedule": "0 20 * * *", "timezone": "UTC"}))
    morning = spec("morning", instructions="y", trigger_config={"schedule": "0 8 * * *", "timezone": "UTC"})
    assert collisions(morning, [evening], NOW) == []
    # Every 2 hours and every hour meet at the even hours.
    hourly = stored(8, spec("hourly", instructions="z"))
    two = spec("two", instructions="w", trigger_config={"schedule": "0 */2 * * *", "timezone": "UTC"})
    assert [c.skill_id for c in collisions(two, [hourly], NOW)] == [8]


def test_near_identical_instructions_are_named_whatever_the_plan() -> None:
    agent = dict(execution_plan=None, required_tools=["gmail_list_messages", "outbox_send_message"],
                 instructions="Every morning summarize my unread email in five bullets, most urgent first.")
    existing = stored(3, spec("inbox", **agent, trigger_config={"schedule": "0 7 * * *", "timezone": "UTC"}))
    again = spec("mail digest", **{**agent, "instructions": "every morning, summarize my unread emails in 5 bullets, "
                                                           "most urgent first"},
                 trigger_config={"schedule": "0 9 * * *", "timezone": "UTC"})
    [found] = collisions(again, [existing], NOW)
    assert found.reasons == ["near-identical instructions"]


def test_other_agents_and_different_work_are_not_collisions() -> None:
    theirs = stored(4, spec("water", agent_id="family"))
    other_tool = stored(5, spec("stretch", instructions="Stretch.", execution_plan=[
        {"id": "step1", "tool_name": "outbox_send_message", "parameters": {"message": "Stretch!"}}]))
    assert collisions(spec(), [theirs, other_tool], NOW) == []
    assert collision_note([]) is None
