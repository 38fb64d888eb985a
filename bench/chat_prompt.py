"""Prompt tokens of a chat turn's requests: what a local model must read before its first token.

Ten typical messages (reminders, a daily summary, a list, changes) each run as one `skills chat`
turn of its own session, on a real dev server with the real worker and the bundled playbooks; the
model is the tests' scripted OpenAI-compatible server, making the tool calls a model makes. For
every request the model receives it prints the estimated prompt tokens (``skills.llm.tokens``, about
2.5 % over a real Qwen2.5 count), its characters, and the tools it offered. The first request of a
turn is what a slow endpoint reads before it answers anything: the target is at most 3,000 tokens.

    .venv/bin/python -m bench.chat_prompt [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from dataclasses import dataclass
from typing import Any

from bench.harness import started
from skills.llm.tokens import request_tokens
from skills.naming import GET_TOOL_CATALOG
from starter import exit_process
from tests.fakes.llm_server import ScriptedLLM, Step, call, say

FIRST_REQUEST_TARGET = 3_000

STAND_UP = {"name": "stand up", "instructions": "Remind the user to stand up.",
            "trigger_config": {"schedule": "0 9 * * 1-5"},
            "execution_plan": [{"id": "step1", "toolName": "outbox_send_message",
                                "parameters": {"message": "Time to stand up!"}}]}
WATER = {"name": "drink water", "instructions": "Remind the user to drink water.",
         "trigger_config": {"in_minutes": 5},
         "execution_plan": [{"id": "step1", "toolName": "outbox_send_message",
                             "parameters": {"message": "Time to drink water!"}}]}
INBOX = {"name": "morning inbox summary", "description": "Daily 7:00 summary of the outbox.",
         "instructions": "List the last 20 messages with outbox_list_messages and send the user one message with "
                         "outbox_send_message: at most 5 bullets, most urgent first. If there is nothing new, "
                         "answer NOTHING_TO_REPORT.",
         "trigger_config": {"schedule": "0 7 * * *"},
         "required_tools": ["outbox_list_messages", "outbox_send_message"], "max_steps": 6}


@dataclass
class Turn:
    message: str
    script: list[Step]
    confirm: bool = False
    """Answer yes afterwards (no model turn), so a later turn finds the skill made."""


TURNS = [
    Turn("Remind me in 5 minutes to drink water",
         [call(GET_TOOL_CATALOG, {}), call("memory_store_skill", WATER), say("I'll remind you at 12:05.")],
         confirm=True),
    Turn("every weekday at 9 remind me to stand up",
         [call(GET_TOOL_CATALOG, {}), call("memory_store_skill", STAND_UP), say("Every weekday at 9.")],
         confirm=True),
    Turn("every morning at 7 summarize my inbox",
         [call(GET_TOOL_CATALOG, {}), call("memory_store_skill", INBOX), say("Every morning at 7.")], confirm=True),
    Turn("remind me every hour to stretch",
         [call("memory_store_skill", {"name": "stretch", "instructions": "Remind the user to stretch.",
                                      "trigger_config": {"schedule": "0 * * * *"},
                                      "execution_plan": [{"id": "step1", "toolName": "outbox_send_message",
                                                          "parameters": {"message": "Stretch!"}}]}),
          say("Every hour.")]),
    Turn("what skills do I have?", [call("memory_list_skills", {}), say("You have three skills.")]),
    Turn("move the stand up reminder to 9:30",
         [call("memory_update_skill", {"skill_id": "stand up", "trigger_config": {"schedule": "30 9 * * 1-5"}}),
          say("Moved to 9:30.")]),
    Turn("when does stand up fire next?",
         [call("memory_next_fires", {"skill_id": "stand up", "count": 5}), say("Tomorrow at 9:30.")]),
    Turn("show me the morning inbox summary", [call("memory_get_skill", {"skill_id": "morning inbox summary"}),
                                               say("It runs at 7 every day.")]),
    Turn("pause the morning inbox summary",
         [call("memory_update_skill", {"skill_id": "morning inbox summary", "enabled": False}), say("Paused.")]),
    Turn("delete the drink water reminder",
         [call("memory_delete_skill", {"skill_id": "drink water"}), say("Deleted.")]),
]


async def measure() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with ScriptedLLM() as llm:
        async with started("bench-chat", llm_base_url=llm.base_url, llm_api_key="bench", llm_model="chat",
                           run_token_cap=10_000_000, daily_tokens=10**9) as h:
            for number, turn in enumerate(TURNS, start=1):
                model_seen = len(llm.requests_for("chat"))
                llm.script("chat", turn.script)
                session = f"bench-{number}"
                reply = await h.skills.chat(turn.message, session_id=session)
                if turn.confirm:
                    await h.skills.chat("yes", session_id=session)
                for index, request in enumerate(llm.requests_for("chat")[model_seen:], start=1):
                    body = request.body
                    tokens = request_tokens(body.get("messages", []), body.get("tools", []))
                    chars = len(json.dumps(body.get("messages", []))) + len(json.dumps(body.get("tools", [])))
                    rows.append({"turn": number, "message": turn.message, "request": index, "tokens": tokens,
                                 "chars": chars, "tools": len(body.get("tools", [])), "ok": reply.ok})
                    print(f"{number:>2}.{index}  {tokens:>6,} tokens {chars:>7,} chars {len(body.get('tools', [])):>3}"
                          f" tools  {turn.message if index == 1 else ''}", flush=True)
    firsts = [r["tokens"] for r in rows if r["request"] == 1]
    print(f"first requests: max {max(firsts):,} tokens, mean {sum(firsts) / len(firsts):,.0f}; target "
          f"<= {FIRST_REQUEST_TARGET:,}: {'met' if max(firsts) <= FIRST_REQUEST_TARGET else 'NOT met'}", flush=True)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = asyncio.run(measure())
    if args.json:
        print(json.dumps(figures, indent=2))
    exit_process(0)  # temporalio/sdk-python#300: skip teardown once the figures are out (flushed)
