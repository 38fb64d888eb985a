"""Standing grants on a real worker, the bundled outbox and a real Temporal dev server: a matching
call is approved without asking, and its approval record names the grant."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest

from adapters.store import Store
from skills.errors import SkillNotFoundError, SkillValidationError
from skills.owner.approvals import Approval
from skills.spec.models import RunRecord
from starter.telegram_bot import BotApi, TelegramBot, standing_where
from tests.conftest import Engine, eventually
from tests.fakes.telegram_api import FakeBotApi
from tests.starter.test_cli import options, run_skills
from tests.workflows.test_approvals import finished, sender, waiting


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
    store.approvals.add_grant(tool="outbox_send_message", skill_id=None, skill_name="", where={}, created_at=now - timedelta(
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


async def test_always_for_this_skill_approves_and_makes_a_grant_for_these_arguments(engine: Engine) -> None:
    owner, stranger = 42, 666
    with FakeBotApi() as telegram:
        api = BotApi(telegram.token, telegram.url)
        bot = TelegramBot(engine.skills, api, [str(owner)], poll_seconds=1)
        stop = asyncio.Event()
        serving = asyncio.create_task(bot.run(stop))
        try:
            await engine.skills.register(sender())
            await engine.skills.run("send report", wait=False)
            [approval] = await waiting(engine)
            [posted] = await eventually(lambda: telegram.with_buttons(owner), timeout=30)
            keyboard = posted["reply_markup"]["inline_keyboard"]
            assert [b["callback_data"] for b in keyboard[1]] == [f"always:{approval.id}"]

            # Only the owner's press counts: a stranger's makes no grant and answers nothing.
            refused = telegram.press(owner, posted["message_id"], f"always:{approval.id}", sender=stranger)
            await eventually(lambda: any(a.get("callback_query_id") == f"cb{refused}"
                                         for a in telegram.button_answers), timeout=30)
            assert (await engine.skills.approval(approval.id)).pending
            assert await engine.skills.grants() == []

            telegram.press(owner, posted["message_id"], f"always:{approval.id}")
            run = await finished(engine, "send report")
            assert run.status == "success"
            after = await engine.skills.approval(approval.id)
            assert (after.status, after.decided_by) == ("approved", f"telegram:{owner}")
            [grant] = await engine.skills.grants()
            assert (grant.tool, grant.skill_name, grant.created_by) == ("outbox_send_message", "send report",
                                                                       f"telegram:{owner}")
            # Every argument of the approved call, as the grant compares it: these values only.
            assert grant.where["message"] == "Report sent" and grant.where == standing_where(approval)
            told = await eventually(lambda: [t for t in telegram.replies(owner) if f"Grant {grant.id} made" in t],
                                    timeout=30)
            assert "these same values" in told[0] and "message=Report sent" in told[0]

            # The same call at the next run: approved by the grant, nobody asked.
            second = await engine.skills.run("send report")
            assert not isinstance(second, str) and second.status == "success"
            by_grant = [a for a in await engine.skills.approvals(status=None) if a.run_id == second.run_id]
            assert [(a.status, a.decided_by) for a in by_grant] == [("approved", f"grant:{grant.id}")]

            # Other arguments: the call asks again.
            await engine.skills.update("send report", {"execution_plan": [
                {"id": "send", "toolName": "outbox_send_message", "parameters": {"message": "Something else"}}]})
            await _deny_waiting(engine)
            assert [m["message"] for m in engine.outbox()] == ["Report sent", "Report sent"]
        finally:
            stop.set()
            await serving
            await api.aclose()
