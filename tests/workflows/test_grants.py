"""Standing grants on a real worker, the bundled outbox and a real Temporal dev server: a matching
call is approved without asking, and its approval record names the grant."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest

from adapters.store import Store
from skills.approvals import Approval
from skills.errors import SkillNotFoundError, SkillValidationError
from skills.models import RunRecord
from tests.conftest import Engine, eventually
from tests.starter.test_cli import options, run_skills
from tests.workflows.test_approvals import sender, waiting


async def _deny_waiting(engine: Engine) -> Approval:
    """A run of 'send report' waits for its answer (no grant approved it); deny it so the run ends."""
    await engine.skills.run("send report", wait=False)
    [approval] = await waiting(engine)
    await engine.skills.deny(approval.id, "test")

    async def ended() -> RunRecord | None:
        return next((r for r in await engine.skills.runs("send report")
                     if r.run_id == approval.run_id and r.status not in ("running", "waiting")), None)

    run = await eventually(ended, timeout=30)
    assert run.status == "denied"
    assert (await engine.skills.approvals()) == []
    return approval


async def test_a_grant_approves_a_call_without_waiting(engine: Engine) -> None:
    await engine.skills.register(sender())
    await _deny_waiting(engine)  # before the grant: the run waits

    done = await asyncio.to_thread(run_skills, "grant", "outbox_send_message", "--skill", "send report", "--json",
                                   *options(engine))
    assert done.returncode == 0, done.stderr
    made = json.loads(done.stdout)
    assert (made["tool"], made["skill_name"], made["expires_at"]) == ("outbox_send_message", "send report", None)
    listed = await asyncio.to_thread(run_skills, "grants", *options(engine))
    assert listed.returncode == 0 and "outbox_send_message" in listed.stdout, listed.stderr

    run = await engine.skills.run("send report")
    assert not isinstance(run, str) and run.status == "success"
    assert [m["message"] for m in engine.outbox()] == ["Report sent"]
    approval = (await engine.skills.approvals(status=None))[0]
    assert approval.run_id == run.run_id
    assert (approval.status, approval.decided_by) == ("approved", f"grant:{made['id']}")
    assert f"grant {made['id']}" in (approval.reason or "") and approval.outcome

    # Revoked, it approves nothing: the next run waits again.
    revoked = await asyncio.to_thread(run_skills, "revoke", str(made["id"]), *options(engine))
    assert revoked.returncode == 0, revoked.stderr
    assert await engine.skills.grants() == []
    [gone] = await engine.skills.grants(everything=True)
    assert gone.revoked_at is not None
    await _deny_waiting(engine)
    with pytest.raises(SkillValidationError, match="already revoked"):
        await engine.skills.revoke_grant(made["id"])


async def test_a_where_that_does_not_match_or_an_expired_grant_approves_nothing(engine: Engine) -> None:
    await engine.skills.register(sender())
    other = await engine.skills.grant("outbox_send_message", where={"message": "Something else"}, minutes=60)
    assert other.expires_at is not None and other.skill_id is None
    await _deny_waiting(engine)

    store = Store.open(engine.settings.store_url, schedule_prefix=engine.settings.task_queue)
    now = datetime.now(UTC)
    store.add_grant(tool="outbox_send_message", skill_id=None, skill_name="", where={}, created_at=now - timedelta(
        days=2), expires_at=now - timedelta(days=1), created_by="test")
    await _deny_waiting(engine)
    assert engine.outbox() == []

    # The same where, matching: approved.
    await engine.skills.grant("outbox_send_message", where={"message": "Report sent"})
    run = await engine.skills.run("send report")
    assert not isinstance(run, str) and run.status == "success"


async def test_refused_grants_name_the_field(engine: Engine) -> None:
    with pytest.raises(SkillValidationError) as refused:
        await engine.skills.grant("approve")
    assert refused.value.errors[0].field == "tool" and "management tool" in str(refused.value)
    with pytest.raises(SkillValidationError) as refused:
        await engine.skills.grant("no_such_tool")
    assert refused.value.errors[0].field == "tool" and "catalog" in str(refused.value)
    with pytest.raises(SkillNotFoundError):
        await engine.skills.grant("outbox_send_message", skill="nobody")
    with pytest.raises(SkillValidationError) as refused:
        await engine.skills.grant("outbox_send_message", minutes=10**8)
    assert refused.value.errors[0].field == "for"
    done = await asyncio.to_thread(run_skills, "grant", "memory_delete_skill", *options(engine))
    assert done.returncode == 1 and "management tool" in done.stderr + done.stdout
    assert await engine.skills.grants(everything=True) == []
