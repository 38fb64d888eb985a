"""Collisions: a new skill that closely repeats one its agent already has.

"Remind me to drink water every hour", said twice in two chats a week apart, makes two skills that
message the owner twice an hour. A registration (and a chat's proposal) says so and names the one
it repeats, so the owner can update that one instead. Close means any of:

- the same work: the same plan (each step's tool and arguments), or, for the Agent tier, the same
  tools, *and* fire times that meet (one of the next fires of each is the same instant);
- near-identical instructions (a similarity of 0.9 or more, case and spacing aside).

It is a note, never a refusal: two skills may rightly do the same thing at the same time (one per
chat, one per family member). Pure: the caller gives the agent's skills and the time.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Iterable
from datetime import UTC, datetime

from pydantic import BaseModel

from skills.spec.models import Skill, SkillSpec
from skills.when.calendar import spec_fires

SIMILAR_INSTRUCTIONS = 0.9
"""How alike two skills' instructions must be (difflib's ratio) to be one task written twice."""
FIRES_COMPARED = 24
"""Next fires of each skill compared for an instant they share (a day of hourly fires)."""
MAX_NAMED = 3
"""Skills one note names at most."""
MAX_COMPARED = 500
"""Skills of the agent a registration compares with (the newest): a check, not a scan of a large catalog."""
MAX_COMPARED_CHARS = 4_000
"""Instructions longer than this are compared only when equal (difflib's ratio is quadratic)."""


class Collision(BaseModel):
    skill_id: int
    name: str
    reasons: list[str]


def collisions(spec: SkillSpec, others: Iterable[Skill], now: datetime) -> list[Collision]:
    """The skills of ``others`` (the same agent's, the skill itself excluded by the caller) that ``spec``
    closely repeats, most reasons first."""
    found: list[Collision] = []
    fires: dict[str, set[datetime]] = {}  # by trigger: the skills a registration repeats mostly share theirs
    mine = _cached(fires, spec, now, anchor=now)
    for other in others:
        if other.agent_id != spec.agent_id:
            continue
        reasons: list[str] = []
        same_work = _same_work(spec, other)
        if same_work and mine and mine & _cached(fires, other, now):
            reasons += [same_work, "fire times that meet"]
        elif same_work and not mine and not other.is_scheduled:
            reasons.append(same_work)  # two on-demand skills doing one thing
        if _similar(spec.instructions, other.instructions):
            reasons.append("near-identical instructions")
        if reasons:
            found.append(Collision(skill_id=other.id, name=other.name, reasons=reasons))
    return sorted(found, key=lambda c: -len(c.reasons))[:MAX_NAMED]


def collision_note(found: list[Collision]) -> str | None:
    """The registration's note (a chat's proposal shows it): which skills, why, and what to do instead."""
    if not found:
        return None
    named = "; ".join(f"skill {c.skill_id} '{c.name}' ({', '.join(c.reasons)})" for c in found)
    first = found[0]
    return (f"closely repeats {named}: to change that one instead, update it (memory_update_skill with skill_id "
            f"{first.skill_id}, or `skills update {first.skill_id}`)")


def _same_work(spec: SkillSpec, other: SkillSpec) -> str | None:
    if spec.execution_plan and other.execution_plan:
        mine = [(s.tool_name, s.parameters) for s in spec.execution_plan]
        theirs = [(s.tool_name, s.parameters) for s in other.execution_plan]
        return "the same plan" if mine == theirs else None
    if not spec.execution_plan and not other.execution_plan and spec.required_tools:
        return "the same tools" if set(spec.required_tools) == set(other.required_tools) else None
    return None


def _cached(cache: dict[str, set[datetime]], skill: SkillSpec, now: datetime,
            anchor: datetime | None = None) -> set[datetime]:
    """``_fires`` of ``skill``, once per distinct trigger (an interval's fires depend on when it began:
    ``anchor``, else the stored skill's creation)."""
    trigger = skill.trigger_config
    begun = anchor or skill.created_at  # type: ignore[attr-defined]
    key = trigger.model_dump_json() if trigger is not None else ""
    if trigger is not None and trigger.interval_minutes is not None:
        key += begun.isoformat()
    key += f"|{skill.enabled}|{skill.is_scheduled}"
    if key not in cache:
        cache[key] = _fires(skill, now, anchor=begun)
    return cache[key]


def _fires(spec: SkillSpec, now: datetime, anchor: datetime) -> set[datetime]:
    """The schedule's next fires (an interval counted from ``anchor``), as the calendar says them: the days
    it skips left out, and none past its end."""
    if not spec.enabled or not spec.is_scheduled or spec.trigger_config is None:
        return set()
    try:
        started = (at for at, reason in spec_fires(spec, anchor=anchor, now=now) if reason is None)
        return {at.astimezone(UTC) for at in itertools.islice(started, FIRES_COMPARED)}
    except ValueError:
        return set()


_SPACES = re.compile(r"\s+")
_WORDS = re.compile(r"\w+")
SIMILAR_WORDS = 0.6
"""Of two texts' distinct words, the share both have below which they are not compared further."""


def _similar(a: str, b: str) -> bool:
    a, b = _SPACES.sub(" ", a.strip().lower()), _SPACES.sub(" ", b.strip().lower())
    if not a or not b:
        return False
    if a == b:
        return True
    if min(len(a), len(b)) < SIMILAR_INSTRUCTIONS * max(len(a), len(b)) or max(len(a), len(b)) > MAX_COMPARED_CHARS:
        return False  # lengths too far apart to be 0.9 alike; or too long to compare at every registration
    words_a, words_b = set(_WORDS.findall(a)), set(_WORDS.findall(b))
    if len(words_a & words_b) < SIMILAR_WORDS * len(words_a | words_b):
        return False  # a cheap first look: texts 0.9 alike share most of their words
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return matcher.quick_ratio() >= SIMILAR_INSTRUCTIONS and matcher.ratio() >= SIMILAR_INSTRUCTIONS
