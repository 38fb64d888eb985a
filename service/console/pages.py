"""What each page of the console shows, read from the engine as the CLI reads it.

Every figure comes from :class:`~client.SkillsClient` (the store, through the worker's read activities) and
Temporal, or from the pure rules the CLI applies to what it read: the week from the calendar `skills next`
reads (``skills.when.calendar``), a skill's next fires from ``forecast`` itself, its reach from the one
classification (``skills.owner.reach``). Nothing here is a model's words. Each function takes ``now``.
"""

from __future__ import annotations

import asyncio
import difflib
import json
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import ValidationError

from client import SkillsClient
from client.trust import trust_states
from skills.chat.proposals import widening
from skills.display import span
from skills.errors import SkillsError
from skills.messages.maintenance import OverdueSkills
from skills.messages.manage import RegistrationResult
from skills.owner.approvals import Approval
from skills.owner.reach import spec_lines, spec_reach
from skills.run.incidents import Incident
from skills.spec.models import BY_USER, ENDED, FIRED, RunRecord, Skill, SkillSpec
from skills.spec.revisions import Revision, changed_fields
from skills.when.calendar import Forecast, forecast, spec_fires
from skills.when.outlook import HORIZON_DAYS, Outlook, messages_per_run, outlook, tokens_ahead
from skills.when.spread import skill_spread

WEEK_DAYS = 7
MAX_FIRES_A_WEEK = 28
"""Fires of one skill drawn in the week: a skill that fires more often (every hour, every minute) is listed
apart, with its first fire and how often, instead of filling every day."""
ENGINE_REASONS_NORMAL = frozenset({BY_USER, FIRED, ENDED})
"""Why a skill may be disabled without anything having gone wrong."""


# --- the week -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fire:
    skill: Skill
    at: datetime
    """In the owner's zone."""
    skipped: str | None = None
    """Why the schedule does not start this day's fires (a holiday's name, ``weekend``)."""
    spread_seconds: int = 0


@dataclass
class Day:
    day: date
    fires: list[Fire] = field(default_factory=list)


@dataclass
class Frequent:
    skill: Skill
    first: datetime
    trigger: str


@dataclass
class Paused:
    skill: Skill
    why: str
    fires: int
    """Fires it would have in the week, were it enabled (at most ``MAX_FIRES_A_WEEK``, then "more")."""
    more: bool = False


@dataclass
class Week:
    start: datetime
    zone: str
    days: list[Day]
    frequent: list[Frequent] = field(default_factory=list)
    paused: list[Paused] = field(default_factory=list)
    unscheduled: int = 0
    """Skills with no schedule (run by events, hooks, by hand): nothing to draw."""


def paused_reason(skill: Skill) -> str:
    """As ``skills next`` says it (``Forecast.paused``)."""
    return f"disabled ({skill.disabled_reason or 'by user'})"


@dataclass(frozen=True)
class _Fires:
    """A skill's fires from ``since`` on, each yielded by ``spec_fires``; complete up to ``until``."""

    key: tuple[Any, ...]
    since: datetime
    until: datetime
    fires: tuple[tuple[datetime, str | None], ...]


class FireCache:
    """The fires of each skill computed for one week, kept for the weeks asked within :data:`CACHE_SLACK` after:
    a page of 200 skills is some 2,000 fires, about 0.1 s of CPU computed afresh (docs/performance.md). An entry is
    used only for a skill whose schedule inputs (what ``spec_fires`` reads) are unchanged, and only for a
    window inside what it computed; else the fires are computed again."""

    def __init__(self) -> None:
        self._entries: dict[int, _Fires] = {}

    @staticmethod
    def key(skill: Skill) -> tuple[Any, ...]:
        trigger = skill.trigger_config.model_dump_json() if skill.trigger_config else None
        return (trigger, skill.trigger_type, skill.skip_holidays, skill.business_days_only, skill.end_at,
                skill.max_runs, skill.scheduled_runs, skill.created_at)

    def fires(self, skill: Skill, *, now: datetime, end: datetime) -> list[tuple[datetime, str | None]]:
        """The skill's fires after ``now`` up to ``end``, at most ``MAX_FIRES_A_WEEK + 1`` of them."""
        key = self.key(skill)
        entry = self._entries.get(skill.id)
        # A skipped day is marked at its first fire after ``now``: past the entry's marker, compute it again.
        if entry is not None and entry.key == key and entry.since <= now and not any(
                reason and entry.since < at <= now for at, reason in entry.fires):
            found = [(at, reason) for at, reason in entry.fires if now < at <= end]
            if end <= entry.until or len(found) > MAX_FIRES_A_WEEK:
                return found[:MAX_FIRES_A_WEEK + 1]
        horizon = end + CACHE_SLACK
        fires: list[tuple[datetime, str | None]] = []
        complete = horizon
        for at, reason in spec_fires(skill, anchor=skill.created_at, now=now):
            if at > horizon:
                break
            if len(fires) > MAX_FIRES_A_WEEK:
                complete = fires[-1][0]
                break
            fires.append((at, reason))
        if skill.max_runs is None:  # the runs left count from ``now``: a later window counts otherwise
            self._entries[skill.id] = _Fires(key, now, complete, tuple(fires))
        return [(at, reason) for at, reason in fires if at <= end][:MAX_FIRES_A_WEEK + 1]

    def keep_only(self, ids: set[int]) -> None:
        for gone in set(self._entries) - ids:
            del self._entries[gone]


