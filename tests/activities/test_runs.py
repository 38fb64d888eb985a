"""Run bookkeeping against a real store (SQLite and PostgreSQL): every scheduled time accounted for, backoff
decided from stored state, failures counted in one transaction with the run."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from activities.runs import RunActivities
from adapters.skill_folders import executable_parts, load_skill_file
from adapters.store import Store
from config.settings import Settings
from skills.errors import SkillValidationError
from skills.messages.run import BeginRun, RunStart
from skills.spec.models import ENDED, SkillSpec, TriggerConfig
from skills.when.fires import PreviousFire, account_gap
from skills.when.triggers import trigger_next_times
from tests.fakes.tools import FixedTools
from tests.skills.skillmd.skill_files import skill_text

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


@pytest.fixture
def store(store_url: str) -> Store:
    return Store.open(store_url)


@pytest.fixture
def runs(store: Store, tmp_path: Path) -> RunActivities:
    settings = Settings(data_dir=tmp_path, timezone="UTC", backoff_steps=[timedelta(minutes=1)], failure_limit=3)
    return RunActivities(store, settings, FixedTools())  # begin/finish never notify


@pytest.fixture
def every_minute(store: Store) -> int:
    spec = SkillSpec(agent_id="a", name="tick", trigger_type="cron", instructions="x",
                     trigger_config=TriggerConfig(interval_minutes=1))
    return store.skills.create_skill(spec, trigger_as_written=None, disabled_reason=None, now=T0).id


def fire(runs: RunActivities, skill_id: int, n: int, scheduled: datetime, started: datetime,
         status: str = "success") -> None:
    start = runs.begin_run(BeginRun(skill_id=skill_id, run_id=f"run-{n}", workflow_id=f"wf-{n}", trigger="schedule",
                                scheduled_at=scheduled, started_at=started))
    assert start.run is not None
    runs.finish_run(start.run.model_copy(update={"status": status, "finished_at": started + timedelta(seconds=1)}))


def table(store: Store, skill_id: int) -> list[tuple[datetime | None, str, str]]:
    return [(r.scheduled_at, r.status, r.summary) for r in reversed(store.runs.list_runs(skill_id, limit=100))]


def test_punctual_fires_leave_no_gaps(runs: RunActivities, store: Store, every_minute: int) -> None:
    for n in (1, 2, 3):
        fire(runs, every_minute, n, T0 + n * MINUTE, T0 + n * MINUTE + timedelta(milliseconds=300))
    assert [status for _, status, _ in table(store, every_minute)] == ["success"] * 3


def test_a_late_fire_records_the_fires_missed_beyond_the_window(runs: RunActivities, store: Store,
                                                                 every_minute: int) -> None:
    fire(runs, every_minute, 1, T0 + MINUTE, T0 + MINUTE)
    # Down from 12:01:30 to 12:05:40: 12:02-12:04 were beyond the window; 12:05 is the catch-up.
    fire(runs, every_minute, 2, T0 + 5 * MINUTE, T0 + 5 * MINUTE + timedelta(seconds=40))
    rows = table(store, every_minute)
    assert [(at, status) for at, status, _ in rows] == [
        (T0 + MINUTE, "success"), (T0 + 2 * MINUTE, "missed"), (T0 + 3 * MINUTE, "missed"),
        (T0 + 4 * MINUTE, "missed"), (T0 + 5 * MINUTE, "success")]
    assert rows[1][2] == "missed: the engine was down longer than the catch-up window"


def test_fires_skipped_behind_a_catch_up_run_are_recorded_as_coalesced(runs: RunActivities, store: Store,
                                                                        every_minute: int) -> None:
    fire(runs, every_minute, 1, T0 + MINUTE, T0 + MINUTE)
    # Back at 12:03:20: the schedule runs 12:02 late (inside the window) and skips 12:03 behind it.
    fire(runs, every_minute, 2, T0 + 2 * MINUTE, T0 + 3 * MINUTE + timedelta(seconds=20))
    fire(runs, every_minute, 3, T0 + 4 * MINUTE, T0 + 4 * MINUTE)
    rows = table(store, every_minute)
    assert [(at, status) for at, status, _ in rows] == [
        (T0 + MINUTE, "success"), (T0 + 2 * MINUTE, "success"), (T0 + 3 * MINUTE, "skipped"),
        (T0 + 4 * MINUTE, "success")]
    assert rows[2][2] == f"catch-up: coalesced into the late run scheduled for {(T0 + 2 * MINUTE).isoformat()}"


def test_begin_is_idempotent(runs: RunActivities, store: Store, every_minute: int) -> None:
    fire(runs, every_minute, 1, T0 + MINUTE, T0 + MINUTE)
    request = BeginRun(skill_id=every_minute, run_id="late", workflow_id="wf", trigger="schedule",
                       scheduled_at=T0 + 4 * MINUTE, started_at=T0 + 4 * MINUTE + timedelta(seconds=30))
    runs.begin_run(request)
    runs.begin_run(request)  # the activity retried after a lost completion
    assert [s for _, s, _ in table(store, every_minute)] == ["success", "missed", "missed", "running"]


def test_a_second_workflow_run_of_a_fire_runs_nothing(runs: RunActivities, store: Store, every_minute: int) -> None:
    """A reset or re-run workflow of a fire already recorded (a new run id, the same scheduled
    time) finds the record and is told to do nothing: one record per fire."""
    fire(runs, every_minute, 1, T0 + MINUTE, T0 + MINUTE)
    again = runs.begin_run(BeginRun(skill_id=every_minute, run_id="reset", workflow_id="wf-1", trigger="schedule",
                                scheduled_at=T0 + MINUTE, started_at=T0 + 2 * MINUTE))
    assert again.skill is None and again.run is None
    assert table(store, every_minute) == [(T0 + MINUTE, "success", "")]


def test_backoff_is_decided_from_the_stored_failure_count(runs: RunActivities, every_minute: int) -> None:
    fire(runs, every_minute, 1, T0 + MINUTE, T0 + MINUTE, status="error")
    inside = runs.begin_run(BeginRun(skill_id=every_minute, run_id="r2", workflow_id="w", trigger="schedule",
                                 scheduled_at=T0 + 2 * MINUTE - timedelta(seconds=30),
                                 started_at=T0 + 2 * MINUTE - timedelta(seconds=30)))
    assert inside.skip is not None and inside.skip.startswith("backoff: 1 consecutive failure")
    manual = runs.begin_run(BeginRun(skill_id=every_minute, run_id="r3", workflow_id="w", trigger="manual",
                                 scheduled_at=None, started_at=T0 + 2 * MINUTE - timedelta(seconds=20)))
    assert manual.skip is None
    after = runs.begin_run(BeginRun(skill_id=every_minute, run_id="r4", workflow_id="w", trigger="schedule",
                                scheduled_at=T0 + 2 * MINUTE + timedelta(seconds=5),
                                started_at=T0 + 2 * MINUTE + timedelta(seconds=5)))
    assert after.skip is None


def test_the_failure_limit_disables_in_the_same_transaction(runs: RunActivities, store: Store,
                                                             every_minute: int) -> None:
    for n in (1, 2):
        fire(runs, every_minute, n, T0 + n * 5 * MINUTE, T0 + n * 5 * MINUTE, status="error")
    start = runs.begin_run(BeginRun(skill_id=every_minute, run_id="r3", workflow_id="w", trigger="manual",
                                scheduled_at=None, started_at=T0 + 20 * MINUTE))
    assert start.run is not None
    outcome = runs.finish_run(start.run.model_copy(update={"status": "error", "summary": "boom",
                                                       "finished_at": T0 + 20 * MINUTE}))
    assert outcome.disabled == "failures" and outcome.skill is not None
    assert (outcome.skill.enabled, outcome.skill.consecutive_failures, outcome.skill.last_error) == (False, 3, "boom")
    assert not store.skills.get_skill(every_minute).enabled


def test_account_gap_caps_the_rows_of_a_long_outage() -> None:
    times = [T0 + n * MINUTE for n in range(1, 1000)]
    previous = PreviousFire(scheduled_at=T0, started_at=T0, finished_at=T0 + timedelta(seconds=1))
    rows = account_gap(times, previous, late=True)
    assert len(rows) == 100 and rows[-1].summary.endswith("(and 899 more times like it)")


def test_a_file_skills_dependencies_and_their_toolsets_are_read_at_each_fire(
        store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    settings = Settings(data_dir=tmp_path, timezone="UTC", project_skills_dir=tmp_path / "project",
                        user_skills_dir=tmp_path / "user", bundled_skills_dir=tmp_path / "bundled")
    runs = RunActivities(store, settings, FixedTools())

    def write(name: str, **frontmatter: object) -> None:
        folder = settings.user_skills_dir / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "SKILL.md").write_text(skill_text({"name": name, "description": f"The {name} skill.",
                                                     **frontmatter}))

    write("letters", depends=["signoff", "ghost", "hidden"])
    write("hidden", default_enabled=False)  # as in disclosure, a disabled skill is not brought
    write("signoff", depends=["style", "letters"])  # a cycle back to the skill itself brings it only once
    write("style", toolsets={"inks": {"command": "inks-server"}})
    spec = SkillSpec(agent_id=settings.file_skills_agent, name="letters", trigger_type="cron", instructions="x",
                     trigger_config=TriggerConfig(interval_minutes=1))
    skill_id = store.skills.create_skill(spec, trigger_as_written=None, disabled_reason=None, now=T0).id

    def begin(n: int) -> RunStart:
        return runs.begin_run(BeginRun(skill_id=skill_id, run_id=f"r{n}", workflow_id="w", trigger="manual",
                                   scheduled_at=None, started_at=T0 + n * MINUTE))

    refused = begin(0)  # style's toolset is not trusted yet: nothing is granted, the run fails at once
    assert refused.run is not None and refused.refused is not None and "run `skills trust style`" in refused.refused
    assert refused.dependency_toolsets == [] and refused.toolsets is None
    style, _ = load_skill_file(settings.user_skills_dir / "style" / "SKILL.md", "user")
    assert style is not None
    store.trust.set_trust("style", str(executable_parts(style).digest), [], T0)  # `skills trust style`

    with caplog.at_level(logging.WARNING):
        first = begin(1)
    assert first.refused is None
    assert first.run is not None and first.toolsets is None  # letters has no toolsets of its own
    assert first.dependencies == ["signoff", "style"]
    [grant] = first.dependency_toolsets
    assert (grant.skill, grant.servers) == ("style", ["inks"]) and grant.digest.startswith("sha256:")
    assert "skill letters depends on ghost, hidden, not in the skill folders now (or disabled)" in caplog.text

    write("style")  # an edit counts at the next fire
    second = begin(2)
    assert second.dependencies == ["signoff", "style"] and second.dependency_toolsets == []
    # A skill that is not a file skill has none of this.
    other = SkillSpec(agent_id="someone", name="letters", trigger_type="cron", instructions="x",
                      trigger_config=TriggerConfig(interval_minutes=1))
    other_id = store.skills.create_skill(other, trigger_as_written=None, disabled_reason=None, now=T0).id
    plain = runs.begin_run(BeginRun(skill_id=other_id, run_id="r3", workflow_id="w", trigger="manual",
                                scheduled_at=None, started_at=T0))
    assert plain.run is not None and plain.dependencies == [] and plain.toolsets is None


# --- the schedule's shape ------------------------------------------------------


def _shaped(store: Store, **fields: object) -> int:
    spec = SkillSpec(agent_id="a", name="shaped", trigger_type="cron", instructions="x",
                     trigger_config=TriggerConfig(interval_minutes=10), **fields)
    return store.skills.create_skill(spec, trigger_as_written=None, disabled_reason=None, now=T0).id


def test_a_jittered_fire_does_not_count_its_own_time_as_missed(runs: RunActivities, store: Store) -> None:
    """Temporal's scheduled time includes the jitter: a late catch-up fire scheduled 12:50:40 for 12:50
    once recorded 12:50 itself as missed, beside the run that was its fire."""
    skill_id = _shaped(store, jitter_seconds=60)
    times = trigger_next_times(TriggerConfig(interval_minutes=10), anchor=T0, after=T0, count=5)
    fire(runs, skill_id, 1, times[0] + timedelta(seconds=30), times[0] + timedelta(seconds=30))
    late = times[4] + timedelta(seconds=40)
    fire(runs, skill_id, 2, late, late + timedelta(seconds=30))
    assert [(at, status) for at, status, _ in table(store, skill_id)] == [
        (times[0] + timedelta(seconds=30), "success"), (times[1], "missed"), (times[2], "missed"),
        (times[3], "missed"), (late, "success")]


def test_max_runs_counts_each_fire_once_and_the_last_one_ends_the_skill(runs: RunActivities, store: Store) -> None:
    skill_id = _shaped(store, max_runs=2)
    fire(runs, skill_id, 1, T0 + 10 * MINUTE, T0 + 10 * MINUTE)
    request = BeginRun(skill_id=skill_id, run_id="run-2", workflow_id="wf-2", trigger="schedule",
                       scheduled_at=T0 + 20 * MINUTE, started_at=T0 + 20 * MINUTE)
    start = runs.begin_run(request)
    runs.begin_run(request)  # retried: the same fire, counted once
    assert store.skills.get_skill(skill_id).scheduled_runs == 2 and store.skills.get_skill(skill_id).enabled
    assert start.run is not None
    outcome = runs.finish_run(start.run.model_copy(update={"status": "success", "finished_at": T0 + 21 * MINUTE}))
    assert outcome.disabled == ENDED
    skill = store.skills.get_skill(skill_id)
    assert (skill.enabled, skill.disabled_reason) == (False, ENDED)
    with pytest.raises(SkillValidationError, match="ran 2 of max_runs 2"):
        store.skills.set_enabled(skill_id, True, None, T0 + 30 * MINUTE)
