"""`/metrics` after real runs of a real `python -m worker`: the engine's counts, and the SDK's own metrics."""

from __future__ import annotations

from pathlib import Path

from temporalio.client import Client

from client import SkillsClient
from client.files import sync_files
from client.trust import trust
from config.settings import Settings
from tests.conftest import eventually, free_port, trigger_schedule, worker_process
from tests.fakes.llm_server import ScriptedLLM, say
from tests.service.http import answers, gated_config, get, value
from tests.workflows.test_toolsets import BROKEN, CHANGING, write


def _direct(name: str, tool: str, **extra: object) -> dict[str, object]:
    return {"name": name, "instructions": "x", "notify_on_completion": False, **extra,
            "execution_plan": [{"toolName": tool, "parameters": {"message": name}}]}


async def test_metrics_count_what_the_engine_did(client: Client, settings: Settings, tmp_path: Path,
                                                 llm: ScriptedLLM) -> None:
    gate = tmp_path / "gate"
    gate.touch()
    settings = gated_config(settings, gate, tmp_path / "gated.log")
    port = free_port()
    skills = SkillsClient(client, settings.task_queue)
    llm.script("counted", [say("Hello.", prompt_tokens=120, completion_tokens=7)])
    env = {"SKILLS_HEALTH_PORT": str(port), "SKILLS_FAILURE_LIMIT": "2", "SKILLS_LLM_BASE_URL": llm.base_url,
           "SKILLS_LLM_API_KEY": "test", "SKILLS_LLM_MODEL": "counted"}
    with worker_process(settings, client.service_client.config.target_host, **env):
        await eventually(lambda: answers(port, "/healthz"), timeout=60)

        await skills.register(_direct("fine", "outbox_send_message"))
        assert (await skills.run("fine")).status == "success"

        bad = (await skills.register(_direct("bad", "gated_fail", schedule="0 0 1 1 *"))).skill
        assert bad is not None and bad.schedule_id
        assert (await skills.run("bad")).status == "error"
        await trigger_schedule(client, bad.schedule_id)  # inside the backoff window: skipped
        skipped = await eventually(lambda: _scheduled(skills, "bad"), timeout=30)
        assert skipped.status == "skipped" and skipped.summary.startswith("backoff"), skipped
        assert (await skills.run("bad")).status == "error"  # the second failure in a row disables it
        assert (await skills.get("bad")).disabled_reason == "failures"

        await skills.register({"name": "thinker", "agent_id": "ada", "instructions": "Say hello.",
                               "notify_on_completion": False})
        assert (await skills.run("thinker", agent_id="ada")).status == "success"

        # A SKILL.md skill's own toolset servers count under their names, a server that cannot start too.
        write(settings.user_skills_dir, "own-tools", "changing_add_tool_quietly", CHANGING)
        write(settings.user_skills_dir, "own-broken", "broken_anything", BROKEN)
        assert not (await sync_files(skills)).refused
        for name in ("own-tools", "own-broken"):
            await trust(skills, name)  # the owner lets their toolsets run
        assert (await skills.run("own-tools", "files")).status == "success"
        assert (await skills.run("own-broken", "files")).status == "error"

        # A run's record is the engine's, written before its workflow ends: the SDK counts the workflow's
        # failure when its last task completes, a moment later on a loaded worker (once, 2 of 3 at a load of 13).
        text = await eventually(lambda: _scraped_once_failed(port, 3), timeout=30)

    fires = "skills_fires"
    # fine and own-tools; bad twice and own-broken
    assert value(text, fires, tier="direct", status="success", trigger="manual", task_queue=settings.task_queue) == 2
    assert value(text, fires, tier="direct", status="error", trigger="manual") == 3
    assert value(text, fires, tier="direct", status="skipped", trigger="schedule") == 1
    assert value(text, fires, tier="agent", status="success", trigger="manual") == 1
    assert value(text, "skills_skips", reason="backoff") == 1
    assert value(text, "skills_auto_disables", reason="failures") == 1
    assert value(text, "skills_tool_calls", server="gated", outcome="error") == 2
    assert value(text, "skills_tool_calls", server="outbox", outcome="ok") >= 1
    assert value(text, "skills_tool_call_latency_count", server="gated") == 2
    assert value(text, "skills_tool_calls", server="changing", outcome="ok") == 1
    assert value(text, "skills_tool_calls", server="broken", outcome="ToolServerError") >= 1  # once per attempt
    assert value(text, "skills_llm_tokens", skill="thinker", agent="ada", kind="prompt") == 120
    assert value(text, "skills_llm_tokens", skill="thinker", agent="ada", kind="completion") == 7
    assert value(text, "skills_mcp_server_up", server="gated") == 1
    assert value(text, "skills_mcp_tools", server="gated") == 2
    assert value(text, "skills_mcp_server_up", server="outbox") == 1
    # The lag of the scheduled fire (skipped, but it started and was recorded), in seconds-to-hours buckets.
    assert value(text, "skills_fire_lag_count", tier="direct", stage="start") == 1
    assert value(text, "skills_fire_lag_count", tier="direct", stage="done") == 1
    assert 0 < value(text, "skills_fire_lag_sum", stage="done") < 60
    assert value(text, "skills_fire_lag_bucket", stage="done", le="21600") == 1
    assert value(text, "skills_fire_lag_count", trigger="manual") == 0  # a manual run has no scheduled time
    # The SDK's own metrics, in the same exposition.
    assert value(text, "temporal_workflow_completed", workflow_type="SkillRun") >= 2
    assert value(text, "temporal_workflow_failed", workflow_type="SkillRun") == 3
    assert value(text, "temporal_activity_execution_latency_count", activity_type="call_tool") >= 3


async def _scraped_once_failed(port: int, failed: int) -> str | None:
    """``/metrics`` once the SDK has counted ``failed`` SkillRun workflows failed, else None."""
    status, text = await get(port, "/metrics")
    assert status == 200
    return text if value(text, "temporal_workflow_failed", workflow_type="SkillRun") >= failed else None


async def _scheduled(skills: SkillsClient, name: str):  # noqa: ANN202
    runs = [r for r in await skills.runs(name) if r.trigger == "schedule" and r.status != "running"]
    return runs[0] if runs else None
