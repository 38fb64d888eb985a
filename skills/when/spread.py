"""The spread of a schedule: how late, at most, Temporal may start each fire (the spec's ``jitter``), so that
skills sharing a minute (most of them the top of an hour) do not all start in the same second.

A skill either names its own (``jitter_seconds``), or asks for none (``spread: false``, said ``exact: true``),
or takes the default: up to :data:`MAX_DEFAULT_SPREAD`, and never more than a tenth of the shortest gap
between two of its fires, so ``* * * * *`` moves by 6 s at most and keeps its order. Only a cron gets the
default: a cron names a minute, and thousands of skills name the same one; an interval counts from when it
was set, so its fires are already apart, and a one-shot fires at the time it was given.

The default is for a new Agent-tier cron whose minute is crowded (:func:`crowded`): more skills share it
than the workers start within the spread, so without one the last of them would start later than the spread
would have made any of them. Alone in its minute, or one of a few, an exact time stays exact. A skill stored
before keeps what its owner approved until its owner asks. Pure code: the skills that share a minute are
counted by the caller's store and given to :func:`crowd`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from skills.spec.models import SkillSpec, TriggerConfig
from skills.when.triggers import check_cron, cron_next_times, expand_cron, zone_info

MAX_DEFAULT_SPREAD = timedelta(minutes=5)
"""The default spread's cap: OpenClaw staggers top-of-hour jobs by up to 5 minutes."""
GAP_SHARE = 10
"""The default spread is at most the shortest gap between two fires divided by this."""
FIRES_PER_SECOND = 8.0
"""What the workers start in a burst, a second (``SKILLS_SPREAD_FIRES_PER_SECOND``): one worker on the
machine of docs/performance.md starts 6.5 to 8.8 fires a second in an aligned burst of 10 to 300, so 2,400
skills share a minute before a 5-min spread helps them (48 for ``* * * * *``'s 6 s)."""
FIRES_LOOKED_AT = 24
"""The next fires of a new cron whose minutes are counted (a day of an hourly cron, 24 days of a daily one)."""


@dataclass(frozen=True)
class Crowd:
    """The busiest minute of a cron's next fires: the other enabled cron skills that fire in it."""

    skills: int = 0
    at: datetime | None = None
    """That minute, the first of the next fires with that many (None: the cron has no next fire)."""


def crowd(trigger: TriggerConfig, counts: Mapping[tuple[str, str], int], now: datetime) -> Crowd:
    """The crowd of ``trigger``'s busiest minute among its next :data:`FIRES_LOOKED_AT` fires after ``now``.
    ``counts``: the enabled cron skills stored, by (cron, time zone), each with how many share it. Counted by
    instant, so 08:30 in Berlin meets 07:30 in UTC; the days a schedule skips are not left out (an estimate:
    a skill that skips holidays shares the minute on every other day)."""
    if trigger.schedule is None:
        return Crowd()
    fires = cron_next_times(trigger.schedule, trigger.timezone or "UTC", now, FIRES_LOOKED_AT)
    sharing = [0] * len(fires)
    local: dict[str, tuple[list[datetime], frozenset[int]]] = {}  # by zone: the fires there, and their minutes
    for (schedule, zone), count in counts.items():
        try:
            fields = expand_cron(check_cron(schedule))
            if zone not in local:
                there = [fire.astimezone(zone_info(zone)) for fire in fires]
                local[zone] = there, frozenset(at.minute for at in there)
        except ValueError:
            continue  # a row that is not a cron any more is no one's minute
        there, minutes = local[zone]
        if fields.minutes is not None and minutes.isdisjoint(fields.minutes):
            continue  # most crons: none of their minutes is one of these fires'
        for i, at in enumerate(there):
            if (fields.minutes is None or at.minute in fields.minutes) and fields.fires_in(at.date(), at.hour):
                sharing[i] += count
    busiest = max(sharing, default=0)
    return Crowd(skills=busiest, at=fires[sharing.index(busiest)]) if fires else Crowd()


def crowded(found: Crowd, spread: int, fires_per_second: float) -> bool:
    """Whether a minute is crowded for a new skill: with it, more skills share it than the workers start
    within ``spread`` seconds at ``fires_per_second`` (0: every minute is crowded)."""
    return found.skills + 1 > fires_per_second * spread


def default_spread(trigger: TriggerConfig | None) -> int:
    """The default spread of ``trigger``, in whole seconds: for a cron, the least of
    :data:`MAX_DEFAULT_SPREAD` and a tenth of its shortest gap; 0 for anything else."""
    if trigger is None or trigger.kind != "cron" or trigger.schedule is None:
        return 0
    gap = shortest_gap(trigger.schedule)
    return int(min(MAX_DEFAULT_SPREAD, gap / GAP_SHARE).total_seconds())


def shortest_gap(schedule: str) -> timedelta:
    """At most the shortest time between two fires of a cron, from its minutes alone (a cron that fires
    once an hour or less often: an hour, which already gives the cap). Between the last minute of an hour
    and the first of the next counts as a gap whatever the hours say: a shorter gap than the true one only
    makes the spread smaller."""
    minutes = expand_cron(check_cron(schedule)).minutes
    if minutes is None:
        return timedelta(minutes=1)
    if len(minutes) == 1:
        return timedelta(hours=1)
    gaps = [later - earlier for earlier, later in zip(minutes, minutes[1:], strict=False)]
    gaps.append(60 - minutes[-1] + minutes[0])
    return timedelta(minutes=min(gaps))


def spread_seconds(trigger: TriggerConfig | None, jitter_seconds: int, spread: bool) -> int:
    """How late, at most, each fire may start: the skill's own ``jitter_seconds``, else the default when it
    takes one (``spread``); 0 for a one-shot, which fires at its time."""
    if trigger is None or trigger.kind not in ("cron", "interval"):
        return 0
    if jitter_seconds:
        return jitter_seconds
    return default_spread(trigger) if spread else 0


def skill_spread(spec: SkillSpec) -> int:
    """:func:`spread_seconds` of a skill (0 for one with no schedule)."""
    if not spec.is_scheduled:
        return 0
    return spread_seconds(spec.trigger_config, spec.jitter_seconds, spec.spread)
