"""What a rehearsal tells its owner: the sends a real run would make, and no call called what it was not."""

from __future__ import annotations

from datetime import timedelta

from skills.run.notify import completion_due
from skills.run.rehearsal import rehearsal_lines, would_send
from skills.spec.models import Destination, RunRecord, ToolCallRecord
from tests.skills.run.test_notify import NOW, run, skill


def test_what_a_rehearsal_would_send_is_what_a_real_run_sends_deliveries_included() -> None:
    sends = ToolCallRecord(step_id="step1", tool="outbox_send_message", ok=True, duration_ms=1, rehearsed=True)
    for destinations in ([], [Destination(tool="exfil_send", arguments={"to": "a@b"})]):
        for calls in ((), (sends,)):
            owner = skill().model_copy(update={"deliver_to": destinations})
            done = run("done", *calls).model_copy(update={"status": "success"})
            real = completion_due(owner, done, NOW, timedelta(0), "outbox_send_message")
            rehearsed = would_send(owner, done, "outbox_send_message")
            assert bool(rehearsed) == real, (destinations, calls, rehearsed)
            if real:
                assert len(rehearsed) == max(len(destinations), 1)


def test_a_call_that_failed_or_was_never_made_is_not_shown_as_a_read_only_call() -> None:
    record = RunRecord(run_id="r", skill_id=1, skill_name="tea", workflow_id="w", started_at=NOW, tier="agent",
                       status="success", tool_calls=[
                           ToolCallRecord(step_id="turn-1", tool="bank_transfer", ok=False, duration_ms=1,
                                          result="Field 'amount': must be a number"),
                           ToolCallRecord(step_id="turn-1", tool="outbox_list_messages", ok=True, duration_ms=1, result="[]")])
    lines = rehearsal_lines(record)
    assert "  failed      bank_transfer → Field 'amount': must be a number" in lines, lines
    assert not any("bank_transfer (read-only)" in line for line in lines)
    assert "  called      outbox_list_messages (read-only) → []" in lines
