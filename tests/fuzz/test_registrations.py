"""Fuzzing the whole path on a real worker: every generated registration is either refused with a
field path, or registered and then fired once by hand to an end (`success`, `error` or `skipped`)
within a bound, with no workflow left running and no workflow task failed or worker stalled.

`make test` runs a bounded, deterministic number of examples; ``SKILLS_FUZZ_EXAMPLES=2000
HYPOTHESIS_PROFILE=deep`` runs more, at random (docs/skills.md#fuzzing). A failing example found
that way is kept in ``corpus.py`` and replayed by every run."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import event, given
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from config.settings import Settings
from skills.errors import SkillValidationError
from skills.spec.models import RunRecord, Skill
from tests.conftest import Engine, eventually
from tests.fakes.llm_server import ScriptedLLM, say
from tests.fuzz import EXAMPLES, fuzz_settings
from tests.fuzz.corpus import REGISTRATIONS
from tests.fuzz.strategies import DIRECT, registrations

MODEL = "fuzz"
RUN_BOUND = 90.0
"""Seconds a hand-fired run may take to end: an Agent-tier run is a few LLM turns against the local
scripted server; a run still going past this is a run that does not end."""
STALL_BOUND = 5.0
"""The longest the event loop the worker shares with this test may go without running a task, counted in the CPU
this process spent meanwhile. A pattern or parser that hogs the CPU while holding the GIL shows here; a loaded
machine, which leaves the process waiting for a core, does not (in wall time, a run at a load of 15 to 35 saw a gap
of 10.9 s with nothing wrong)."""


class LoopWatch:
    """The longest gap between two ticks of a task that asks to run every 50 ms: the lesser of its wall time and
    the process's CPU time in it. A hog on the loop, or in another thread holding the GIL, spends the gap on the
    CPU, so both count it; a process left waiting for a core spends wall time only, and the core SDK's threads,
    which run beside the GIL, CPU time beyond the wall's."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        while True:
            wall, cpu = time.monotonic(), time.process_time()
            await asyncio.sleep(0.05)
            gap = min(time.monotonic() - wall, time.process_time() - cpu) - 0.05
            self.worst = max(self.worst, gap)

    def __enter__(self) -> LoopWatch:
        self._task = asyncio.get_running_loop().create_task(self._tick())
        return self

    def __exit__(self, *_: object) -> None:
        assert self._task is not None
        self._task.cancel()


@pytest.fixture
async def fuzz_engine(client: Client, settings: Settings, llm: ScriptedLLM) -> AsyncIterator[Engine]:
    running = await Engine(settings.model_copy(update={
        "llm_base_url": llm.base_url, "llm_api_key": "sk-fake-test-key", "llm_model": MODEL,
    }), client).start()
    yield running
    await running.stop()


async def attempt(engine: Engine, llm: ScriptedLLM, data: dict[str, Any]) -> str:
    """Register ``data``; if it is taken, fire it once by hand and see the run end. Returns what
    happened, for the failure message of the example that found a problem."""
    with LoopWatch() as watch:
        try:
            result = await asyncio.wait_for(engine.skills.register(data), 60)
        except SkillValidationError as refused:
            assert refused.errors, "a refusal names its problems"
            # The root's own refusals (the whole body too large) name the skill, not a field.
            unplaced = [str(e) for e in refused.errors if not e.field and not e.message.startswith("the skill")]
            assert not unplaced, f"refused without a field path: {unplaced}"
            outcome = f"refused: {refused}"
        else:
            skill = result.skill
            assert skill is not None and skill.id is not None
            # Whatever model it asked for, the scripted LLM answers it: the run is to end on its merits.
            llm.script(skill.model or MODEL, [say("Done: hello.")] * (skill.max_steps + 1))
            run = await asyncio.wait_for(run_answering_approvals(engine, skill), RUN_BOUND)
            assert not isinstance(run, str)
            assert run.status in {"success", "error", "skipped", "denied"}, run
            await no_workflow_task_failed(engine, run.workflow_id)
            await engine.skills.delete(skill.id)
            outcome = f"{run.status}: {run.summary[:200]}"
    assert watch.worst < STALL_BOUND, f"the worker's event loop stalled {watch.worst:.1f}s ({outcome})"
    return outcome


