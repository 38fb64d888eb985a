"""Skills in the store, on SQLite and PostgreSQL: stored, found, listed, changed, restored, deleted;
the newest skills' copies; a store opened again."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import inspect

from adapters.store import Store
from skills.errors import SkillNotFoundError, SkillValidationError
from skills.messages.manage import SkillFilter
from tests.adapters.store.helpers import T0, create, run, spec


def test_a_skill_is_stored_found_listed_changed_and_deleted(store: Store) -> None:
    skill = store.skills.create_skill(spec(required_tools=["outbox.send"], notify_on_completion=None),
                                      trigger_as_written={"in_minutes": 5}, disabled_reason=None, now=T0)
    assert skill.id > 0 and skill.schedule_id == f"q-{skill.id}-tick" and skill.created_at == T0
    assert skill.trigger_as_written == {"in_minutes": 5} and skill.notify_on_completion is None
    assert store.skills.find_skill("TICK").id == skill.id == store.skills.find_skill(str(skill.id)).id
    create(store, spec("tick", agent="b"))
    with pytest.raises(SkillNotFoundError, match="several agents"):
        store.skills.find_skill("tick")
    assert store.skills.find_skill("tick", agent_id="b").agent_id == "b"
    with pytest.raises(SkillValidationError, match="already has a skill named 'tick'"):
        create(store, spec("tick"))

    later = T0 + timedelta(hours=1)
    changed = store.skills.replace_skill(skill.id, spec("tock", enabled=False, trigger_type="manual", trigger_config=None),
                                         trigger_as_written=None, disabled_reason="by user", now=later)
    assert (changed.name, changed.schedule_id, changed.disabled_reason, changed.updated_at) == ("tock", None, "by user", later)
    assert [s.name for s in store.skills.list_skills(SkillFilter(agent_id="a"))] == ["tock"]
    assert [s.agent_id for s in store.skills.list_skills(SkillFilter(enabled=True))] == ["b"]
    assert store.skills.set_enabled(skill.id, True, None, later).enabled

    store.runs.start_run(run(skill.id, 1))
    deleted = store.skills.delete_skill(skill.id)
    assert deleted.name == "tock" and store.runs.list_runs(skill.id) == []
    with pytest.raises(SkillNotFoundError):
        store.skills.get_skill(skill.id)
    # Ids are never reused: schedule ids derive from them.
    assert create(store, spec("new")) > skill.id


def test_restore_puts_a_skill_back_exactly(store: Store) -> None:
    before = store.skills.get_skill(create(store, spec()))
    store.skills.replace_skill(before.id, spec("other", description="changed"), trigger_as_written=None,
                               disabled_reason=None, now=T0 + timedelta(days=1))
    store.skills.restore_skill(before)
    assert store.skills.get_skill(before.id) == before
    store.skills.delete_skill(before.id)
    store.skills.restore_skill(before)  # the undo of a deletion made it again, with its id
    assert store.skills.get_skill(before.id) == before


def test_opening_again_changes_nothing(store_url: str, store: Store) -> None:
    skill_id = create(store, spec())
    tables = set(inspect(store.engine).get_table_names())
    assert {"skills", "runs", "messages", "engine_state", "seen_events", "alembic_version"} <= tables
    again = Store.open(store_url)
    assert again.skills.get_skill(skill_id).name == "tick"


def test_newest_skills_reads_only_what_changed_and_never_answers_stale(store: Store) -> None:
    ids = [create(store, spec(f"s{i}"), now=T0 + timedelta(minutes=i)) for i in range(4)]
    create(store, spec("other agent's", agent="b"))
    assert [s.id for s in store.skills.newest_skills("a", 3)] == ids[:0:-1]  # newest first, at most 3
    # A change, a delete and a new skill since the last answer are each seen (one store, one cache).
    store.skills.replace_skill(ids[2], spec("s2", instructions="changed"), trigger_as_written=None, disabled_reason=None,
                               now=T0 + timedelta(hours=1))
    store.skills.delete_skill(ids[3])
    newest = create(store, spec("s4"), now=T0 + timedelta(hours=2))
    found = store.skills.newest_skills("a", 3)
    assert [s.id for s in found] == [newest, ids[2], ids[1]]
    assert found[1].instructions == "changed"
    # Another store on the same database (another worker) answers the same.
    assert [s.id for s in Store.open(str(store.engine.url)).skills.newest_skills("a", 3)] == [s.id for s in found]
    # Cut instructions are kept apart from whole ones.
    store.skills.replace_skill(ids[1], spec("s1", instructions="x" * 50), trigger_as_written=None, disabled_reason=None,
                               now=T0 + timedelta(hours=3))
    assert [len(s.instructions) for s in store.skills.newest_skills("a", 3, instruction_chars=10)] == [5, 7, 11]
    assert len(store.skills.newest_skills("a", 3)[2].instructions) == 50


def test_the_enabled_crons_are_counted_by_cron_and_zone_for_every_agent(store: Store) -> None:
    """What a registration weighs a new cron's minute against (skills.when.spread.crowd): a paused skill, an
    interval and a one-shot share no one's minute."""
    daily = {"schedule": "30 8 * * *", "timezone": "Europe/Berlin"}
    create(store, spec("a", trigger_config=daily))
    create(store, spec("b", agent="other", trigger_config=daily))
    create(store, spec("c", trigger_config={"schedule": "30 8 * * *", "timezone": "UTC"}))
    create(store, spec("paused", trigger_config=daily, enabled=False))
    create(store, spec("every five"))
    create(store, spec("once", trigger_config={"at": "2030-01-01T08:30:00+00:00"}))
    assert store.skills.cron_counts() == {("30 8 * * *", "Europe/Berlin"): 2, ("30 8 * * *", "UTC"): 1}
    # Kept between changes, never stale after one: a pause, a changed trigger, a delete, a skill paused before.
    later = T0 + timedelta(hours=1)
    a, b, c, paused = (store.skills.find_skill(name).id for name in ("a", "b", "c", "paused"))
    store.skills.set_enabled(a, False, "by user", later)
    assert store.skills.cron_counts() == {("30 8 * * *", "Europe/Berlin"): 1, ("30 8 * * *", "UTC"): 1}
    store.skills.replace_skill(c, spec("c", trigger_config={"schedule": "0 9 * * *", "timezone": "UTC"}),
                               trigger_as_written=None, disabled_reason=None, now=later + timedelta(seconds=1))
    assert store.skills.cron_counts() == {("30 8 * * *", "Europe/Berlin"): 1, ("0 9 * * *", "UTC"): 1}
    store.skills.delete_skill(b)
    store.skills.set_enabled(paused, True, None, T0)
    assert store.skills.cron_counts() == {("30 8 * * *", "Europe/Berlin"): 1, ("0 9 * * *", "UTC"): 1}
