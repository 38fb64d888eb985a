"""No private text in Temporal history: read with the real `temporal` CLI, as whoever holds the
namespace would. With the payload codec on, a run's history shows none of what its tool returned,
and the worker's codec endpoint shows it to an operator; without the codec, secrets in a tool's
successful result are redacted."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from pathlib import Path

from temporalio.client import Client

from client.codec import EncryptionCodec, PayloadKeys, with_codec
from client.files import sync_files
from client.temporal_cli import temporal_binary
from config.settings import Settings
from skills.spec.models import RunRecord
from tests.conftest import Engine, free_port, trust_files, write_mcp_config
from tests.fakes.llm_server import ScriptedLLM, call, say
from tests.history import decoded, strings
from tests.starter.test_cli import run_skills
from tests.workflows.test_scripts import NEVER, step, write_skill

FAKES = Path(__file__).resolve().parent.parent / "fakes"
PRIVATE = "Marguerite's new door code is 4417-CARDAMOM"
"""What the tool returns (a mail's body): in no payload the test sends, only in the tool's result."""


async def temporal_show(client: Client, workflow_id: str, *extra: str) -> str:
    """`temporal workflow show -w ID -o json` as an operator runs it, every payload's data (base64
    in the CLI's JSON) decoded and appended: all a reader of the namespace can read."""
    process = await asyncio.create_subprocess_exec(
        temporal_binary(), "workflow", "show", "-w", workflow_id, "-o", "json",
        "--address", client.service_client.config.target_host, "--namespace", client.namespace, *extra,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await process.communicate()
    assert process.returncode == 0, f"temporal workflow show failed: {err.decode()}"
    history = json.loads(out)
    assert history["events"], "no events shown"
    return "\n".join([out.decode(), *(decoded(value) for value in strings(history))])


def with_mail(settings: Settings, tmp_path: Path, body: str) -> Settings:
    state = tmp_path / "gmail.json"
    state.write_text(json.dumps({"new_emails": [{"from": "marguerite@example.org", "subject": "door",
                                                  "body": body}]}))
    config = write_mcp_config(tmp_path / "mcp.json", {
        "gmail": {"command": sys.executable, "args": [str(FAKES / "gmail_server.py")],
                  "env": {"FAKE_GMAIL_STATE": str(state)}}})
    return settings.model_copy(update={"mcp_config": config})


MAIL_CHECK = {"name": "mail check", "instructions": "Read my new mail", "notify_on_completion": False,
              "execution_plan": [{"id": "mail", "toolName": "gmail_get_new_emails", "parameters": {}}]}


async def run_mail_check(engine: Engine) -> str:
    """Register the skill, run it once to the end; its workflow id."""
    await engine.skills.register(MAIL_CHECK)
    workflow_id = await engine.skills.run("mail check", wait=False)
    assert isinstance(workflow_id, str)
    run = await engine.skills.client.get_workflow_handle(workflow_id, result_type=RunRecord).result()
    assert run.status == "success", run
    return workflow_id


async def test_with_the_codec_history_holds_ciphertext_and_the_endpoint_decodes_it(
        client: Client, settings: Settings, tmp_path: Path) -> None:
    keys = f"k1:{base64.b64encode(os.urandom(32)).decode()}"
    port = free_port()
    settings = with_mail(settings, tmp_path, PRIVATE).model_copy(update={
        "payload_keys": keys, "codec_endpoint": True, "health_port": port, "health_host": "127.0.0.1"})
    encrypted = with_codec(client, EncryptionCodec(PayloadKeys.parse(keys)))
    engine = await Engine(settings, encrypted).start()
    try:
        workflow_id = await run_mail_check(engine)
        history = await temporal_show(client, workflow_id)
        assert "binary/encrypted" in history
        # Each part of the private text, long enough that the history's own figures cannot make it by chance:
        # "4417" alone was found in a timestamp's nanoseconds.
        assert "CARDAMOM" not in history and "Marguerite" not in history and "4417-CARDAMOM" not in history
        assert "door code" not in history
        assert "get_new_emails" not in history  # the activities' summaries are payloads too
        # What stays readable, by design: ids, types and the search attributes (SkillName...).
        assert '"SkillName"' in history and '"call_tool"' in history

        decoded = await temporal_show(client, workflow_id, "--codec-endpoint", f"http://127.0.0.1:{port}/codec")
        assert "4417-CARDAMOM" in decoded
    finally:
        await engine.stop()


async def test_without_the_codec_a_secret_in_a_tool_result_is_redacted_in_history(
        client: Client, settings: Settings, tmp_path: Path) -> None:
    leaked_key = "sk-test-leaked-0123456789abcdef"
    settings = with_mail(settings, tmp_path, f"your key is {leaked_key} keep it safe").model_copy(
        update={"llm_api_key": leaked_key})
    engine = await Engine(settings, client).start()
    try:
        workflow_id = await run_mail_check(engine)
        history = await temporal_show(client, workflow_id)
        assert "keep it safe" in history  # the result is there, in clear: only the secret is blotted out
        assert leaked_key not in history
        assert "your key is ***" in history
    finally:
        await engine.stop()


async def test_the_cli_reads_with_the_key_and_names_the_key_id_without_it(
        client: Client, settings: Settings, tmp_path: Path) -> None:
    keys = f"k7:{base64.b64encode(os.urandom(32)).decode()}"
    settings = settings.model_copy(update={"payload_keys": keys})
    engine = await Engine(settings, with_codec(client, EncryptionCodec(PayloadKeys.parse(keys)))).start()
    try:
        await engine.skills.register(MAIL_CHECK | {"execution_plan": [
            {"toolName": "outbox_send_message", "parameters": {"message": "hello"}}]})
        where = ["--address", client.service_client.config.target_host, "--task-queue", settings.task_queue]
        with_key = await asyncio.to_thread(run_skills, "list", "--json", *where, SKILLS_PAYLOAD_KEYS=keys)
        assert with_key.returncode == 0, with_key.stderr
        assert [s["name"] for s in json.loads(with_key.stdout)] == ["mail check"]

        without = await asyncio.to_thread(run_skills, "list", *where)
        assert without.returncode != 0
        assert "key id 'k7'" in without.stderr + without.stdout and "SKILLS_PAYLOAD_KEYS" in without.stderr + without.stdout
    finally:
        await engine.stop()


async def test_a_chat_reply_that_echoes_the_llm_key_is_redacted_in_history(
        assistant: Engine, llm: ScriptedLLM, client: Client) -> None:
    llm.script("chat", [say(f"Your key is {assistant.settings.llm_api_key}, keep it safe.")])
    reply = await assistant.skills.chat("what is my key?", session_id="leaky", turn_id="t1")
    assert reply.reply == "Your key is ***, keep it safe."
    history = await temporal_show(client, "chat-leaky-t1")
    assert "keep it safe" in history and str(assistant.settings.llm_api_key) not in history


LEAK_SCRIPT = 'print("the script found {key} in a log")\n'


async def test_an_agent_tools_excerpt_and_a_scripts_output_are_redacted_in_history(
        client: Client, settings: Settings, tmp_path: Path, llm: ScriptedLLM) -> None:
    # Each activity that returns outside text has its own result: an Agent tool's excerpt (agent_tool), a
    # Direct step's script output (run_script) and an Agent's script call (agent_script). A secret in any
    # of them stays out of history, as in a Direct tool's result.
    leaked_key = "sk-test-leaked-fedcba9876543210"
    settings = with_mail(settings, tmp_path, f"your key is {leaked_key} keep it safe").model_copy(update={
        "llm_api_key": leaked_key, "llm_base_url": llm.base_url, "llm_model": "default", "scripts_enabled": True})
    script = {"leak.py": LEAK_SCRIPT.format(key=leaked_key)}
    write_skill(settings.user_skills_dir, "script-step", plan=step("leak.py"), scripts=script, trigger=NEVER)
    write_skill(settings.user_skills_dir, "script-agent", scripts=script, trigger=NEVER)
    llm.script("default", [call("gmail_get_new_emails", {}), say("Read it."),
                           call("run_script", {"script": "leak.py"}), say("Ran it.")])
    engine = await Engine(settings, client).start()
    try:
        await trust_files(engine)
        await sync_files(engine.skills)
        await engine.skills.register({"name": "mail agent", "instructions": "Read my new mail",
                                      "required_tools": ["gmail_get_new_emails"], "notify_on_completion": False})
        mail, script = "your key is *** keep it safe", "the script found *** in a log"
        for name, agent, blotted in [("mail agent", None, mail), ("script-step", "files", script),
                                     ("script-agent", "files", script)]:
            workflow_id = await engine.skills.run(name, agent, wait=False)
            assert isinstance(workflow_id, str)
            run = await client.get_workflow_handle(workflow_id, result_type=RunRecord).result()
            assert run.status == "success" and run.tool_calls, (name, run)
            history = await temporal_show(client, workflow_id)
            assert leaked_key not in history, name
            # The secret blotted out where it stood, not some "***" elsewhere in the history.
            assert blotted in history, name
    finally:
        await engine.stop()