CACHE_SLACK = timedelta(days=1)
"""How far past the week an entry computes, so the weeks asked in the next day reuse it."""


def week(skills: list[Skill], *, now: datetime, zone: ZoneInfo, days: int = WEEK_DAYS,
         cache: FireCache | None = None) -> Week:
    """The fires of ``skills`` from ``now`` to ``days`` days on, by day in ``zone``: the schedule's own times
    (``spec_fires``, the calendar ``skills next`` lists from), the first fire of each day a skip list removes
    marked with why. Disabled skills are counted apart: they fire nothing until resumed. ``cache`` keeps each
    skill's fires for the next call (:class:`FireCache`)."""
    cache = cache if cache is not None else FireCache()
    end = now + timedelta(days=days)
    today = now.astimezone(zone).date()
    by_day = {today + timedelta(days=i): Day(today + timedelta(days=i)) for i in range(days + 1)}
    found = Week(start=now.astimezone(zone), zone=str(zone), days=[])
    for skill in skills:
        if skill.trigger_config is None or not skill.is_scheduled:
            found.unscheduled += 1
            continue
        fires = cache.fires(skill, now=now, end=end)
        crowded = len(fires) > MAX_FIRES_A_WEEK
        if not skill.enabled:
            started = sum(reason is None for _, reason in fires[:MAX_FIRES_A_WEEK])
            found.paused.append(Paused(skill, paused_reason(skill), started, more=crowded))
            continue
        if crowded:
            found.frequent.append(Frequent(skill, fires[0][0].astimezone(zone), skill.trigger_config.describe()))
            continue
        spread = skill_spread(skill)
        for at, reason in fires:
            local = at.astimezone(zone)
            by_day[local.date()].fires.append(Fire(skill, local, reason, spread))
    cache.keep_only({skill.id for skill in skills})
    for day in by_day.values():
        day.fires.sort(key=lambda fire: (fire.at, fire.skill.name))
    found.days = [day for day in by_day.values() if day.day <= end.astimezone(zone).date()]
    found.paused.sort(key=lambda paused: paused.skill.name)
    return found


# --- waiting for you ------------------------------------------------------------------------------


async def waiting(skills: SkillsClient) -> list[Approval]:
    """What ``skills approvals`` lists: the pending approvals, newest first."""
    return await skills.approvals(limit=500)


# --- what went wrong ------------------------------------------------------------------------------


@dataclass
class Trouble:
    incidents: list[Incident]
    failing: list[Skill]
    """Enabled skills whose last runs failed (``consecutive_failures``), with their backoff."""
    disabled: list[Skill]
    """Disabled by the engine (failures, budget, missing tools, no LLM, a missed one-shot)."""
    overdue: OverdueSkills
    now: datetime


async def trouble(skills: SkillsClient, *, now: datetime) -> Trouble:
    incidents, listed, overdue = await asyncio.gather(skills.incidents(limit=200), skills.list(),
                                                      skills.overdue(limit=100))
    return Trouble(
        incidents=incidents,
        failing=[s for s in listed if s.enabled and s.consecutive_failures],
        disabled=[s for s in listed if not s.enabled and (s.disabled_reason or BY_USER) not in ENGINE_REASONS_NORMAL],
        overdue=overdue, now=now)


# --- a skill's next 30 days ----------------------------------------------------------------------


@dataclass(frozen=True)
class OutlookDay:
    """One day of a skill's next 30 days: its runs, their messages and tokens (None: not estimated)."""

    day: date
    runs: int
    messages: int
    tokens: int | None
    skipped: str | None = None
    """Why the schedule starts no fire this day (a holiday's name, ``weekend``), as ``skills next`` says."""


@dataclass
class Ahead:
    """A skill's next 30 days: the totals ``skills get`` prints (``skills.when.outlook.outlook``) and the same
    count day by day, in the console's zone."""

    outlook: Outlook
    days: list[OutlookDay]
    drawn: bool = True
    """False: more than :data:`MAX_DRAWN` fires, not counted by day (``days`` empty); the totals stand."""

    @property
    def max_drawn(self) -> int:
        return MAX_DRAWN

    @property
    def top_runs(self) -> int:
        return max((d.runs for d in self.days), default=0)

    @property
    def top_messages(self) -> int:
        return max((d.messages for d in self.days), default=0)

    @property
    def top_tokens(self) -> int:
        return max((d.tokens or 0 for d in self.days), default=0)

    @property
    def skipped(self) -> list[OutlookDay]:
        return [d for d in self.days if d.skipped]


