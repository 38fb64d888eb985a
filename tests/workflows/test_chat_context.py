"""A chat request that would not fit the model's context is shortened by the engine, which says so,
instead of being cut silently by the server: the context comes from SKILLS_LLM_CONTEXT, else from
what the endpoint's model list says of the model."""

from __future__ import annotations

from temporalio.client import Client

from config.settings import Settings
from skills.llm.structured import ASK_AGAIN
from skills.llm.tokens import request_tokens
from skills.skillmd import BUNDLED_DIR
from tests.conftest import Engine
from tests.fakes.llm_server import ScriptedLLM, say, structured


def first_request_tokens(llm: ScriptedLLM, index: int = -1) -> int:
    body = llm.requests_for("chat")[index].body
    return request_tokens(body["messages"], body.get("tools", []))


async def test_the_endpoints_stated_context_drops_the_lowest_ranked_skill_and_says_so(
        client: Client, settings: Settings) -> None:
    with ScriptedLLM(contexts={"chat": 2_048}) as llm:
        engine = await Engine(settings.model_copy(update={
            "llm_base_url": llm.base_url, "llm_api_key": "sk-test", "llm_model": "chat",
            "bundled_skills_dir": BUNDLED_DIR}), client).start()
        try:
            # No call for a request to schedule: SKILLS_LLM_TOOLS=auto asks once more, structured.
            llm.script("chat", [say("When should it stop?"),
                                structured({"action": "reply", "reply": "When should it stop?"})])
            reply = await engine.skills.chat("every weekday at 9 remind me to stand up", session_id="small")
        finally:
            await engine.stop()
    assert reply.ok and "cron-scheduling" in reply.matched and reply.asked_again
    assert first_request_tokens(llm, 1) <= 2_048 - 256  # the structured request fits too
    assert reply.left_out == ["the instructions of the skill cron-scheduling"]
    # The engine's note asking again belongs to the user's message: a cut to fit never keeps one without the other.
    again = [m["content"] for m in llm.requests_for("chat")[1].messages if m["role"] == "user"]
    assert again == ["every weekday at 9 remind me to stand up", ASK_AGAIN]
    system = llm.requests_for("chat")[0].messages[0]["content"]
    assert system.startswith("You are the user's assistant.") and "IN vs EVERY" not in system
    assert first_request_tokens(llm) <= 2_048 - 256  # room for the answer
    assert llm.requests_for("chat")[0].messages[-1]["content"] == "every weekday at 9 remind me to stand up"


async def test_the_setting_wins_and_a_long_session_drops_its_oldest_exchanges(
        client: Client, settings: Settings) -> None:
    with ScriptedLLM(contexts={"chat": 2_048}) as llm:
        engine = await Engine(settings.model_copy(update={
            "llm_base_url": llm.base_url, "llm_api_key": "sk-test", "llm_model": "chat",
            "bundled_skills_dir": BUNDLED_DIR, "llm_context": 4_096}), client).start()
        try:
            llm.script("chat", [say(f"Noted, part {n}.") for n in range(1, 5)])
            replies = [await engine.skills.chat(f"note part {n}: " + "the minutes of the meeting say " * 120,
                                                session_id="long") for n in range(1, 5)]
        finally:
            await engine.stop()
    assert all(r.ok for r in replies)
    assert replies[0].left_out == []  # the stated 2,048 is not used: SKILLS_LLM_CONTEXT says 4,096
    last = replies[-1]
    assert last.left_out and last.left_out[0].endswith("earlier messages of this conversation")
    sent = [m for m in llm.requests_for("chat")[-1].messages if m["role"] == "user"]
    assert sent[-1]["content"].startswith("note part 4:") and not sent[0]["content"].startswith("note part 1:")
    assert first_request_tokens(llm) <= 4_096 - 512
