"""File skills that schedule themselves, end to end on a real dev server:
SKILL.md -> SyncSkillFiles -> RegisterSkill / ChangeSkill -> the skill's Temporal Schedule.

The sync's workflow and activities run on a worker of their own, on a task queue of
their own, beside the engine's worker; they register through the engine's queue, as
in production where both live in one worker. The tool catalog they check against is
the engine's real one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update
from temporalio.client import Client, ScheduleActionStartWorkflow, ScheduleHandle, ScheduleOverlapPolicy

from adapters.schedules import ensure_engine_schedules
from adapters.store import Store
from adapters.store.tables import SkillRow
from client.files import sync_files
from config.settings import Settings
from skills.errors import SkillNotFoundError
from skills.skillmd import BUNDLED_DIR
from skills.skillmd.sync import (
    DISABLED_IN_FILE,
    FILE_REMOVED,
    UNSCHEDULED_IN_FILE,
    SyncResult,
)
from skills.spec.models import Skill
from tests.conftest import Engine, eventually, trigger_schedule
from tests.skills.skillmd.skill_files import skill_text

AGENT = "files"


class Sync:
    """Runs SyncSkillFiles now, on the engine's worker."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.queue = engine.settings.task_queue

    async def __call__(self, *, dry_run: bool = False) -> SyncResult:
        # The owner trusts what these files reach (as written now): the sync is what is tested here, trust in
        # tests/workflows/test_trust*.py.
        await trust_all(self.engine)
        return await sync_files(self.engine.skills, dry_run=dry_run)


async def trust_all(engine: Engine) -> None:
    """``trust_files``, but past a file the worker cannot find by its name (a folder named otherwise)."""
    from adapters.skill_folders import discover, executable_parts
    from client.trust import trust

    found = discover(user=engine.settings.user_skills_dir, project=engine.settings.project_skills_dir)
    for name, skill in found.skills.items():
        if executable_parts(skill).executable:
            with contextlib.suppress(SkillNotFoundError):
                await trust(engine.skills, name)


@pytest.fixture
def folders(settings: Settings) -> Settings:
    """The engine's settings: its SKILL.md folders are empty folders of the test's own."""
    return settings


@pytest.fixture
def sync(engine: Engine) -> Sync:
    return Sync(engine)


def write(
    root: Path,
    name: str,
    *,
    schedule: str | None = "30 6 * * *",
    message: str = "Good morning!",
    folder: str | None = None,
    body: str = "Send the wake-up message.",
    **fields: Any,
) -> Path:
    """A Direct-tier file skill at root/<folder or name>/SKILL.md, with a schedule unless told otherwise."""
    metadata: dict[str, Any] = {
        "execution_plan": [
            {"id": "send", "toolName": "outbox_send_message", "parameters": {"message": message}}
        ],
        "notify_on_completion": False,
        **fields.pop("metadata", {}),
    }
    if schedule is not None:
        metadata["trigger_config"] = {"schedule": schedule}
    frontmatter = {"name": name, "description": f"The {name} skill.", "metadata": metadata, **fields}
    path = root / (folder or name) / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(skill_text(frontmatter, body))
    return path


def names(items: list[Any]) -> list[str]:
    return sorted(item.change.name for item in items)


def plan_message(skill: Skill) -> str:
    assert skill.execution_plan is not None
    return skill.execution_plan[0].parameters["message"]


