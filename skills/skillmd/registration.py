"""File skills that schedule themselves: a SKILL.md whose ``metadata`` carries a
``trigger_config`` registers through the same registration workflow as any other skill.
A ``trigger_config`` of ``{event: NAME}`` makes it an event-type skill (run by ``skills emit``).

This module only builds the request; the sync that sends it lives with the workflows.
"""

from __future__ import annotations

from typing import Any

from skills.skillmd.limits import DEFAULT_LIMITS, Limits
from skills.skillmd.manifest import SkillFile, SkillManifest
from skills.skillmd.resources import SkillReader
from skills.spec.models import DEFAULT_MAX_STEPS, SHAPE_FIELDS

FILE_FIELDS = (*SHAPE_FIELDS, "skip_holidays", "business_days_only", "approval_required_tools",
               "approval_exempt_tools", "approval_timeout_minutes", "deliver", "remind_after_minutes")
"""Fields a scheduled SKILL.md gives in its ``metadata`` beside ``trigger_config``, passed on as written."""


def registration_request(skill: SkillFile, reader: SkillReader, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any] | None:
    """What a registration call would send for this file, or ``None`` if it has no ``trigger_config``:
    :func:`file_request`, with ``file_path`` and ``file_mtime``, which let a sync tell when the file is
    newer than the stored skill."""
    if skill.manifest.metadata.trigger_config is None:
        return None
    request = file_request(skill.manifest, reader.read_body(skill, limits))
    return None if request is None else {**request, "file_path": str(skill.path), "file_mtime": skill.mtime}


def file_request(manifest: SkillManifest, body: str) -> dict[str, Any] | None:
    """The skill a file with a ``trigger_config`` registers as, or ``None`` without one: what the sync
    sends to the registration and what ``skills validate`` and install judge, by the same normalizer.

    ``trigger_config`` is passed on as written (the registration normalizer turns ``in_minutes`` into
    ``at`` and checks the cron). ``execution_plan`` and ``notify_on_completion`` are sent only when the
    file has them.
    """
    metadata = manifest.metadata
    if metadata.trigger_config is None:
        return None
    request: dict[str, Any] = {
        "name": manifest.name,
        "description": manifest.description,
        "instructions": body,
        "trigger_type": "event" if "event" in metadata.trigger_config else "cron",
        "trigger_config": dict(metadata.trigger_config),
        "required_tools": list(metadata.required_tools),
        "max_steps": metadata.max_steps or DEFAULT_MAX_STEPS,
    }
    if metadata.execution_plan is not None:
        request["execution_plan"] = [
            step.model_dump(by_alias=True, exclude_none=True) for step in metadata.execution_plan
        ]
    if metadata.notify_on_completion is not None:
        request["notify_on_completion"] = metadata.notify_on_completion
    # The schedule's shape, its skipped days and the calls that need the owner's yes, as written: the
    # normalizer checks each (metadata keeps keys it does not type).
    extra = metadata.model_extra or {}
    request |= {key: extra[key] for key in FILE_FIELDS if extra.get(key) is not None}
    return request
