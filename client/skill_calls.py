"""Skills and their revisions, from a client: registered, changed, paused, deleted, reverted (each a workflow run
to its end) and read (a standalone activity), with their next fires.

A part of :class:`client.skills_client.SkillsClient` (:mod:`client.base`).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from client import schedules
from client.base import ClientBase, raise_refusal, refuse_oversize
from skills.errors import SkillNotFoundError, SkillValidationError
from skills.messages.manage import (
    BulkRegistrationResult,
    ChangeInput,
    ChangeResult,
    HistoryQuery,
    ItemRegistration,
    RegisterInput,
    RegisterManyInput,
    RegistrationResult,
    SkillFilter,
    SkillRef,
)
from skills.naming import CHANGE_SKILL, LIST_REVISIONS, LIST_SKILLS, REGISTER_SKILL, REGISTER_SKILLS, slug
from skills.spec.limits import body_too_large, json_size
from skills.spec.models import BY_USER, Skill
from skills.spec.revisions import Revision, revert_data
from skills.when.calendar import MAX_UPCOMING, Forecast, forecast

BULK_BATCH = 200
BULK_BATCH_BYTES = 1024 * 1024
"""A bulk registration is sent in batches of at most this many items and bytes (JSON): well within a
Temporal payload."""
BULK_WORKFLOWS = 2
"""Batches registered at once."""
BULK_TIMEOUT = timedelta(minutes=15)


class SkillCalls(ClientBase):
    """A skill's life: registration, changes, revisions, reads."""

    async def register(self, data: dict[str, Any]) -> RegistrationResult:
        """Register a new skill; raise SkillValidationError naming every problem."""
        refuse_oversize(data)
        name = str(data.get("name") or "unnamed") if isinstance(data, dict) else "unnamed"
        return _ok(await self.calls.workflow(REGISTER_SKILL, RegisterInput(data=data, by=self.attribution), RegistrationResult,
                                        f"register-{slug(name)}", f"register '{name}'"))

    async def register_many(self, items: list[Any]) -> BulkRegistrationResult:
        """Register many new skills (a folder of files, a list): each is normalized, stored and scheduled on
        its own, and refused on its own, by its index in ``items``; a refused one leaves nothing stored.

        Sent in batches (at most ``BULK_BATCH`` items and ``BULK_BATCH_BYTES`` each), a RegisterSkills
        workflow a batch, a few at a time; nothing is raised for a refused item."""
        refused: list[ItemRegistration] = []
        batches: list[tuple[int, list[Any]]] = []
        batch: list[Any] = []
        first = size = 0
        for index, data in enumerate(items):
            oversize = body_too_large(data)
            if oversize is not None:
                name = str(data.get("name") or "") if isinstance(data, dict) else ""
                refused.append(ItemRegistration(index=index, name=name, ok=False, errors=[oversize]))
                if batch:  # a batch holds consecutive items: its positions are first_index + offset
                    batches.append((first, batch))
                    batch, size = [], 0
                continue
            item_size = json_size(data)
            if batch and (len(batch) >= BULK_BATCH or size + item_size > BULK_BATCH_BYTES):
                batches.append((first, batch))
                batch, size = [], 0
            if not batch:
                first = index
            batch.append(data)
            size += item_size
        if batch:
            batches.append((first, batch))
        gate = asyncio.Semaphore(BULK_WORKFLOWS)

        async def send(first_index: int, chunk: list[Any]) -> list[ItemRegistration]:
            async with gate:
                result = await self.calls.workflow(REGISTER_SKILLS, _indexed(first_index, chunk, self.attribution),
                                              BulkRegistrationResult,
                                              "register-many", f"register {len(chunk)} skills",
                                              timeout=BULK_TIMEOUT)
            return result.items

        done = await asyncio.gather(*(send(first_index, chunk) for first_index, chunk in batches))
        return BulkRegistrationResult(items=sorted([*refused, *(i for part in done for i in part)],
                                                   key=lambda item: item.index))

    async def update(self, ref: str | int, patch: dict[str, Any], agent_id: str | None = None) -> RegistrationResult:
        """Change some fields of a skill; the merged skill is validated again."""
        refuse_oversize(patch)
        target = SkillRef(ref=str(ref), agent_id=agent_id)
        return _ok(await self.calls.workflow(REGISTER_SKILL, RegisterInput(data=patch, target=target, by=self.attribution),
                                        RegistrationResult, f"update-{slug(str(ref))}", f"update '{ref}'"))

    async def revert(self, ref: str | int, rev: int, agent_id: str | None = None) -> RegistrationResult:
        """Restore revision ``rev`` of a skill (its definition, and so its schedule) through the road of every
        update, validated again; recorded as a revision of its own. A deleted skill is registered again."""
        [revision] = await self.calls.read(LIST_REVISIONS, HistoryQuery(skill=SkillRef(ref=str(ref), agent_id=agent_id),
                                                                   rev=rev), list[Revision])
        data = revert_data(revision)
        gone = revision.action == "deleted" or not await self._exists(revision.skill_id)
        target = None if gone else SkillRef(ref=str(revision.skill_id))
        return _ok(await self.calls.workflow(REGISTER_SKILL, RegisterInput(data=data, target=target, by=self.attribution,
                                                                      reverts=rev),
                                        RegistrationResult, f"revert-{slug(str(ref))}", f"revert '{ref}' to {rev}"))

    async def _exists(self, skill_id: int) -> bool:
        try:
            await self.get(skill_id)
        except SkillNotFoundError:
            return False
        return True

    async def delete(self, ref: str | int, agent_id: str | None = None) -> Skill:
        return await self._change(ref, agent_id, "delete")

    async def pause(self, ref: str | int, agent_id: str | None = None, reason: str = BY_USER) -> Skill:
        return await self._change(ref, agent_id, "pause", reason)

    async def resume(self, ref: str | int, agent_id: str | None = None) -> Skill:
        return await self._change(ref, agent_id, "resume")

    async def _change(self, ref: str | int, agent_id: str | None, action: str, reason: str = BY_USER) -> Skill:
        request = ChangeInput(target=SkillRef(ref=str(ref), agent_id=agent_id), action=action, reason=reason,
                              by=self.attribution)
        result = await self.calls.workflow(CHANGE_SKILL, request, ChangeResult, f"{action}-{slug(str(ref))}",
                                      f"{action} '{ref}'")
        if not result.ok:
            raise_refusal(result.errors)
        assert result.skill is not None
        return result.skill

    async def list(self, agent_id: str | None = None, enabled: bool | None = None,
                   trigger_type: str | None = None) -> list[Skill]:
        flt = SkillFilter(agent_id=agent_id, enabled=enabled, trigger_type=trigger_type)
        return await self.calls.read(LIST_SKILLS, flt, list[Skill])

    async def history(self, ref: str | int, agent_id: str | None = None, limit: int = 50) -> list[Revision]:
        """A skill's revisions, newest first (a deleted skill's too, by its name or id)."""
        query = HistoryQuery(skill=SkillRef(ref=str(ref), agent_id=agent_id), limit=limit)
        return await self.calls.read(LIST_REVISIONS, query, list[Revision])

    async def next(self, ref: str | int, agent_id: str | None = None, count: int = 10) -> Forecast:
        """The skill's next ``count`` fires in its time zone, the ones its skipped days (business days,
        holidays) remove marked with why: computed here from the skill the worker reads, by the rules its
        schedule was built with (``skills.when.calendar``), so no schedule is described."""
        if not 1 <= count <= MAX_UPCOMING:
            raise SkillValidationError.single("count", f"must be 1 to {MAX_UPCOMING} (got {count})")
        return forecast(await self.get(ref, agent_id), now=datetime.now(UTC), count=count)

    async def next_fire(self, skill: Skill) -> datetime | None:
        """When the skill's schedule fires next, as Temporal computes it (None if paused or unscheduled)."""
        if not skill.schedule_id or not skill.enabled:
            return None
        return await schedules.next_fire(self.client, skill.schedule_id)


def _indexed(first_index: int, items: list[Any], by: str = "") -> RegisterManyInput:
    """A batch of consecutive items of the caller's list, from position ``first_index``."""
    return RegisterManyInput(items=items, first_index=first_index, by=by)


def _ok(result: RegistrationResult) -> RegistrationResult:
    if not result.ok:
        raise_refusal(result.errors)
    return result
