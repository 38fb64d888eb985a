"""The worker's logs, read from a real `python -m worker` process as an operator would read them."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from datetime import timedelta

import pytest
from temporalio import activity, workflow
from temporalio.client import Client, WorkflowFailureError
from temporalio.common import RetryPolicy
from temporalio.worker import Worker

from client import SkillsClient
from config.logs import ExpectedFailures
from config.settings import Settings
from tests.conftest import eventually, worker_process
from tests.fakes.llm_server import ScriptedLLM, error, say, scripted_llm_fixture

KEY = "sk-log-test-key-0123456789"

llm = scripted_llm_fixture(api_key=KEY)


def _env(llm: ScriptedLLM, **extra: str) -> dict[str, str]:
    return {"SKILLS_LLM_BASE_URL": llm.base_url, "SKILLS_LLM_API_KEY": KEY, "SKILLS_LLM_MODEL": "logs", **extra}


def _address(client: Client) -> str:
    return client.service_client.config.target_host


def _log_lines(settings: Settings) -> Iterator[str]:
    yield from (settings.data_dir / "worker.log").read_text(errors="replace").splitlines()


async def test_info_lines_show_and_an_expected_failure_is_one_line(client: Client, settings: Settings,
                                                                   llm: ScriptedLLM) -> None:
    """The MCP server stack calls basicConfig(WARNING) on import; the worker's INFO lines show anyway,
    and an LLM endpoint answering 503 twice is two WARNING lines, not two chained tracebacks."""
    llm.script("logs", [error(503, retry_after=0.2), error(503, retry_after=0.2), say("all done")])
    skills = SkillsClient(client, settings.task_queue)
    with worker_process(settings, _address(client), **_env(llm)) as worker:
        await worker.polling()
        await skills.register({"name": "note", "instructions": "Say hello.", "notify_on_completion": False})
        run = await skills.run("note")
        assert run.status == "success" and run.summary == "all done"
        # The servers connect when first needed (the registration), in the background: wait for the line.
        log = await eventually(lambda: _lines_once(settings, "MCP server outbox connected"), timeout=30)
    assert any("MCP server outbox connected" in line and " INFO " in line for line in log)
    failed = [line for line in log if "llm_turn failed" in line]
    assert len(failed) == 2, failed
    assert all(" WARNING " in line and "LlmOverloadedError" in line and "answered 503" in line for line in failed)
    traced = [i for i, line in enumerate(log) if "Traceback" in line]
    assert not traced, "\n".join(log[traced[0] - 3:traced[0] + 120]) if traced else ""


@pytest.mark.parametrize("fmt", ["json"])
async def test_json_logs_for_log_collectors(client: Client, settings: Settings, llm: ScriptedLLM, fmt: str) -> None:
    skills = SkillsClient(client, settings.task_queue)
    with worker_process(settings, _address(client), **_env(llm, SKILLS_LOG_FORMAT=fmt)) as worker:
        await worker.polling()
        await skills.catalog()  # answered by the worker: it is up, and its servers connected (when first needed)
        entries = await eventually(lambda: _json_entries(settings), timeout=30)
    connected = [e for e in entries if e["message"].startswith("MCP server outbox connected")]
    assert connected and connected[0]["level"] == "INFO" and connected[0]["logger"].startswith("adapters.mcp")
    assert all({"time", "level", "logger", "message"} <= e.keys() for e in entries)


def _lines_once(settings: Settings, text: str) -> list[str] | None:
    lines = list(_log_lines(settings))
    return lines if any(text in line for line in lines) else None


def _json_entries(settings: Settings) -> list[dict[str, object]]:
    entries = [json.loads(line) for line in _log_lines(settings) if line.startswith("{")]
    return entries if any(str(e["message"]).startswith("MCP server outbox connected") for e in entries) else []


@activity.defn
async def beats_late() -> None:
    """Heartbeats too seldom: the server stops waiting for the attempt (its heartbeat timeout), and the next
    heartbeat's answer has the SDK cancel it, as a starved worker's llm_turn was on a loaded machine."""
    activity.heartbeat()
    while True:
        await asyncio.sleep(HEARTBEAT.total_seconds() * 2)  # the slowness under test, not a wait for a state
        activity.heartbeat()


@workflow.defn(sandboxed=False)
class OneLateAttempt:
    @workflow.run
    async def run(self) -> None:
        await workflow.execute_activity(beats_late, start_to_close_timeout=timedelta(minutes=1),
                                        heartbeat_timeout=HEARTBEAT, retry_policy=RetryPolicy(maximum_attempts=1))


HEARTBEAT = timedelta(seconds=1)


async def test_an_attempt_the_server_timed_out_is_one_line_not_a_traceback(
        client: Client, settings: Settings, caplog: pytest.LogCaptureFixture) -> None:
    """On a loaded machine a worker heartbeat late; the server timed the attempt out, the SDK cancelled it, and
    the log had a CancelledError's whole traceback ("Completing activity as failed"), which tells an operator
    nothing a line does not."""
    activity_logger = logging.getLogger("temporalio.activity")
    expected = ExpectedFailures()
    activity_logger.addFilter(expected)
    try:
        with caplog.at_level(logging.WARNING, logger="temporalio.activity"):
            async with Worker(client, task_queue=settings.task_queue, workflows=[OneLateAttempt],
                              activities=[beats_late]):
                with pytest.raises(WorkflowFailureError):
                    await client.execute_workflow(OneLateAttempt.run, id=f"late-{settings.task_queue}",
                                                  task_queue=settings.task_queue)
                records = await eventually(lambda: [r for r in caplog.records if "beats_late" in r.getMessage()],
                                           timeout=30)
    finally:
        activity_logger.removeFilter(expected)
    [record] = records
    assert record.exc_info is None and record.levelno == logging.WARNING
    assert record.getMessage().startswith("beats_late attempt 1 in OneLateAttempt late-") and "timed it out" in record.getMessage()
    assert "Traceback" not in caplog.text
