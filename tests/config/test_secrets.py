"""Configured secrets stay secret: an LLM endpoint that echoes the API key in its error leaves no
trace of it in the run, the notice, the Temporal history or the worker's log."""

from __future__ import annotations

import json

from temporalio.client import Client

from client import SkillsClient
from config.secrets import add_secrets, mask_url, process_secrets, redact
from config.settings import Settings
from tests.conftest import worker_process
from tests.fakes.llm_server import ScriptedLLM, error, scripted_llm_fixture
from tests.history import readable

KEY = "sk-echoed-secret-key-9876543210"

llm = scripted_llm_fixture(api_key=KEY)


async def test_an_echoed_api_key_is_redacted_everywhere(client: Client, settings: Settings,
                                                        llm: ScriptedLLM) -> None:
    echo = {"error": {"message": f"bad request from key {KEY}", "type": "invalid_request_error"}}
    llm.script("echo", [error(400, body=echo)])
    skills = SkillsClient(client, settings.task_queue)
    env = {"SKILLS_LLM_BASE_URL": llm.base_url, "SKILLS_LLM_API_KEY": KEY, "SKILLS_LLM_MODEL": "echo"}
    with worker_process(settings, client.service_client.config.target_host, **env):
        await skills.register({"name": "leaky", "instructions": "Say hello."})
        run = await skills.run("leaky")
        notices = await skills.outbox()
    assert run.status == "error" and "bad request from key ***" in run.summary
    assert KEY not in run.summary and KEY not in json.dumps(notices)
    assert any("leaky" in n["message"] and "***" in n["message"] for n in notices)
    history = await client.get_workflow_handle(run.workflow_id).fetch_history()
    # Decoded: in the JSON as it is, a payload's data is base64, where the key would not be found as it is.
    assert KEY not in readable(history.to_json_dict())
    assert KEY not in (settings.data_dir / "worker.log").read_text()


def test_a_database_url_is_shown_without_its_password() -> None:
    url = "postgresql+psycopg://skills:s3cret-pw@db.internal:5432/skills"
    assert mask_url(url) == "postgresql+psycopg://skills:***@db.internal:5432/skills"


def test_temporal_credentials_from_the_environment_are_secrets() -> None:
    """A worker in Kubernetes gets TEMPORAL_API_KEY (or a client key's PEM) from a Secret: an error
    that quotes it is shown masked, like the LLM key."""
    environ = {"TEMPORAL_API_KEY": "tmprl-key-5f3a9c1e77", "TEMPORAL_TLS_CLIENT_KEY_DATA": "-----BEGIN KEY-----x1y2"}
    add_secrets(process_secrets(None, None, environ))
    assert redact("Unauthenticated: key tmprl-key-5f3a9c1e77 expired") == "Unauthenticated: key *** expired"
    assert redact("bad PEM -----BEGIN KEY-----x1y2") == "bad PEM ***"