MAX_DRAWN = 3_000
"""Fires counted by day at most (every 15 minutes is 2,880 in 30 days): a fire takes some tens of microseconds of
CPU (croniter's step near a clock change, 0.1 ms), and the totals count them all once already (a skill every
minute: 43,200)."""


def run_tokens(runs: list[RunRecord]) -> list[int]:
    """The tokens of recorded Agent-tier runs that succeeded: what ``skills get`` estimates a run's from."""
    return [r.prompt_tokens + r.completion_tokens for r in runs if r.tier == "agent" and r.status == "success"]


def ahead(skill: Skill, *, now: datetime, zone: ZoneInfo, notifier_tool: str, own_tokens: list[int],
          similar_tokens: list[int], price: float | None = None) -> Ahead:
    """The next 30 days of ``skill`` as ``skills get`` forecasts them (``outlook``, the same inputs: its
    scheduled runs so far, its own recorded tokens, else its model's), and the same runs by day: the fires
    ``outlook`` counts (``spec_fires``: the schedule, its skipped days, ``end_at``, what ``max_runs`` leaves),
    each day's messages and tokens by the same rules (``messages_per_run``, ``tokens_ahead``). A disabled skill
    has none, as in ``skills get``. The days sum to the totals (a test holds it). A skill of more than
    :data:`MAX_DRAWN` fires has its totals only."""
    totals = outlook(skill, now, anchor=skill.created_at, done=skill.scheduled_runs, notifier_tool=notifier_tool,
                     own_tokens=own_tokens, similar_tokens=similar_tokens, price=price)
    end = now + timedelta(days=HORIZON_DAYS)
    first, last = now.astimezone(zone).date(), end.astimezone(zone).date()
    runs = {first + timedelta(days=i): 0 for i in range((last - first).days + 1)}
    skipped: dict[date, str] = {}
    if totals.runs > MAX_DRAWN:
        return Ahead(totals, [], drawn=False)
    if skill.enabled:
        try:
            for at, reason in spec_fires(skill, anchor=skill.created_at, now=now):
                if at > end:
                    break
                day = at.astimezone(zone).date()
                if reason is None:
                    runs[day] += 1
                else:
                    skipped.setdefault(day, reason)
        except ValueError:
            pass  # past the years Temporal schedules: no fire there (as ``runs_ahead``)
    each, _ = messages_per_run(skill, notifier_tool)
    agent = not skill.execution_plan

    def tokens(count: int) -> int | None:
        return tokens_ahead(count, own_tokens, similar_tokens, skill.model)[0] if agent else None

    days = [OutlookDay(day, count, count * each, tokens(count), skipped.get(day) if not count else None)
            for day, count in runs.items()]
    return Ahead(totals, days)


# --- a skill's revisions ----------------------------------------------------------------------------


@dataclass(frozen=True)
class DiffLine:
    kind: str
    """``add``, ``del``, ``hunk`` or ``same``: the line's class on the page."""
    text: str


@dataclass
class RevisionView:
    revision: Revision
    changed: list[str]
    """The fields it changed (``skills history``'s CHANGED)."""
    diff: list[DiffLine]
    """Its spec against the revision before it, as text."""
    before_kept: bool
    """False: the revision before is no longer kept (or there is none): the diff is against nothing."""
    current: bool
    """The skill as it is now: nothing to revert to."""
    widens: list[str]
    """How reverting to it would widen what the skill's runs do (``skills.chat.proposals.widening``)."""


def spec_text(spec: dict[str, Any] | None) -> list[str]:
    return json.dumps(spec, indent=2, sort_keys=True, ensure_ascii=False, default=str).splitlines() if spec else []


def diff_lines(before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[DiffLine]:
    """``after`` against ``before``, each a spec as indented JSON, as a unified diff's lines (no file header)."""
    lines = []
    for line in difflib.unified_diff(spec_text(before), spec_text(after), lineterm="", n=2):
        if line.startswith(("---", "+++")):
            continue
        kind = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "same")
        lines.append(DiffLine(kind, line))
    return lines


