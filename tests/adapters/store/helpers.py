"""What the store's tests build their skills, runs and approvals from."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from adapters.store import Store
from skills.owner.approvals import ApprovalRequest
from skills.run.backoff import BackoffPolicy
from skills.run.budget import BudgetPolicy
from skills.spec.models import RunRecord, SkillSpec

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
POLICY = BackoffPolicy(steps=[timedelta(minutes=1), timedelta(minutes=5)], limit=3)


def spec(name: str = "tick", agent: str = "a", **fields: object) -> SkillSpec:
    return SkillSpec.model_validate({"agent_id": agent, "name": name, "trigger_type": "cron", "instructions": "do it",
                                     "trigger_config": {"interval_minutes": 5}, **fields})


def create(store: Store, s: SkillSpec, now: datetime = T0) -> int:
    return store.skills.create_skill(s, trigger_as_written=None, disabled_reason=None, now=now).id


def run(skill_id: int, n: int, status: str = "running", *, scheduled: datetime | None = None,
        trigger: str = "schedule", tokens: int = 0, **fields: object) -> RunRecord:
    at = scheduled or T0 + timedelta(minutes=n)
    return RunRecord.model_validate({
        "run_id": f"run-{skill_id}-{n}", "skill_id": skill_id, "skill_name": "tick", "workflow_id": f"wf-{n}",
        "trigger": trigger, "scheduled_at": at if trigger == "schedule" else None, "started_at": at,
        "status": status, "tier": "agent" if tokens else "direct", "prompt_tokens": tokens,
        **({"finished_at": at + timedelta(seconds=2)} if status != "running" else {}), **fields})


def finish(store: Store, record: RunRecord, status: str, summary: str = "", budget: BudgetPolicy | None = None):
    store.runs.start_run(record)
    return store.runs.record_outcome(record.model_copy(update={
        "status": status, "summary": summary, "finished_at": record.started_at + timedelta(seconds=2)}), POLICY, budget)


def approval_request(key: str = "run-1:step1:0", **fields: object) -> ApprovalRequest:
    return ApprovalRequest.model_validate({
        "kind": "tool_call", "request_key": key, "skill_id": 1, "skill_name": "tick", "run_id": "r1",
        "workflow_id": "w1", "tool": "outbox_send_message", "arguments": {"message": "hi"},
        "summary": "send 'hi'", "requested_at": T0, "expires_at": T0 + timedelta(hours=1), **fields})
