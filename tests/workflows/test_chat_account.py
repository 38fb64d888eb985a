"""The engine says what a chat turn did, not the model: a small model's "Stored" with no call is corrected,
in the reply's data, on `skills chat` (text and --json) and through the Python client; a true one is not."""

from __future__ import annotations

import json

from skills.chat.account import NOTHING
from tests.conftest import Engine
from tests.fakes.llm_server import ScriptedLLM, Step, call, claims, say, structured
from tests.workflows.test_chat_confirmation import run_skills_chat, store_of

STAND_UP = {"name": "stand up", "instructions": "Remind me to stand up", "schedule": "0 9 * * 1-5",
            "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "Stand up!"}}]}


def lies(text: str) -> list[Step]:
    """A small model that claims an act twice: natively, then asked again structured (SKILLS_LLM_TOOLS=auto)."""
    return [claims(text), structured({"action": "reply", "reply": text})]


async def skills_chat(engine: Engine, *words: str) -> tuple[int, str]:
    """`skills chat ...` in its own process: exit code, and stdout then stderr."""
    code, out, err = await run_skills_chat(engine, *words)
    return code, out + err


async def test_a_stored_claimed_without_a_call_is_corrected(assistant: Engine, llm: ScriptedLLM) -> None:
    llm.script("chat", lies("Stored: Every weekday at 9 reminds me to stand up."))
    reply = await assistant.skills.chat("every weekday at 9 remind me to stand up", session_id="liar")
    assert reply.ok and reply.reply == "Stored: Every weekday at 9 reminds me to stand up."
    assert reply.effects == [] and reply.proposals == [] and reply.changes == []
    assert reply.correction is not None
    assert reply.correction.startswith("Nothing was stored: the model did not make a proposal.")
    assert reply.account_lines() == [reply.correction, f"asked again: {reply.asked_again}"]
    # The correction tells the truth: nothing is stored, nothing waits for a yes.
    assert await assistant.skills.list() == []
    assert store_of(assistant).approvals.list_approvals(session_id="liar") == []


async def test_a_promise_of_a_summary_with_no_call_is_asked_again_and_corrected(
        assistant: Engine, llm: ScriptedLLM) -> None:
    # Qwen2.5-Coder 1.5B's answer to a daily digest request, in a turn where it called nothing. The message
    # names no time, so only the promise tells the workflow that a call was needed.
    promise = "I will receive a summary of your outbox messages at 7 AM daily."
    llm.script("chat", lies(promise))
    reply = await assistant.skills.chat("read my outbox and tell me what is urgent", session_id="promise")
    assert reply.asked_again is not None  # the promise was heard: asked again, structured
    assert reply.ok and reply.effects == [] and reply.proposals == []
    assert reply.correction is not None and reply.correction.startswith("Nothing was stored"), reply.correction
    assert await assistant.skills.list() == []


async def test_a_proposal_made_is_the_account_and_nothing_is_corrected(assistant: Engine, llm: ScriptedLLM) -> None:
    llm.script("chat", [call("memory_store_skill", STAND_UP), say("Stored: every weekday at 9.")])
    reply = await assistant.skills.chat("every weekday at 9 remind me to stand up", session_id="honest")
    [effect] = reply.effects
    assert (effect.action, effect.approval_id, effect.tool) == ("proposed", reply.proposals[0].id, "memory_store_skill")
    assert effect.trigger == {"schedule": "0 9 * * 1-5", "timezone": "UTC"}, effect.trigger
    assert reply.correction is None
    assert reply.account_lines()[0].startswith(f"proposed #{effect.approval_id}, NOT made")


async def test_skills_chat_prints_the_engines_account_and_json_gives_it_as_data(
        assistant: Engine, llm: ScriptedLLM) -> None:
    # Once asked again, the session's later turns are asked structured from the start (SKILLS_LLM_TOOLS=auto).
    llm.script("chat", [*lies("Stored: Every weekday at 9 reminds me to stand up."),
                        structured({"action": "reply", "reply": "Done! I'll remind you in 10 minutes."}),
                        structured({"action": "reply", "reply": "Hello! What should I schedule?"})])
    code, shown = await skills_chat(assistant, "every weekday at 9 remind me to stand up", "--session", "cli")
    lines = shown.splitlines()
    assert code == 0 and lines[0] == "Stored: Every weekday at 9 reminds me to stand up."
    assert lines[1].startswith("  Nothing was stored: the model did not make a proposal."), shown

    code, printed = await skills_chat(assistant, "remind me in 10 minutes to check the oven", "--session", "cli",
                                      "--json")
    data = json.loads(printed[:printed.rindex("}") + 1])
    assert code == 0 and data["ok"] is True  # the turn completed...
    assert data["effects"] == [] and data["correction"].startswith("Nothing was stored")  # ...and did nothing

    code, shown = await skills_chat(assistant, "hi", "--session", "cli")
    assert code == 0 and shown.splitlines()[1] == f"  {NOTHING}", shown  # an honest turn that did nothing


async def test_a_change_that_pauses_as_it_moves_says_so(assistant: Engine, llm: ScriptedLLM) -> None:
    # An update that pauses the skill and moves it. Before, the account said only "updated": the owner was never
    # told the skill would not fire. (Where the owner's words refuse the pause, it is not made at all:
    # tests/workflows/test_chat_small_model.py.)
    await assistant.skills.register(STAND_UP)
    llm.script("chat", [call("memory_update_skill", {"skill_id": "stand up", "enabled": False,
                                                     "schedule": "0 10 * * 1-5"}),
                        say("Moved it to 10.")])
    reply = await assistant.skills.chat("pause the stand up reminder and put it on cron 0 10 * * 1-5",
                                        session_id="moved")
    [effect] = reply.effects
    assert (effect.action, effect.enabled, effect.changed) == ("updated", False, ["enabled", "trigger_config"])
    assert effect.summary.endswith(": paused; now fires cron '0 10 * * 1-5' (UTC)"), effect.summary
    assert reply.account_lines() == [f"updated: skill {effect.skill_id} 'stand up' (direct tier): "
                                     "paused; now fires cron '0 10 * * 1-5' (UTC)"]
    stored = await assistant.skills.get("stand up")
    assert not stored.enabled and stored.trigger_config is not None and stored.trigger_config.schedule == "0 10 * * 1-5"
    # The model read what the update did too, in the same words.
    answer = llm.requests_for("chat")[1].messages[-1]
    assert answer["role"] == "tool" and "What changed: paused; now fires cron '0 10 * * 1-5' (UTC)." in answer["content"]