def revision_views(skill: Skill, revisions: list[Revision]) -> list[RevisionView]:
    """``revisions`` (newest first, as ``skills history`` lists them), each with its diff against the one
    before and what reverting to it would widen."""
    views = []
    for i, revision in enumerate(revisions):
        previous = revisions[i + 1] if i + 1 < len(revisions) else None
        kept = previous is not None and previous.rev == revision.rev - 1
        try:
            widens = widening(skill, SkillSpec.model_validate(revision.spec))
        except (ValidationError, ValueError) as e:
            widens = [f"not known: {e}"]
        views.append(RevisionView(revision, changed_fields(revision),
                                  diff_lines(previous.spec if kept and previous else None, revision.spec),
                                  kept, revision.rev == skill.revision, widens))
    return views


def registered_lines(result: RegistrationResult, verb: str, zone: ZoneInfo) -> list[str]:
    """What ``skills revert`` prints of the engine's answer (``starter.skill_text.registered``): the skill, its
    schedule and next fire, its trigger, why it is disabled, and the engine's notes."""
    skill = result.skill
    assert skill is not None
    trigger = skill.trigger_config.describe() if skill.trigger_config else skill.trigger_type
    lines = [f"{verb} skill {skill.id} '{skill.name}' (agent {skill.agent_id}, {skill.tier} tier)"]
    if skill.schedule_id:
        spread = skill_spread(skill)
        at = result.next_fire.astimezone(zone).isoformat(timespec="seconds") if result.next_fire else "-"
        lines += [f"schedule: {skill.schedule_id}: {trigger}",
                  f"next fire: {at}" + (f" (spread up to {span(timedelta(seconds=spread))})"
                                        if spread and result.next_fire else "")]
    if skill.subscribed_event:
        lines.append(f"trigger: {trigger} (`skills emit {skill.subscribed_event}`)")
    if not skill.enabled:
        lines.append(f"disabled: {skill.disabled_reason}")
    return lines + [f"note: {note}" for note in result.notes]


# --- a skill --------------------------------------------------------------------------------------


@dataclass
class SkillPage:
    skill: Skill
    state: str
    next_fire: datetime | None
    """As Temporal computes it (None: paused or unscheduled)."""
    forecast: Forecast
    reach: dict[str, Any]
    reach_lines: list[str]
    trust: str
    runs: list[RunRecord]
    incidents: list[Incident]
    waiting: list[Approval]
    ahead: Ahead
    revisions: list[RevisionView]


NEXT_FIRES = 10
"""Fires a skill's page lists: what ``skills next`` lists by default."""
REVISIONS = 20
"""Revisions a skill's page lists, newest first."""


def state(skill: Skill, now: datetime) -> str:
    """As ``skills list`` and ``skills get`` say it."""
    ended = skill.ended(now)
    if ended is not None and (skill.enabled or skill.disabled_reason == ENDED):
        return f"ended ({ended})"
    return "enabled" if skill.enabled else paused_reason(skill)


async def skill_page(skills: SkillsClient, ref: str, *, now: datetime, zone: ZoneInfo, notifier_tool: str,
                     llm_model: str, price: float | None = None) -> SkillPage:
    """``llm_model``: the engine's default model, for an Agent skill with none of its own and no run yet (its
    tokens estimated from other skills' runs on that model, as ``skills get`` does)."""
    skill = await skills.get(ref)
    next_fire, recent, incidents, waiting_now, trusted, revisions = await asyncio.gather(
        skills.next_fire(skill), skills.runs(skill.id, limit=20), skills.incidents(skill.id, closed=True, limit=20),
        skills.approvals(skill_id=skill.id), _trust(skills, skill), skills.history(skill.id, limit=REVISIONS + 1))
    own = run_tokens(recent)
    similar: list[int] = []
    if not own and not skill.execution_plan:
        model = skill.model or llm_model
        similar = run_tokens([r for r in await skills.runs(limit=200) if r.model == model])
    # A skill firing every minute is some 43,000 fires to count (seconds of CPU): off the event loop.
    days = await asyncio.to_thread(ahead, skill, now=now, zone=zone, notifier_tool=notifier_tool, own_tokens=own,
                                   similar_tokens=similar, price=price)
    return SkillPage(skill=skill, state=state(skill, now), next_fire=next_fire,
                     forecast=forecast(skill, now=now, count=NEXT_FIRES), reach=spec_reach(skill),
                     reach_lines=spec_lines(skill), trust=trusted, runs=recent, incidents=incidents,
                     waiting=waiting_now, ahead=days, revisions=revision_views(skill, revisions)[:REVISIONS])


async def _trust(skills: SkillsClient, skill: Skill) -> str:
    """A SKILL.md skill's trust as ``skills show`` says it; a skill registered through the engine (the CLI,
    the chat, MCP) was the owner's own act."""
    try:
        states = await trust_states(skills, [skill.name])
    except SkillsError as e:
        return f"not known: {e}"
    found = states.get(skill.name)
    if found is None:
        return "registered through the engine (no SKILL.md): its reach is what was registered"
    return f"{found.status}: {found.describe()}"