async def run_answering_approvals(engine: Engine, skill: Skill) -> RunRecord | str:
    """Fire the skill once by hand, its owner at hand: a call that waits for approval is approved (the
    first) or denied (the others), so a skill with approval_required_tools ends too."""
    assert skill.id is not None
    run = asyncio.ensure_future(engine.skills.run(skill.id, wait=True))
    asks = bool(skill.approval_required_tools) or any(step.approval for step in skill.execution_plan or [])
    answered = 0
    try:
        while asks and not run.done():
            for approval in await engine.skills.approvals(skill=skill.id):
                if answered:
                    await engine.skills.deny(approval.id, "the fuzzer says no")
                else:
                    await engine.skills.approve(approval.id)
                answered += 1
            await asyncio.wait([run], timeout=0.5)
        return await run
    finally:
        run.cancel()


async def no_workflow_task_failed(engine: Engine, workflow_id: str) -> None:
    handle = engine.skills.client.get_workflow_handle(workflow_id)
    failed = [event.event_id async for event in handle.fetch_history_events()
              if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED]
    assert not failed, f"{workflow_id}: workflow task failed at events {failed}"


async def nothing_left_running(engine: Engine) -> None:
    query = f"TaskQueue='{engine.settings.task_queue}' AND ExecutionStatus='Running'"

    async def idle() -> bool:
        return not [w async for w in engine.skills.client.list_workflows(query)]

    await eventually(idle, timeout=30)


@fuzz_settings(EXAMPLES)
@given(data=registrations())
async def test_every_registration_is_refused_by_field_or_runs_to_an_end(
        fuzz_engine: Engine, llm: ScriptedLLM, data: dict[str, Any]) -> None:
    outcome = await attempt(fuzz_engine, llm, data)
    event(outcome.split(":", 1)[0])  # refused, success, error or skipped: --hypothesis-show-statistics


@pytest.mark.parametrize("data", REGISTRATIONS)
async def test_the_corpus_of_found_examples_still_passes(fuzz_engine: Engine, llm: ScriptedLLM,
                                                        data: dict[str, Any]) -> None:
    await attempt(fuzz_engine, llm, data)
    await nothing_left_running(fuzz_engine)


async def test_after_a_round_of_fuzzing_no_workflow_is_left_running(fuzz_engine: Engine, llm: ScriptedLLM) -> None:
    """The property test's examples each end their own run; this checks the task queue as a whole
    after a handful, including a one-shot and an event skill, whose schedules retire or never exist."""
    for trigger in ({"in_minutes": 30}, {"event": "fuzz.happened"}, {"schedule": "*/5 * * * *"}):
        await attempt(fuzz_engine, llm, {"name": f"left {len(json.dumps(trigger))}", "instructions": "Say hello",
                                         "trigger_config": trigger, "notify_on_completion": False})
    # A call that waits for the owner: the fuzzer answers it, and the run ends.
    outcome = await attempt(fuzz_engine, llm, {
        "name": "left waiting", "instructions": "Say hello", "trigger_config": {"schedule": "*/5 * * * *"},
        "notify_on_completion": False, "execution_plan": DIRECT, "approval_required_tools": ["outbox_send_message"],
        "timeout_minutes": 5, "max_runs": 3, "jitter_seconds": 60, "overlap": "buffer_one", "catch_up": "all",
        "end_at": "2099-01-01T00:00:00", "approval_timeout_minutes": 60})
    assert outcome.startswith("success"), outcome
    await nothing_left_running(fuzz_engine)
