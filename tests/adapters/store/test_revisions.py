"""Revisions in the store, on SQLite and PostgreSQL: one with each change, none for a refused one,
bounded per skill, numbered one after the other under changes at once (PostgreSQL)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from adapters.store import Store
from skills.errors import SkillNotFoundError, SkillValidationError
from tests.adapters.store.helpers import T0, create, spec


def test_every_change_keeps_one_revision_with_it(store: Store) -> None:
    skill_id = create(store, spec(), T0)
    store.skills.replace_skill(skill_id, spec(trigger_config={"interval_minutes": 10}), trigger_as_written=None,
                               disabled_reason=None, now=T0 + timedelta(minutes=1), by="cli")
    store.skills.set_enabled(skill_id, False, "paused", T0 + timedelta(minutes=2), by="mcp")
    store.skills.set_enabled(skill_id, False, "paused", T0 + timedelta(minutes=3), by="mcp")  # no change: no revision
    assert store.skills.get_skill(skill_id).revision == 3
    deleted = store.skills.delete_skill(skill_id, by="chat:s1", now=T0 + timedelta(minutes=4))
    assert deleted.revision == 3  # as it was
    revs = store.revisions.list_revisions(skill_id)
    assert [(r.rev, r.action, r.by) for r in revs] == [
        (4, "deleted", "chat:s1"), (3, "updated", "mcp"), (2, "updated", "cli"), (1, "created", "client")]
    assert [(c.field, c.before, c.after) for c in revs[1].diff] == [("enabled", True, False)]
    assert [c.field for c in revs[2].diff] == ["trigger_config"]
    assert revs[2].spec["trigger_config"]["interval_minutes"] == 10 and revs[2].at == T0 + timedelta(minutes=1)
    assert revs[0].spec["enabled"] is False and revs[0].diff == []  # a delete keeps the spec it had
    assert [r.skill_id for r in store.revisions.deleted_skill_revisions("TICK")] == [skill_id]
    assert store.revisions.get_revision(skill_id, 2).spec == revs[2].spec
    with pytest.raises(SkillNotFoundError):
        store.revisions.get_revision(skill_id, 9)


def test_a_refused_change_writes_no_revision_and_an_undo_forgets_its_own(store: Store) -> None:
    first, second = create(store, spec()), create(store, spec("tock"))
    with pytest.raises(SkillValidationError):  # the name is taken: neither the change nor its revision
        store.skills.replace_skill(second, spec(), trigger_as_written=None, disabled_reason=None, now=T0)
    assert [r.rev for r in store.revisions.list_revisions(second)] == [1]
    before = store.skills.get_skill(first)
    store.skills.replace_skill(first, spec(max_steps=3), trigger_as_written=None, disabled_reason=None, now=T0)
    store.skills.restore_skill(before)  # the schedule could not follow
    assert store.skills.get_skill(first).revision == 1 and [r.rev for r in store.revisions.list_revisions(first)] == [1]
    store.skills.delete_skill(second, by=None)  # the undo of a creation: as if it never was
    assert store.revisions.list_revisions(second) == [] and store.revisions.deleted_skill_revisions("tock") == []


def test_revisions_are_bounded_per_skill(store: Store) -> None:
    store.max_revisions = 3
    skill_id = create(store, spec())
    for steps in range(2, 7):
        store.skills.replace_skill(skill_id, spec(max_steps=steps), trigger_as_written=None, disabled_reason=None, now=T0)
    assert [r.rev for r in store.revisions.list_revisions(skill_id)] == [6, 5, 4]
    store.skills.delete_skill(skill_id, now=T0)
    assert store.revisions.prune_deleted_revisions(T0 + timedelta(days=1), 100) == 3
    assert store.revisions.list_revisions(skill_id) == []


def test_changes_of_one_skill_at_once_number_their_revisions_one_after_the_other(pg_url: str) -> None:
    store = Store.open(pg_url)
    skill_id = create(store, spec())
    workers = [Store.open(pg_url) for _ in range(4)]
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def change(worker: Store, steps: int) -> None:
        barrier.wait()
        try:
            worker.skills.replace_skill(skill_id, spec(max_steps=steps), trigger_as_written=None, disabled_reason=None,
                                        now=T0, by=f"w{steps}")
        except BaseException as e:  # reported below, not swallowed
            errors.append(e)

    threads = [threading.Thread(target=change, args=(workers[i % 4], i + 2)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    revisions = store.revisions.list_revisions(skill_id)
    assert [r.rev for r in revisions] == list(range(9, 0, -1)) and store.skills.get_skill(skill_id).revision == 9
    # Each revision's diff starts where the one before it ended.
    for newer, older in zip(revisions, revisions[1:], strict=False):
        [changed] = newer.diff
        assert changed.before == older.spec["max_steps"] and changed.after == newer.spec["max_steps"]
