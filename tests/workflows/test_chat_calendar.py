"""The chat's reply to a skill that skips days: the model is told the next fires with the skipped days
marked (and can ask for more with memory_next_fires), and the facts under its words list them too."""

from __future__ import annotations

import re

from tests.conftest import Engine
from tests.fakes.llm_server import ScriptedLLM, call, say

FIRE = r"\d{4}-\d\d-\d\d (?:\d\d:\d\d \w{3}|skipped: [^;.]+)"
"""A fire (a new reminder's, at its exact time: a Direct plan is not spread) or a skipped day."""


async def test_a_working_days_skill_is_answered_with_its_next_fires(assistant: Engine, llm: ScriptedLLM) -> None:
    llm.script("chat", [
        call("memory_store_skill", {"name": "standup", "instructions": "Remind me of the standup",
                                    "cronExpression": "0 9 * * *", "timezone": "America/New_York",
                                    "businessDaysOnly": True, "skipHolidays": "US",
                                    "execution_plan": [{"toolName": "outbox_send_message",
                                                        "parameters": {"message": "Standup!"}}]}),
        say("Every working day at 9, not on US holidays: shall I? Reply yes."),
    ])
    reply = await assistant.skills.chat("Remind me of the standup every working day at 9 New York time, "
                                        "not on holidays", session_id="standup")
    assert reply.ok, reply.reply
    # The proposal shows the fires the schedule will make, its skipped days marked, as `skills next` does.
    [proposal] = reply.proposals
    [shown] = [line for line in proposal.summary.splitlines() if line.startswith("next fires: ")]
    fires = shown.removeprefix("next fires: ").split(", ")
    assert fires and all(re.fullmatch(r"\d{4}-\d\d-\d\d (?:\d\d:\d\d \S+|skipped: .+)", f) for f in fires), fires
    assert "when: cron '0 9 * * *' (America/New_York)\n" in proposal.summary  # a reminder: its exact time, no spread

    done = await assistant.skills.chat("yes", session_id="standup")
    [change] = done.changes
    assert len(change["coming"]) >= 5 and all(re.fullmatch(FIRE, line) for line in change["coming"])
    skill = await assistant.skills.get("standup")
    assert (skill.skip_holidays, skill.business_days_only) == ("US", True)
    [line] = done.change_lines()
    if any("skipped" in fire for fire in change["coming"]):
        assert "next fires " in line and "skipped" in line
    else:
        assert "next fire " in line

    # The model asks for more, and sees a weekend marked among ten fires.
    llm.script("chat", [call("memory_next_fires", {"skill_id": "standup", "count": 10}), say("Listed.")])
    await assistant.skills.chat("when does it fire?", session_id="standup")
    listed = llm.requests_for("chat")[-1].messages[-1]
    assert listed["role"] == "tool" and listed["content"].startswith(f"Skill {skill.id} 'standup', cron '0 9 * * *'")
    lines = listed["content"].splitlines()[1:]
    assert sum(1 for line in lines if "skipped" not in line) == 10 and any("skipped: weekend" in line for line in lines)
