"""How many of the fires due behind a run still going its schedule's overlap policy skipped."""

from __future__ import annotations

from skills.when.fires import held_behind, skipped_behind


def test_each_policy_skips_what_temporal_skips() -> None:
    # skip: every fire behind the run; buffer_one: all but the one held to start next; allow: none (each ran).
    assert [skipped_behind("skip", "once", n) for n in (0, 1, 3)] == [0, 1, 3]
    assert [skipped_behind("buffer_one", "once", n) for n in (0, 1, 3)] == [0, 0, 2]
    assert [skipped_behind("allow", "once", n) for n in (0, 1, 3)] == [0, 0, 0]
    # catch_up "all" queues every fire (BUFFER_ALL), whatever the overlap says: none skipped.
    assert skipped_behind("skip", "all", 5) == 0
    assert skipped_behind("skip", "none", 2) == skipped_behind("skip", "once", 2) == 2


def test_the_fires_held_to_start_after_the_run() -> None:
    assert [held_behind("buffer_one", "once", n) for n in (0, 1, 3)] == [0, 1, 1]
    assert held_behind("skip", "once", 3) == 0 and held_behind("allow", "once", 3) == 0
    assert held_behind("skip", "all", 3) == 3
