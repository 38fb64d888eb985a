"""Bundled example skills, registered by `skills dev` when they are not there yet."""

from __future__ import annotations

import logging

from skills.errors import SkillNotFoundError, SkillValidationError
from starter.client import SkillsClient

log = logging.getLogger("skills.sync")

EXAMPLES: list[dict[str, object]] = [
    {
        "name": "drink water",
        "description": "An hourly Direct-tier reminder: one fixed tool call, zero LLM tokens.",
        "trigger_config": {"schedule": "0 * * * *"},
        "instructions": "Remind the user to drink a glass of water.",
        "execution_plan": [
            {"id": "remind", "toolName": "outbox_send_message", "parameters": {"message": "Time to drink water!"}}
        ],
        "notify_on_completion": False,
    },
]


async def register_bundled(skills: SkillsClient) -> None:
    for example in EXAMPLES:
        name = str(example["name"])
        try:
            await skills.get(name)
            continue
        except SkillNotFoundError:
            pass
        try:
            result = await skills.register(example)
        except SkillValidationError as e:
            log.warning("bundled skill '%s' was refused: %s", name, e)
            continue
        log.info("registered bundled skill '%s' (next fire %s)", name, result.next_fire)
