"""Token budgets: a cap per run, a daily budget per skill and for everything, and a spike rule.

A skill that goes over pauses (reason "budget") and the user is told the counts and the
thresholds. Days are rolling 24-hour windows.
"""

from __future__ import annotations

import statistics
from datetime import timedelta

from pydantic import BaseModel

DAY = timedelta(hours=24)
SPIKE_HISTORY = 10
"""How many of a skill's recent runs make its "usual" use."""
SPIKE_MIN_RUNS = 3
"""Fewer runs than this say nothing about what is usual."""


class BudgetPolicy(BaseModel):
    run_cap: int = 50_000
    skill_daily: int = 200_000
    daily: int = 1_000_000
    spike_factor: float = 5.0
    spike_floor: int = 5_000


class Usage(BaseModel):
    """What the store knows when a run ends: this run, the skill's day, everyone's day, recent runs."""

    run: int
    skill_day: int
    day: int
    recent: list[int]
    """The skill's previous Agent-tier runs' tokens, newest first (this run excluded)."""


def over_budget(usage: Usage, policy: BudgetPolicy) -> str | None:
    """Why this run must pause its skill, with the counts and the thresholds; None if it need not."""
    if usage.skill_day > policy.skill_daily:
        return (f"the skill used {usage.skill_day:,} tokens in 24 hours; its daily budget is "
                f"{policy.skill_daily:,}")
    if usage.day > policy.daily:
        return f"all skills used {usage.day:,} tokens in 24 hours; the daily budget is {policy.daily:,}"
    usual = statistics.median(usage.recent[:SPIKE_HISTORY]) if len(usage.recent) >= SPIKE_MIN_RUNS else None
    if usual and usage.run >= policy.spike_floor and usage.run > policy.spike_factor * usual:
        return (f"this run used {usage.run:,} tokens, {usage.run / usual:.1f}x the skill's usual {usual:,.0f} "
                f"(spike threshold {policy.spike_factor:g}x, and at least {policy.spike_floor:,})")
    return None
