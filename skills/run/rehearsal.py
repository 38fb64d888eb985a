"""A rehearsal: a skill run once before (or without) it is made, to see what it would do.

It is a real run of the ``rehearsal`` kind (``SkillRun`` with trigger ``rehearsal``): the tools its
server marks ``readOnlyHint: true`` are called for real, every other call goes through the argument
pipeline and is recorded with the arguments it would have been sent with, and nothing is sent; an
Agent-tier rehearsal asks its model. It delivers nothing, asks no approval (a call that would need one
is recorded), and counts toward no backoff, incident, ``max_runs`` or remembered result: what the
owner reads is the calls, the messages that would have gone out, and the tokens.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from skills.display import shown
from skills.owner.approvals import describe_call
from skills.run.catalog import ToolResult
from skills.run.notify import completion_message, failure_message, is_messaging_tool, settle
from skills.spec.models import Delivery, RunRecord, Skill

REHEARSED_TEXT = ("Rehearsal: this call was recorded and not made (the skill is being tried before it runs for "
                  "real). Go on as if it had succeeded.")
"""What a recorded call answers: a Direct plan's later steps and an Agent-tier model read it as the result."""
NOT_RUN_SCRIPT = "Rehearsal: the script was recorded and not run."
REHEARSAL_TIMEOUT = timedelta(minutes=30)
"""A rehearsal always ends: an Agent-tier one on a slow local model may take minutes."""


def rehearsed(arguments: dict[str, Any], changes: list[str] | None = None) -> ToolResult:
    """The answer of a call a rehearsal recorded instead of making."""
    return ToolResult(ok=True, text=REHEARSED_TEXT, adjusted=changes or [], rehearsed=True, arguments=arguments)


def would_send(skill: Skill, run: RunRecord, notifier_tool: str) -> list[Delivery]:
    """What a real run that ended as ``run`` did would have sent the owner, each as a ``rehearsed`` delivery
    with its message: the result to each ``deliver_to`` destination (the notifier when none), or the notice
    a failure opens. Quiet answers, ``deliver: never`` and a run whose own plan messages the owner send no
    completion (as ``skills.run.notify.completion_due`` decides, throttles aside)."""
    run = settle(None, run)
    if run.status == "error":
        return [Delivery(destination=notifier_tool, status="rehearsed", message=failure_message(skill, run, 1, None))]
    if run.status != "success" or skill.notify_on_completion is False or skill.deliver == "never":
        return []
    # As completion_due decides for a real run: a run whose own calls message the owner sends no result,
    # to the notifier or to any deliver_to destination.
    messaged = any(call.rehearsed and is_messaging_tool(call.tool, notifier_tool) for call in run.tool_calls)
    if skill.notify_on_completion is None and messaged:
        return []
    text = completion_message(skill, run)
    labels = [destination.label for destination in skill.deliver_to] or [notifier_tool]
    return [Delivery(destination=label, status="rehearsed", message=text) for label in labels]


def rehearsal_lines(run: RunRecord, limit: int = 300) -> list[str]:
    """The rehearsal as its owner reads it: what it would do (each call, made or recorded), what it would
    send, what it cost in tokens, and how it ended. Text from servers and models is shown escaped."""
    lines = [f"rehearsal of {shown(run.skill_name)} ({run.tier} tier): {run.status}"
             + (f": {shown(run.summary[:limit])}" if run.summary and run.status != "success" else "")]
    for call in run.tool_calls:
        if call.rehearsed:
            lines.append(f"  would call  {describe_call(call.tool, call.arguments or {}, limit)}  (recorded, not sent)")
        elif call.refused:
            lines.append(f"  refused     {shown(call.tool)} (not one of the skill's tools)")
        elif not call.ok:  # its arguments failed the pipeline, or the call failed: never "called (read-only)"
            lines.append(f"  failed      {shown(call.tool)} → {shown(call.result[:limit])}")
        else:
            lines.append(f"  called      {shown(call.tool)} (read-only) → {shown(call.result[:limit])}")
    for delivery in run.deliveries:
        lines.append(f"  would send  to {shown(delivery.destination)}: {shown(delivery.message[:limit])}")
    if not run.deliveries and any(call.rehearsed for call in run.tool_calls):
        lines.append("  would send  no notice of its own (the calls above are what it sends)")
    elif not run.deliveries:
        lines.append("  would send  nothing to the owner")
    if run.prompt_tokens or run.completion_tokens:
        lines.append(f"  tokens      {run.prompt_tokens:,} prompt + {run.completion_tokens:,} completion"
                     + (f" ({shown(run.model)})" if run.model else ""))
    return lines
