"""The payload codec (client/codec.py) and its endpoint on the worker's HTTP port (service/codec.py):
keys by id, rotation, refusal of what was tampered with, and Temporal's remote codec protocol over
real HTTP."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.api.failure.v1 import Failure
from temporalio.client import Client

from client.codec import (
    ENCODING,
    KEY_ID,
    EncryptionCodec,
    PayloadKeys,
    codec_from_environ,
    data_converter,
    settings_codec,
)
from config.secrets import redact
from config.settings import Settings, SettingsError
from service.codec import CodecEndpoint
from service.health import HealthServer
from skills.errors import PayloadKeyError


def new_key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


OLD, NEW = base64.b64encode(b"o" * 32).decode(), base64.b64encode(b"n" * 32).decode()
"""Fixed, so that parallel test processes collect the same parameters."""
MESSAGE = "Dinner with Marguerite at eight"


def plain(text: str = MESSAGE) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(text).encode())


def codec(spec: str) -> EncryptionCodec:
    keys = PayloadKeys.parse(spec)
    return EncryptionCodec(keys)


async def test_a_payload_is_ciphertext_that_names_its_key_and_decodes_back() -> None:
    sealed = (await codec(f"k1:{OLD}").encode([plain()]))[0]
    assert sealed.metadata["encoding"] == ENCODING and sealed.metadata[KEY_ID] == b"k1"
    assert MESSAGE.encode() not in sealed.SerializeToString()
    assert b"json/plain" not in sealed.SerializeToString()  # the metadata is sealed too
    assert (await codec(f"k1:{OLD}").decode([sealed]))[0] == plain()


async def test_a_rotated_key_still_decodes_what_the_old_one_wrote() -> None:
    sealed = (await codec(f"k1:{OLD}").encode([plain()]))[0]
    rotated = codec(f"k2:{NEW},k1:{OLD}")
    assert (await rotated.decode([sealed]))[0] == plain()
    resealed = (await rotated.encode([plain()]))[0]
    assert resealed.metadata[KEY_ID] == b"k2"  # the first key is the current one


async def test_an_unknown_key_id_is_named() -> None:
    sealed = (await codec(f"k1:{OLD}").encode([plain()]))[0]
    with pytest.raises(PayloadKeyError, match=r"key id 'k1'.*its keys: k2.*SKILLS_PAYLOAD_KEYS"):
        await codec(f"k2:{NEW}").decode([sealed])


async def test_tampered_ciphertext_and_a_wrong_key_are_refused() -> None:
    sealed = (await codec(f"k1:{OLD}").encode([plain()]))[0]
    flipped = bytearray(sealed.data)
    flipped[-20] ^= 1
    tampered = Payload(metadata=dict(sealed.metadata), data=bytes(flipped))
    with pytest.raises(PayloadKeyError, match="key id 'k1' does not decrypt: it was altered"):
        await codec(f"k1:{OLD}").decode([tampered])
    with pytest.raises(PayloadKeyError, match="key id 'k1' does not decrypt"):
        await codec(f"k1:{NEW}").decode([sealed])  # same id, another key
    relabelled = Payload(metadata={**dict(sealed.metadata), KEY_ID: b"k2"}, data=sealed.data)
    with pytest.raises(PayloadKeyError, match="key id 'k2' does not decrypt"):
        await codec(f"k1:{OLD},k2:{OLD}").decode([relabelled])  # the key id is bound to the ciphertext


async def test_plain_payloads_from_before_the_codec_pass_through() -> None:
    assert (await codec(f"k1:{OLD}").decode([plain()]))[0] == plain()


@pytest.mark.parametrize(("spec", "problem"), [
    ("", "no key given"),
    ("k1", "entry 1 is not id:base64key"),
    ("bad id:" + OLD, "entry 1 is not id:base64key"),
    ("k1:c2hvcnQ=", "key 'k1' is not 32 bytes"),
    (f"k1:{OLD},k1:{NEW}", "key id 'k1' is given twice"),
])
def test_bad_keys_are_refused_naming_the_setting_never_the_key(spec: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem) as refused:
        PayloadKeys.parse(spec)
    assert str(refused.value).startswith("SKILLS_PAYLOAD_KEYS:")
    assert OLD not in str(refused.value) and NEW not in str(refused.value)


def test_keys_from_the_environment_or_a_mounted_secret_file(tmp_path: Path) -> None:
    secret = tmp_path / "payload-keys"
    secret.write_text(f"# rotated 2026-11\nk2:{NEW}\nk1:{OLD}\n")
    from_file = codec_from_environ({"SKILLS_PAYLOAD_KEYS_FILE": str(secret)})
    assert from_file is not None and from_file.keys.ids == ["k2", "k1"]
    from_text = codec_from_environ({"SKILLS_PAYLOAD_KEYS": f"k2:{NEW},k1:{OLD}"})
    assert from_text == from_file
    assert codec_from_environ({"SKILLS_PAYLOAD_KEYS": ""}) is None
    assert redact(f"the key is {NEW}") == "the key is ***"  # loaded keys are secrets: no log shows them
    with pytest.raises(ValueError, match="both set"):
        codec_from_environ({"SKILLS_PAYLOAD_KEYS": f"k1:{OLD}", "SKILLS_PAYLOAD_KEYS_FILE": str(secret)})
    with pytest.raises(SettingsError, match=r"SKILLS_PAYLOAD_KEYS_FILE: cannot read .*missing"):
        settings_codec(Settings(payload_keys_file=tmp_path / "missing"))


def test_the_endpoint_settings_are_checked() -> None:
    with pytest.raises(SettingsError, match="SKILLS_CODEC_ENDPOINT is on but no payload keys"):
        Settings.from_env({"SKILLS_CODEC_ENDPOINT": "true"})
    with pytest.raises(SettingsError, match="SKILLS_HEALTH_PORT is off"):
        Settings.from_env({"SKILLS_CODEC_ENDPOINT": "true", "SKILLS_PAYLOAD_KEYS": f"k1:{OLD}",
                           "SKILLS_HEALTH_PORT": "off"})
    settings = Settings.from_env({"SKILLS_CODEC_ENDPOINT": "1", "SKILLS_PAYLOAD_KEYS": f"k1:{OLD}",
                                  "SKILLS_CODEC_CORS_ORIGINS": "http://localhost:8233/, https://ui.example"})
    assert settings.codec_cors_origins == ["http://localhost:8233", "https://ui.example"]
    assert OLD not in repr(settings)


async def test_failures_are_encrypted_too() -> None:
    converter = data_converter(codec(f"k1:{OLD}"))
    failure = Failure()
    await converter.encode_failure(ValueError(MESSAGE), failure)
    assert MESSAGE.encode() not in failure.SerializeToString()
    assert MESSAGE in str(await converter.decode_failure(failure))


# --- the endpoint, over real HTTP ---------------------------------------------------------------

ORIGIN = "http://localhost:8233"


@pytest.fixture
async def endpoint() -> AsyncIterator[int]:
    codec_endpoint = CodecEndpoint(codec(f"k2:{NEW},k1:{OLD}"), token="s3cret-token", origins=[ORIGIN])
    server = HealthServer("127.0.0.1", 0, {}, codec_endpoint.routes())
    port = await server.start()
    yield port
    await server.close()


def _request(port: int, path: str, body: bytes | None, method: str = "POST",
             **headers: str) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method,
                                     headers={k.replace("_", "-"): v for k, v in headers.items()})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


async def call(port: int, path: str, body: bytes | None = None, method: str = "POST",
               **headers: str) -> tuple[int, dict[str, str], bytes]:
    return await asyncio.to_thread(_request, port, path, body, method, **headers)


def wire(payloads: list[Payload]) -> bytes:
    """``{"payloads": [...]}`` as proto3 JSON, the way the CLI and the Web UI send it."""
    return json.dumps({"payloads": [
        {"metadata": {k: base64.b64encode(v).decode() for k, v in p.metadata.items()},
         "data": base64.b64encode(p.data).decode()} for p in payloads]}).encode()


def unwire(body: bytes) -> list[Payload]:
    return [Payload(metadata={k: base64.b64decode(v) for k, v in p.get("metadata", {}).items()},
                    data=base64.b64decode(p.get("data", ""))) for p in json.loads(body)["payloads"]]


BEARER = {"Authorization": "Bearer s3cret-token", "Content_Type": "application/json", "X_Namespace": "default"}


async def test_the_endpoint_encodes_and_decodes_per_the_protocol(endpoint: int) -> None:
    status, _, body = await call(endpoint, "/codec/encode", wire([plain()]), **BEARER)
    assert status == 200
    [sealed] = unwire(body)
    assert sealed.metadata[KEY_ID] == b"k2" and MESSAGE.encode() not in sealed.data
    old = (await codec(f"k1:{OLD}").encode([plain("older")]))[0]
    status, _, body = await call(endpoint, "/codec/decode", wire([sealed, old, plain("never sealed")]), **BEARER)
    assert status == 200
    assert [json.loads(p.data) for p in unwire(body)] == [MESSAGE, "older", "never sealed"]


async def test_the_endpoint_wants_its_token_and_names_an_unknown_key(endpoint: int) -> None:
    sealed = (await codec(f"k1:{OLD}").encode([plain()]))[0]
    status, headers, _ = await call(endpoint, "/codec/decode", wire([sealed]))
    assert status == 401 and headers["WWW-Authenticate"].startswith("Bearer")
    status, _, _ = await call(endpoint, "/codec/decode", wire([sealed]), Authorization="Bearer wrong")
    assert status == 401
    stranger = (await codec(f"k9:{new_key()}").encode([plain()]))[0]
    status, _, body = await call(endpoint, "/codec/decode", wire([stranger]), **BEARER)
    assert status == 400 and b"key id 'k9'" in body
    status, _, body = await call(endpoint, "/codec/decode", b"{not json", **BEARER)
    assert status == 400 and b"proto3 JSON" in body
    status, _, _ = await call(endpoint, "/codec/decode", None, method="GET", **BEARER)
    assert status == 405


async def test_the_web_ui_origin_gets_cors_and_others_are_refused(endpoint: int) -> None:
    status, headers, _ = await call(endpoint, "/codec/decode", None, method="OPTIONS", Origin=ORIGIN,
                                    Access_Control_Request_Method="POST",
                                    Access_Control_Request_Headers="content-type,x-namespace,authorization")
    assert status == 204
    assert headers["Access-Control-Allow-Origin"] == ORIGIN
    assert "X-Namespace" in headers["Access-Control-Allow-Headers"]
    assert "POST" in headers["Access-Control-Allow-Methods"]
    status, headers, _ = await call(endpoint, "/codec/encode", wire([plain()]), Origin=ORIGIN, **BEARER)
    assert status == 200 and headers["Access-Control-Allow-Origin"] == ORIGIN
    status, headers, body = await call(endpoint, "/codec/decode", wire([plain()]), Origin="https://evil.example",
                                       **BEARER)
    assert status == 403 and "Access-Control-Allow-Origin" not in headers and b"SKILLS_CODEC_CORS_ORIGINS" in body


async def test_an_oversized_body_is_refused_unread(endpoint: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", endpoint)
    writer.write(b"POST /codec/decode HTTP/1.1\r\nContent-Length: 999999999\r\n\r\n")
    await writer.drain()
    status_line = await reader.readline()
    writer.close()
    assert b" 413 " in status_line


def test_skills_dev_points_its_web_ui_at_the_endpoint_and_says_payloads_are_encrypted() -> None:
    from starter.dev import DevProfile, banner, codec_endpoint_url, server_command

    profile = DevProfile()
    settings = Settings(payload_keys=f"k2:{NEW},k1:{OLD}", codec_endpoint=True, health_port=8080)
    url = codec_endpoint_url(profile, settings)
    assert url == f"http://{profile.server.ip}:8080/codec"
    command = server_command(profile, "temporal", ui_codec_endpoint=url)
    assert command[command.index("--ui-codec-endpoint") + 1] == url
    shown = dict(banner(profile, settings, telegram=False))
    assert shown["Payloads"].startswith("encrypted, key k2; codec endpoint http://")
    assert NEW not in str(shown) and OLD not in str(shown)
    assert dict(banner(profile, Settings(), telegram=False))["Payloads"].startswith("plain")


async def test_every_program_on_client_connect_encrypts_with_the_environments_keys(
        client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI, `skills mcp`, `skills telegram` and `skills setup` all connect through here."""
    from client import SkillsClient
    from client.codec import encrypts

    address = client.service_client.config.target_host
    monkeypatch.setenv("SKILLS_PAYLOAD_KEYS", f"k2:{NEW},k1:{OLD}")
    async with await SkillsClient.connect(address=address) as skills:
        assert encrypts(skills.client)
        assert skills.client.data_converter.payload_codec == codec(f"k2:{NEW},k1:{OLD}")
    monkeypatch.setenv("SKILLS_PAYLOAD_KEYS", "k1:short")
    with pytest.raises(SettingsError, match="SKILLS_PAYLOAD_KEYS: key 'k1' is not 32 bytes"):
        await SkillsClient.connect(address=address)
    monkeypatch.delenv("SKILLS_PAYLOAD_KEYS")
    async with await SkillsClient.connect(address=address) as skills:
        assert not encrypts(skills.client)
