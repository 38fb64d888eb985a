"""Workflow history per Agent-tier step: bounded, not growing with the conversation.

Runs Agent-tier skills of N steps (N-1 turns that each call a tool, then an answer)
against the scripted OpenAI-compatible server of the tests, on a real dev server with
the real worker, and prints for each N the run's history (events and bytes) and bytes
per step. Beside it, what passing the whole conversation in and out of every turn
would have put in history (computed from the stored conversation): that grows with
the square of the steps.

    .venv/bin/python -m bench.agent_history [--steps 5 10 20 40] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

import worker
from adapters.store import Store
from client import SkillsClient
from client.temporal_cli import temporal_binary
from config.settings import Settings
from search_attributes import SKILL_AGENT, SKILL_NAME, SKILL_TIER
from starter import exit_process
from tests.fakes.llm_server import ScriptedLLM, call, say

ARGUMENT = "x" * 200
"""Each turn asks for a tool with a couple of hundred characters of arguments, as a model does."""


async def measure(steps_list: list[int]) -> list[dict[str, float]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="skills-bench-") as tmp, ScriptedLLM() as llm:
        settings = Settings(task_queue="bench-agent", data_dir=Path(tmp), timezone="UTC",
                            llm_base_url=llm.base_url, llm_api_key="bench", llm_model="bench",
                            run_token_cap=10_000_000, skill_daily_tokens=10**9, daily_tokens=10**9, health_port=None)
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=temporal_binary(), data_converter=pydantic_data_converter,
            search_attributes=[SKILL_NAME, SKILL_AGENT, SKILL_TIER],
        )
        stop, ready = asyncio.Event(), asyncio.Event()
        running = asyncio.create_task(worker.run_worker(settings, env.client, stop, ready))
        await ready.wait()
        skills = SkillsClient(env.client, settings.task_queue)
        store = Store.open(settings.store_url)
        for steps in steps_list:
            model = f"bench-{steps}"
            llm.script(model, [call("outbox_list_messages", {"limit": 1, "note": ARGUMENT})
                               for _ in range(steps - 1)] + [say("Done.")])
            await skills.register({"name": model, "instructions": "Look at the outbox, then answer.",
                                   "model": model, "max_steps": 100, "notify_on_completion": False,
                                   "required_tools": ["outbox_list_messages"]})
            run = await skills.run(model)
            assert not isinstance(run, str) and run.status == "success", run
            history = await env.client.get_workflow_handle(run.workflow_id, run_id=run.run_id).fetch_history()
            size = sum(event.ByteSize() for event in history.events)
            conversation = [len(m.model_dump_json()) for m in store.conversations.load_messages(run.run_id)]
            # In and out of every turn, the conversation as it was at that turn.
            naive = sum(2 * sum(conversation[: 2 + 2 * k]) for k in range(steps))
            rows.append({"steps": steps, "events": len(history.events), "history_bytes": size,
                         "bytes_per_step": size / steps, "whole_conversation_bytes": naive})
            print(f"{steps:>4} steps  {len(history.events):>5} events  {size:>9,} bytes  "
                  f"{size / steps:>8,.0f} bytes/step   whole conversation per turn: {naive:>11,} bytes", flush=True)
        stop.set()
        await running
        await env.shutdown()
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[5, 10, 20, 40])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = asyncio.run(measure(args.steps))
    if args.json:
        print(json.dumps(figures, indent=2))
    exit_process(0)  # temporalio/sdk-python#300: skip teardown once the figures are out (flushed)
