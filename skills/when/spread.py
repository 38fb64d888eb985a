"""The spread of a schedule: how late, at most, Temporal may start each fire (the spec's ``jitter``), so that
skills sharing a minute (most of them the top of an hour) do not all start in the same second.

A skill either names its own (``jitter_seconds``), or asks for none (``spread: false``, said ``exact: true``),
or takes the default: up to :data:`MAX_DEFAULT_SPREAD`, and never more than a tenth of the shortest gap
between two of its fires, so ``* * * * *`` moves by 6 s at most and keeps its order. Only a cron gets the
default: a cron names a minute, and thousands of skills name the same one; an interval counts from when it
was set, so its fires are already apart, and a one-shot fires at the time it was given.

The default is on for a skill registered new; a skill stored before it keeps what its owner approved (no
spread) until its owner asks for one. Pure code.
"""

from __future__ import annotations

from datetime import timedelta

from skills.spec.models import SkillSpec, TriggerConfig
from skills.when.triggers import check_cron, expand_cron

MAX_DEFAULT_SPREAD = timedelta(minutes=5)
"""The default spread's cap: OpenClaw staggers top-of-hour jobs by up to 5 minutes."""
GAP_SHARE = 10
"""The default spread is at most the shortest gap between two fires divided by this."""


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