async def test_a_file_skill_with_a_schedule_registers_and_its_schedule_exists(
    engine: Engine, client: Client, folders: Settings, sync: Sync
) -> None:
    project = write(folders.project_skills_dir, "wake-up", body="Wake the user up.")
    user = write(folders.user_skills_dir, "wake-up", schedule="0 12 * * *")  # shadowed by the project's

    preview = await sync(dry_run=True)
    assert [(c.action, c.name) for c in preview.planned] == [("create", "wake-up")]
    assert await engine.skills.list() == []

    result = await sync()
    assert names(result.created) == ["wake-up"] and result.refused == [] and result.updated == []
    created = result.created[0]
    assert created.change.reason == "new file" and created.change.source == "project"
    assert created.next_fire is not None and (created.next_fire.hour, created.next_fire.minute) == (6, 30)
    # The whole note: "user" in it held either way round, the user folder's path (tmp_path / "user") names it.
    assert result.shadowed == [f"wake-up: {user} (user) is shadowed by {project} (project)"]

    skill = await engine.skills.get("wake-up", AGENT)
    assert skill.tier == "direct" and skill.instructions == "Wake the user up."
    assert skill.trigger_config is not None and skill.trigger_config.schedule == "30 6 * * *"
    assert plan_message(skill) == "Good morning!" and not skill.notify_on_completion
    assert skill.schedule_id is not None
    description = await client.get_schedule_handle(skill.schedule_id).describe()
    assert await description.memo_value("trigger") == {"schedule": "30 6 * * *"}
    times = description.info.next_action_times
    # A wake-up call is a Direct plan: not spread, the server starts each fire at 06:30 exactly.
    assert description.schedule.spec.jitter is None
    assert times and all((t.hour, t.minute, t.second) == (6, 30, 0) for t in times)

    again = await sync()
    assert again.unchanged == ["wake-up"] and not (again.created or again.updated or again.disabled)


async def test_touching_or_editing_the_file_updates_the_skill(
    engine: Engine, client: Client, folders: Settings, sync: Sync
) -> None:
    path = write(folders.project_skills_dir, "wake-up")
    first = (await sync()).created[0]

    write(folders.project_skills_dir, "wake-up", schedule="0 8 * * 1-5", message="Rise and shine")
    result = await sync()
    assert (
        names(result.updated) == ["wake-up"]
        and result.updated[0].change.reason == "file is newer than the stored skill"
    )
    skill = await engine.skills.get("wake-up", AGENT)
    assert skill.id == first.skill_id and plan_message(skill) == "Rise and shine"
    assert skill.trigger_config is not None and skill.trigger_config.schedule == "0 8 * * 1-5"
    assert skill.schedule_id is not None
    times = (await client.get_schedule_handle(skill.schedule_id).describe()).info.next_action_times
    assert times and all((t.hour, t.minute, t.second) == (8, 0, 0) and t.weekday() < 5 for t in times)

    now = time.time()
    os.utime(path, (now, now))  # touched: same content, newer file
    touched = await sync()
    assert names(touched.updated) == ["wake-up"]
    assert (await engine.skills.get("wake-up", AGENT)).updated_at > skill.updated_at

    # A copy that keeps an old mtime (cp -p, rsync -t, tar): found by its content.
    write(folders.project_skills_dir, "wake-up", schedule="0 8 * * 1-5", message="Wake up!")
    old = skill.created_at.timestamp() - 3600
    os.utime(path, (old, old))
    copied = await sync()
    assert names(copied.updated) == ["wake-up"]
    assert copied.updated[0].change.reason == "file differs from the stored skill"
    assert plan_message(await engine.skills.get("wake-up", AGENT)) == "Wake up!"
    assert (await sync()).unchanged == ["wake-up"]


async def test_a_file_skill_stored_before_the_spread_keeps_its_exact_time_when_re_synced(
    engine: Engine, client: Client, folders: Settings, sync: Sync
) -> None:
    """Its row as the migration leaves it (spread false): the file, edited, re-syncs the skill and rewrites its
    schedule, and adds no spread; a file that asks for one gets it."""
    write(folders.project_skills_dir, "wake-up")
    skill_id = (await sync()).created[0].skill_id
    assert skill_id is not None
    store = Store.open(engine.settings.store_url, schedule_prefix=engine.settings.task_queue)
    with store.session() as session:
        session.execute(update(SkillRow).where(SkillRow.id == skill_id).values(spread=False))  # type: ignore[arg-type]
        session.commit()

    write(folders.project_skills_dir, "wake-up", schedule="0 8 * * *", message="Rise and shine")
    assert names((await sync()).updated) == ["wake-up"]
    skill = await engine.skills.get("wake-up", AGENT)
    assert not skill.spread and plan_message(skill) == "Rise and shine" and skill.schedule_id is not None
    description = await client.get_schedule_handle(skill.schedule_id).describe()
    assert description.schedule.spec.jitter is None
    assert all((t.hour, t.minute, t.second) == (8, 0, 0) for t in description.info.next_action_times)
    assert (await sync()).unchanged == ["wake-up"]

    write(folders.project_skills_dir, "wake-up", schedule="0 8 * * *", message="Rise and shine",
          metadata={"spread": True})
    assert names((await sync()).updated) == ["wake-up"]
    assert (await client.get_schedule_handle(skill.schedule_id).describe()).schedule.spec.jitter == \
        timedelta(minutes=5)


