"""What a skill tells its owner, on a real worker with the real outbox: ``deliver`` (always, on_change,
never) and the quiet Agent run (an answer of exactly NOTHING_TO_REPORT)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowHistory

from config.settings import Settings
from skills.run.notify import NOTHING_TO_REPORT, result_digest
from skills.spec.models import RunRecord
from starter.cli import run_status
from tests.conftest import Engine
from tests.fakes.llm_server import ScriptedLLM, error, say
from tests.history import replayer
from workflows.run import SkillRun


def watcher(name: str = "watcher", **extra: object) -> dict[str, object]:
    """A Direct skill whose result is what the outbox holds for the chat 'feed': the same until something
    is posted there."""
    return {"name": name, "instructions": "Tell me what the feed holds",
            "execution_plan": [{"toolName": "outbox_list_messages", "parameters": {"chat_id": "feed"}}], **extra}


def notices(engine: Engine, name: str) -> list[str]:
    return [m["message"] for m in engine.outbox() if m["message"].startswith(f"✅ {name}:")]


async def run(engine: Engine, name: str) -> RunRecord:
    done = await engine.skills.run(name)
    assert isinstance(done, RunRecord)
    return done


async def test_on_change_delivers_a_result_only_when_it_differs_from_the_last_delivered(
        client: Client, settings: Settings) -> None:
    # No throttle: each result that changed is due at once.
    engine = await Engine(settings.model_copy(update={"notify_interval": timedelta(0)}), client).start()
    try:
        skill = (await engine.skills.register(watcher(deliver="on_change"))).skill
        assert skill is not None and skill.deliver == "on_change" and skill.delivered_digest is None
        await engine.skills.register({"name": "post", "instructions": "x", "notify_on_completion": False,
                                      "execution_plan": [{"toolName": "outbox_send_message",
                                                          "parameters": {"message": "news!", "chat_id": "feed"}}]})

        first = await run(engine, "watcher")
        assert first.status == "success" and not first.unchanged
        assert notices(engine, "watcher") == [f"✅ watcher: {first.summary}"]
        assert (await engine.skills.get("watcher")).delivered_digest == result_digest(first.summary)

        second = await run(engine, "watcher")  # the feed as it was: the same result
        assert (second.status, second.summary, second.unchanged) == ("success", first.summary, True)
        assert len(notices(engine, "watcher")) == 1  # not sent again
        assert run_status(second) == "success, unchanged"  # what `skills runs` shows

        assert (await run(engine, "post")).status == "success"  # something new in the feed
        third = await run(engine, "watcher")
        assert third.status == "success" and not third.unchanged and third.summary != first.summary
        assert "news!" in third.summary
        assert notices(engine, "watcher") == [f"✅ watcher: {first.summary}", f"✅ watcher: {third.summary}"]
        assert (await engine.skills.get("watcher")).delivered_digest == result_digest(third.summary)
        # Every run is recorded, the unchanged one too.
        assert [r.unchanged for r in await engine.skills.runs("watcher")] == [False, True, False]
    finally:
        await engine.stop()


async def test_never_delivers_no_result_but_still_tells_a_failure(engine: Engine) -> None:
    await engine.skills.register(watcher(deliver="never"))
    assert (await run(engine, "watcher")).status == "success"
    assert (await run(engine, "watcher")).status == "success"
    assert engine.outbox() == []
    assert (await engine.skills.get("watcher")).delivered_digest is None

    # A failure is about the skill's health: it is told whatever deliver says.
    await engine.skills.update("watcher", {"execution_plan": [{"toolName": "outbox_list_messages",
                                                                "parameters": {"limit": 0}}]})
    failed = await run(engine, "watcher")
    assert failed.status == "error"
    [told] = [m["message"] for m in engine.outbox()]
    assert told.startswith("❌ watcher: ") and "limit must be between" in told


async def test_a_quiet_agent_run_sends_nothing_and_resets_nothing(client: Client, settings: Settings,
                                                                 llm: ScriptedLLM) -> None:
    engine = await Engine(settings.model_copy(update={"llm_base_url": llm.base_url, "llm_api_key": "sk-fake-test-key",
                                                      "llm_model": "default", "notify_interval": timedelta(0)}),
                          client).start()
    try:
        llm.script("default", [error(401), say(NOTHING_TO_REPORT), say("  NOTHING_TO_REPORT\n"),
                               say("Two new parcels arrived.")])
        await engine.skills.register({"name": "parcels", "instructions": "Tell me about new parcels, if any.",
                                      "required_tools": ["outbox_list_messages"], "schedule": "0 9 * * *"})

        failed = await run(engine, "parcels")
        assert failed.status == "error"
        after_failure = await engine.skills.get("parcels")
        assert after_failure.consecutive_failures == 1 and after_failure.backoff_until is not None
        [incident] = await engine.skills.incidents("parcels")
        told = [m["message"] for m in engine.outbox()]
        assert len(told) == 1 and told[0].startswith("❌ parcels: ")

        for _ in range(2):
            quiet = await run(engine, "parcels")
            assert (quiet.status, quiet.summary, quiet.tier) == ("quiet", "nothing to report", "agent")
            assert quiet.prompt_tokens + quiet.completion_tokens > 0  # it did cost its tokens
        assert [m["message"] for m in engine.outbox()] == told  # no notice, no "recovered"
        stored = await engine.skills.get("parcels")
        assert stored.last_run_status == "quiet"
        # Not a success: the failure count, the backoff and the incident stay as the failure left them.
        assert (stored.consecutive_failures, stored.last_failure_at, stored.backoff_until) == (
            1, after_failure.last_failure_at, after_failure.backoff_until)
        assert [i.id for i in await engine.skills.incidents("parcels")] == [incident.id]
        # The system prompt taught the marker.
        assert NOTHING_TO_REPORT in llm.requests_for("default")[-1].messages[0]["content"]

        # The next success resets what a success resets, and tells the owner.
        found = await run(engine, "parcels")
        assert found.status == "success"
        assert (await engine.skills.get("parcels")).consecutive_failures == 0
        assert await engine.skills.incidents("parcels") == []
        last = engine.outbox()[-1]["message"]
        assert "parcels recovered" in last and "✅ parcels: Two new parcels arrived." in last
    finally:
        await engine.stop()


HISTORIES = Path(__file__).parent / "histories"


@pytest.mark.parametrize("name", ["direct_notice_before_deliver", "agent_nothing_to_report_before_deliver"])
async def test_runs_recorded_before_deliver_replay_as_they_ran(name: str) -> None:
    """Histories SkillRun wrote before deliver and quiet existed (main at 8a60b39): a Direct run's completion
    notice, and an Agent run that answered NOTHING_TO_REPORT, then a success that was told as such. The
    decisions are finish_run's, recorded in the history, so the workflow issues the same commands."""
    history = WorkflowHistory.from_json(name, (HISTORIES / f"{name}.json").read_text())
    await replayer(SkillRun).replay_workflow(history)
