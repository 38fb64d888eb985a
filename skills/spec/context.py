"""What the registration normalizer needs from the world, given by its caller (``skills.spec.normalize``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from skills.run.arguments import ArgumentRules
from skills.spec.llm_models import ModelList
from skills.spec.models import TriggerConfig
from skills.when.spread import FIRES_PER_SECOND, Crowd


@dataclass(frozen=True)
class NormalizeContext:
    """What the normalizer needs from the world, given by its caller."""

    now: datetime
    """The current instant, time-zone aware."""
    default_timezone: str
    default_agent_id: str
    tool_catalog: Collection[str] | None = None
    """Names of the tools available now; None skips the tool check."""
    tool_schemas: Mapping[str, Mapping[str, Any]] | None = None
    """Each available tool's input JSON Schema, by name; None skips the parameter check."""
    argument_rules: ArgumentRules | None = None
    """The argument pipeline's rules, so a parameter is judged as a call would judge it."""
    destination_allowlists: Mapping[str, Mapping[str, Collection[str]]] = dataclasses.field(default_factory=dict)
    """tool -> parameter -> the values a ``deliver_to`` destination may give it (the owner's Telegram chats):
    a result is never sent where its owner did not allow."""
    reserved_agents: frozenset[str] = frozenset()
    """Agents this input may not register under: the files agent, for every caller but the SKILL.md sync
    (a skill there named like a SKILL.md would be given that file's toolsets and scripts)."""
    llm_models: Callable[[bool], ModelList] | None = None
    """The LLM endpoint's models (``True``: asked again, not a kept list), asked for only when a skill
    names one; None skips the check."""
    destructive_tools: tuple[Collection[str], Collection[str]] | None = None
    """The catalog's tools now, and those of them its servers mark destructive (``destructiveHint: true``):
    an ``approval_exempt_tools`` entry the catalog knows must be one of the latter; None skips the check."""
    skill_names: Callable[[str], Collection[str]] | None = None
    """The names of an agent's skills now, lowercased (``context_from``, ``{{skill:NAME.last}}``); None
    skips the check."""
    minute_crowd: Callable[[TriggerConfig], Crowd] | None = None
    """The busiest minute of a cron's next fires among the enabled skills stored (``skills.when.spread.crowd``
    over the store's counts), asked only for a new Agent-tier cron that is not a reminder; None: no minute is
    crowded, every exact time stays exact."""
    spread_fires_per_second: float = FIRES_PER_SECOND
    """What the workers start a second in a burst: a minute more skills share than they start within its
    spread is crowded (``SKILLS_SPREAD_FIRES_PER_SECOND``)."""
    notifier_tool: str = "outbox_send_message"
    """The tool that messages the owner (``SKILLS_NOTIFIER_TOOL``): a skill that calls nothing else is a reminder."""