async def test_deleting_the_file_disables_the_skill_and_restoring_it_enables_it(
    engine: Engine, client: Client, folders: Settings, sync: Sync
) -> None:
    path = write(folders.project_skills_dir, "wake-up")
    await sync()
    shutil.rmtree(path.parent)

    result = await sync()
    assert names(result.disabled) == ["wake-up"] and result.disabled[0].change.reason == FILE_REMOVED
    skill = await engine.skills.get("wake-up", AGENT)
    assert not skill.enabled and skill.disabled_reason == "file removed"
    assert skill.schedule_id is not None
    state = (await client.get_schedule_handle(skill.schedule_id).describe()).schedule.state
    assert state.paused and state.note == "disabled: file removed"
    assert not (await sync()).disabled  # already disabled: nothing to do

    write(folders.project_skills_dir, "wake-up")
    back = await sync()
    assert names(back.updated) == ["wake-up"] and back.updated[0].change.enable
    skill = await engine.skills.get("wake-up", AGENT)
    assert skill.enabled and skill.disabled_reason is None
    assert not (await client.get_schedule_handle(skill.schedule_id).describe()).schedule.state.paused

    # A pause by a person is theirs: an edit of the file does not resume the skill.
    await engine.skills.pause(skill.id)
    write(folders.project_skills_dir, "wake-up", message="Still paused?")
    await sync()
    skill = await engine.skills.get("wake-up", AGENT)
    assert plan_message(skill) == "Still paused?" and not skill.enabled and skill.disabled_reason == "by user"


async def test_invalid_files_are_reported_and_the_others_still_sync(
    engine: Engine, folders: Settings, sync: Sync
) -> None:
    root = folders.project_skills_dir
    write(root, "wake-up")
    write(root, "bad-cron", schedule="0 25 * * *")
    write(
        root,
        "bad-tool",
        metadata={"execution_plan": [{"toolName": "outbox_send_mesage", "parameters": {"message": "hi"}}]},
    )
    write(root, "real-name", folder="other-folder")
    write(root, "typo", metadata={"execution_plan": [{"toolName": "outbox_send_message", "paramters": {}}]})
    (root / "broken").mkdir()
    (root / "broken" / "SKILL.md").write_text("---\nname: broken\ndescription: [unclosed\n---\nBody.\n")

    result = await sync()
    assert names(result.created) == ["wake-up"]
    refused = {r.name: " ".join(r.errors) for r in result.refused}
    assert set(refused) == {"bad-cron", "bad-tool", "real-name", "typo", "broken"}
    assert "hour 25 is out of range" in refused["bad-cron"]
    assert "unknown tool 'outbox_send_mesage'" in refused["bad-tool"]
    assert "Directory name 'other-folder' must match skill name 'real-name'" in refused["real-name"]
    assert "paramters" in refused["typo"]
    assert "Invalid YAML" in refused["broken"]
    assert [s.name for s in await engine.skills.list()] == ["wake-up"]

    # A stored skill whose file turns invalid keeps running as it was; it is reported, not disabled.
    write(root, "wake-up", schedule="61 * * * *")
    broken = await sync()
    assert "wake-up" in {r.name for r in broken.refused} and not broken.disabled and not broken.updated
    kept = await engine.skills.get("wake-up", AGENT)
    assert kept.enabled and kept.trigger_config is not None and kept.trigger_config.schedule == "30 6 * * *"


