"""Syncing file skills now, from a client: `skills sync`, and `skills dev` at start.

The sync runs on the worker (``SyncSkillFiles``) and reads the worker's folders:
bundled, user and project. A client only starts it and reads the result.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from temporalio.common import WorkflowIDConflictPolicy

from client.skills_client import SkillsClient
from skills.naming import SYNC_JOB, SYNC_SKILL_FILES, engine_job_id
from skills.skillmd.sync import SyncInput, SyncResult

log = logging.getLogger("skills.sync")

SYNC_TIMEOUT = timedelta(minutes=5)
"""A sync takes seconds; without a worker it would wait for one forever, so it gives up after this."""


async def sync_files(skills: SkillsClient, *, dry_run: bool = False, task_queue: str | None = None) -> SyncResult:
    """Run ``SyncSkillFiles`` now and return what it did (or, with ``dry_run``, would do)."""
    queue = task_queue or skills.task_queue
    now = engine_job_id(queue, f"{SYNC_JOB}-now")
    return await skills.client.execute_workflow(
        SYNC_SKILL_FILES,
        SyncInput(dry_run=dry_run),
        id=f"{now}-dry-run" if dry_run else now,
        task_queue=queue,
        result_type=SyncResult,
        static_summary="sync file skills now" + (" (dry run)" if dry_run else ""),
        execution_timeout=SYNC_TIMEOUT,
        # Two syncs asked for at once share one run rather than racing each other.
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
    )


async def register_bundled(skills: SkillsClient) -> SyncResult:
    """Sync the file skills (the bundled ones among them) and log what changed; `skills dev` calls it."""
    result = await sync_files(skills)
    for item in result.created:
        log.info("registered file skill '%s' from %s (next fire %s)", item.change.name, item.change.path,
                 item.next_fire)
    for item in result.updated:
        log.info("updated file skill '%s': %s", item.change.name, item.change.reason)
    for item in result.disabled:
        log.info("disabled file skill '%s': %s", item.change.name, item.change.reason)
    for refused in result.refused:
        log.warning("file skill %s refused: %s", refused.path or refused.name, "; ".join(refused.errors))
    return result
