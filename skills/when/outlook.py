"""A skill's next 30 days, before the owner says yes: how many runs, how many messages, how many tokens.

Runs come from the schedule itself (its trigger's fires, less the days it skips, cut by ``end_at`` and
what ``max_runs`` leaves). Messages from what a run sends: its plan's messaging steps, and its result
(through ``deliver_to`` or the notifier, as ``deliver`` and ``notify_on_completion`` decide). Tokens,
for an Agent-tier skill, from the median of comparable recorded runs: the skill's own, else other
skills' runs on the same model; with none, it says "no history" rather than guess. Pure: the caller
gives the time and the recorded token counts.
"""

from __future__ import annotations

import statistics
from datetime import datetime, timedelta

from pydantic import BaseModel

from skills.run.notify import is_messaging_tool
from skills.spec.models import SkillSpec
from skills.when.calendar import count_fires

HORIZON_DAYS = 30
MAX_COUNTED = 50_000
"""Fires counted at most (a skill every minute has 43,200 in 30 days)."""


class Outlook(BaseModel):
    runs: int
    more: bool = False
    """Counting stopped at ``MAX_COUNTED``: at least that many."""
    messages: int
    messages_how: str
    """How a run's messages were counted: "1 each (the notifier)", "at least 1 each (Agent tier)"..."""
    tokens: int | None = None
    tokens_how: str = ""
    cost: float | None = None
    """``tokens`` at ``SKILLS_LLM_PRICE`` (a million tokens' cost), when it is set."""

    def lines(self) -> list[str]:
        runs = f"{self.runs:,}{'+' if self.more else ''} run{'s' * (self.runs != 1)}"
        least = "at least " if self.messages_how.startswith("at least") else ""
        parts = [f"next {HORIZON_DAYS} days: {runs}",
                 f"{least}{self.messages:,} message{'s' * (self.messages != 1)} ({self.messages_how})"]
        if self.tokens_how:
            cost = f", about {self.cost:,.2f} at SKILLS_LLM_PRICE" if self.cost is not None else ""
            parts.append(f"{self.tokens:,} tokens{cost} ({self.tokens_how})" if self.tokens is not None
                         else f"tokens: {self.tokens_how}")
        return ["; ".join(parts)]


def runs_ahead(spec: SkillSpec, now: datetime, *, anchor: datetime, done: int = 0) -> tuple[int, bool]:
    """The fires in the next 30 days (and whether counting stopped short); ``done``: scheduled runs so far,
    which ``max_runs`` counts."""
    trigger = spec.trigger_config
    if not spec.enabled or not spec.is_scheduled or trigger is None:
        return 0, False
    runs_left = None if spec.max_runs is None else max(0, spec.max_runs - done)
    count = count_fires(trigger, anchor=anchor, now=now, end=now + timedelta(days=HORIZON_DAYS),
                        skip_holidays=spec.skip_holidays, business_days_only=spec.business_days_only,
                        end_at=spec.end_at, runs_left=runs_left)
    return (MAX_COUNTED, True) if count >= MAX_COUNTED else (count, False)


def messages_per_run(spec: SkillSpec, notifier_tool: str) -> tuple[int, str]:
    """A run's messages to the owner, and how that was counted."""
    sends = sum(is_messaging_tool(step.tool_name, notifier_tool) for step in spec.execution_plan or [])
    result = 0
    if spec.deliver != "never" and spec.notify_on_completion is not False and not (
            spec.notify_on_completion is None and sends):  # automatic: no notice after a run that sent its own
        result = len(spec.deliver_to) or 1
    count = len(spec.deliver_to)
    where = f"{count} destination{'s' * (count != 1)}" if spec.deliver_to else "the notifier"
    parts = [*([f"{sends} from the plan"] if sends else []), *([f"its result to {where}"] if result else [])]
    if spec.execution_plan:
        how = f"{sends + result} each: {', '.join(parts)}" if parts else "none: the plan sends none and no notice"
    else:
        how = f"at least {result} each: {', '.join(parts) or 'its result'}, and what the model sends"
    if spec.deliver == "on_change" and result:
        how += "; at most, on_change sends only what changed"
    return sends + result, how


def tokens_ahead(runs: int, own: list[int], similar: list[int], model: str | None) -> tuple[int | None, str]:
    """The next 30 days' tokens of an Agent-tier skill: ``runs`` times the median of its own recorded runs
    (``own``), else of other skills' runs on its model (``similar``); None and "no history" without either."""
    for samples, what in ((own, "this skill's"), (similar, f"other skills' on {model or 'the same model'}")):
        samples = [s for s in samples if s > 0]
        if samples:
            median = int(statistics.median(samples))
            return runs * median, f"{median:,} a run, the median of {len(samples)} of {what} runs"
    return None, "no history to estimate from"


def outlook(spec: SkillSpec, now: datetime, *, anchor: datetime, done: int = 0, notifier_tool: str,
            own_tokens: list[int] | None = None, similar_tokens: list[int] | None = None,
            price: float | None = None) -> Outlook:
    """``price``: what a million tokens cost (``SKILLS_LLM_PRICE``), for the cost beside the tokens."""
    runs, more = runs_ahead(spec, now, anchor=anchor, done=done)
    each, how = messages_per_run(spec, notifier_tool)
    view = Outlook(runs=runs, more=more, messages=runs * each, messages_how=how)
    if not spec.execution_plan:  # the Agent tier
        tokens, tokens_how = tokens_ahead(runs, own_tokens or [], similar_tokens or [], spec.model)
        if tokens is not None and spec.max_tokens_per_month and tokens > spec.max_tokens_per_month:
            tokens_how += f"; over its max_tokens_per_month of {spec.max_tokens_per_month:,}: fires will be skipped"
        cost = tokens * price / 1_000_000 if tokens is not None and price is not None else None
        view = view.model_copy(update={"tokens": tokens, "tokens_how": tokens_how, "cost": cost})
    return view