async def test_a_file_that_stops_scheduling_its_skill_disables_it_with_the_reason(
    engine: Engine, folders: Settings, sync: Sync
) -> None:
    write(folders.project_skills_dir, "wake-up")
    await sync()

    write(folders.project_skills_dir, "wake-up", default_enabled=False)
    off = await sync()
    assert [(d.change.name, d.change.reason) for d in off.disabled] == [("wake-up", DISABLED_IN_FILE)]

    write(folders.project_skills_dir, "wake-up", schedule=None)
    playbook = await sync()
    assert [(d.change.name, d.change.reason) for d in playbook.disabled] == [("wake-up", UNSCHEDULED_IN_FILE)]
    assert (await engine.skills.get("wake-up", AGENT)).disabled_reason == UNSCHEDULED_IN_FILE


async def test_the_bundled_skills_register_and_the_reminder_runs(client: Client, settings: Settings) -> None:
    engine = await Engine(settings.model_copy(update={"bundled_skills_dir": BUNDLED_DIR}), client).start()
    try:
        await _bundled(engine)
    finally:
        await engine.stop()


async def _bundled(engine: Engine) -> None:
    result = await Sync(engine)()
    assert names(result.created) == ["drink-water", "morning-briefing"] and result.refused == []

    reminder = await engine.skills.get("drink-water", AGENT)
    assert reminder.tier == "direct" and not reminder.notify_on_completion
    assert reminder.trigger_config is not None and reminder.trigger_config.schedule == "0 * * * *"
    # Hourly, and its exact second does not matter: jittered by default, on the real schedule too.
    assert reminder.jitter_seconds == 120 and reminder.schedule_id is not None
    spec = (await engine.skills.client.get_schedule_handle(reminder.schedule_id).describe()).schedule.spec
    assert spec.jitter == timedelta(seconds=120)
    briefing = await engine.skills.get("morning-briefing", AGENT)
    assert briefing.tier == "agent" and briefing.max_steps == 5
    assert briefing.required_tools == ["outbox_list_messages", "outbox_send_message"]
    assert briefing.trigger_config is not None and briefing.trigger_config.schedule == "0 7 * * *"
    # This worker has no LLM: the Agent-tier briefing waits, disabled, instead of failing every morning.
    assert not briefing.enabled and briefing.disabled_reason == "no LLM"
    again = await Sync(engine)()  # and the next round leaves it so: no flapping between file and worker
    assert (again.created, again.updated, again.disabled) == ([], [], [])

    run = await engine.skills.run("drink-water", AGENT)
    assert run.status == "success" and run.tool_calls[0].tool == "outbox_send_message"
    assert [m["message"] for m in engine.outbox()] == ["Time to drink a glass of water!"]


async def test_the_sync_schedule_is_created_idempotently_and_its_fire_syncs(
    engine: Engine, client: Client, folders: Settings, sync: Sync
) -> None:
    # The worker created it when it started; starting again updates it and keeps an operator's pause.
    handle = client.get_schedule_handle(f"{sync.queue}-sync-files")
    await handle.pause(note="paused by an operator")
    await ensure_engine_schedules(client, engine.settings)

    description = await handle.describe()
    schedule = description.schedule
    assert [i.every for i in schedule.spec.intervals] == [engine.settings.skill_sync_interval]
    assert isinstance(schedule.action, ScheduleActionStartWorkflow)
    assert (schedule.action.workflow, schedule.action.task_queue) == ("SyncSkillFiles", sync.queue)
    assert schedule.policy.overlap == ScheduleOverlapPolicy.SKIP
    assert schedule.state.paused and schedule.state.note == "paused by an operator"

    write(folders.project_skills_dir, "wake-up")
    await trigger_schedule(client, handle.id)
    skills = await eventually(lambda: engine.skills.list(agent_id=AGENT), timeout=30)
    assert [s.name for s in skills] == ["wake-up"]
    # The fire's sync is done (its registration included) before the worker is stopped.
    await eventually(lambda: _idle(handle), timeout=30)


async def _idle(handle: ScheduleHandle) -> bool:
    info = (await handle.describe()).info
    return bool(info.recent_actions) and not info.running_actions
