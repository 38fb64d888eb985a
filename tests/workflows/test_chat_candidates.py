"""When matching is unsure, the model chooses: close matches on words alone reach the chat as their
descriptions, and the model loads the one that fits with the `skill` tool (docs/skill-files.md).

The model is the scripted OpenAI-compatible server; discovery, matching, disclosure, the chat
workflow and the `skill` tool are real."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Engine
from tests.fakes.llm_server import ScriptedLLM, call, say


def write(folder: Path, name: str, description: str, body: str) -> None:
    (folder / name).mkdir(parents=True)
    (folder / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}\n")


async def test_close_matches_are_offered_and_the_model_loads_the_one_that_fits(assistant: Engine,
                                                                            llm: ScriptedLLM) -> None:
    user = assistant.settings.user_skills_dir
    write(user, "garden-roses", "Waters the garden's roses and tulips on dry days.",
          "# Roses\nWater the roses at dawn, at the foot, never the leaves.")
    write(user, "garden-tulips", "Waters the garden's roses, tulips and young trees.",
          "# Tulips\nTulips want little water once they flower.")
    llm.script("chat", [call("skill", {"skill_name": "garden-roses"}), say("Water them at dawn, at the foot.")])

    reply = await assistant.skills.chat("how should I water the roses and tulips", session_id="garden")

    assert reply.ok and reply.reply == "Water them at dawn, at the foot."
    first, second = llm.requests_for("chat")
    system = first.messages[0]["content"]
    offered = system[system.index("<candidate_skills>"):system.index("</candidate_skills>")]
    assert "<name>garden-roses</name>" in offered and "<name>garden-tulips</name>" in offered
    assert "<skill_instructions" not in system  # neither playbook forced on the model
    assert "skill" in first.tool_names
    assert "Water the roses at dawn" in second.messages[-1]["content"]  # the one it chose, loaded
