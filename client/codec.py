"""The payload codec: what the engine gives Temporal is AES-GCM ciphertext, not people's messages.

Every payload (workflow and activity inputs and results, schedule actions, memos, and failures'
messages and stack traces) passes through :class:`EncryptionCodec` on its way to Temporal and back,
so the server, its database and whoever reads the namespace (Web UI, ``temporal workflow show``)
see ``binary/encrypted`` payloads. Only a process holding the key reads them: the worker, the
client, the CLI, the MCP server, the Telegram adapter, and an operator through the worker's codec
endpoint (:mod:`service.codec`).

Keys have ids so that a key can be rotated: a payload is encrypted with the *current* key (the first
one given) and carries that key's id in its metadata; it is decrypted with whichever known key has
its id. To rotate, put a new key first and keep the old one after it until no history that uses
it is kept (the namespace's retention), then drop it.

It lives in ``client/`` because every process that talks to Temporal needs it and ``client/`` is
what they all import (the worker, ``starter/``, ``service/``); ``client/`` may import ``skills/``
and ``config/`` only, and so does this module. It is an adapter of the data converter, not an
activity: nothing here runs in a workflow.

Off unless keys are given (``SKILLS_PAYLOAD_KEYS`` or ``SKILLS_PAYLOAD_KEYS_FILE``, see
docs/configuration.md). Payloads written before the codec was turned on are plain; they are
passed through on decode, so turning it on never strands a running workflow or a schedule.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import SecretStr
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter, DefaultFailureConverterWithEncodedAttributes, PayloadCodec

from config.secrets import add_secrets
from config.settings import Settings, SettingsError
from skills.errors import PayloadKeyError

ENCODING = b"binary/encrypted"
"""The ``encoding`` of an encrypted payload (the name Temporal's samples and tools use)."""
KEY_ID = "encryption-key-id"
"""Metadata field naming the key a payload was encrypted with."""
NONCE_BYTES = 12
KEY_BYTES = 32
"""AES-256: a key is 32 random bytes (``openssl rand -base64 32``)."""
KEYS_VARIABLE = "SKILLS_PAYLOAD_KEYS"
KEYS_FILE_VARIABLE = "SKILLS_PAYLOAD_KEYS_FILE"
_KEY_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


@dataclasses.dataclass(frozen=True)
class PayloadKeys:
    """Keys by id; the first is the current one, which encrypts."""

    keys: tuple[tuple[str, bytes], ...]

    @property
    def current(self) -> str:
        return self.keys[0][0]

    @property
    def ids(self) -> list[str]:
        return [key_id for key_id, _ in self.keys]

    @classmethod
    def parse(cls, text: str, source: str = KEYS_VARIABLE) -> PayloadKeys:
        """``id:base64key`` entries separated by commas or new lines (``#`` starts a comment line).
        Raises ValueError naming ``source`` and the entry, never showing a key."""
        entries = [part.strip() for line in text.splitlines() if not line.strip().startswith("#")
                   for part in line.split(",") if part.strip()]
        if not entries:
            raise ValueError(f"{source}: no key given; expected id:base64key[,id:base64key...], "
                             f"the first the current one (a key: `openssl rand -base64 32`)")
        keys: list[tuple[str, bytes]] = []
        for number, entry in enumerate(entries, 1):
            key_id, sep, encoded = entry.partition(":")
            key_id = key_id.strip()
            if not sep or not _KEY_ID.fullmatch(key_id):
                raise ValueError(f"{source}: entry {number} is not id:base64key with an id of letters, digits, "
                                 f"'.', '_' or '-' (at most 64)")
            if key_id in dict(keys):
                raise ValueError(f"{source}: key id {key_id!r} is given twice")
            key = _decode_key(encoded.strip())
            if key is None or len(key) != KEY_BYTES:
                raise ValueError(f"{source}: key {key_id!r} is not {KEY_BYTES} bytes in base64 "
                                 f"(make one with `openssl rand -base64 32`)")
            keys.append((key_id, key))
        return cls(tuple(keys))

    @classmethod
    def load(cls, text: str | None = None, file: str | os.PathLike[str] | None = None) -> PayloadKeys | None:
        """The keys given as text or in a file (a Kubernetes Secret mounted as a volume); None for
        neither. The key texts become secrets (config.secrets): no log line or failure shows them."""
        if text and file:
            raise ValueError(f"{KEYS_VARIABLE} and {KEYS_FILE_VARIABLE} are both set; give the keys one way")
        if file:
            try:
                text = Path(file).read_text()
            except OSError as e:
                raise ValueError(f"{KEYS_FILE_VARIABLE}: cannot read {file}: {e.strerror or e}") from None
            keys = cls.parse(text, f"{KEYS_FILE_VARIABLE} ({file})")
        elif text:
            keys = cls.parse(text)
        else:
            return None
        add_secrets(base64.b64encode(key).decode() for _, key in keys.keys)
        add_secrets(base64.urlsafe_b64encode(key).decode() for _, key in keys.keys)
        return keys


def _decode_key(encoded: str) -> bytes | None:
    for decode in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            return decode(encoded + "=" * (-len(encoded) % 4))
        except (binascii.Error, ValueError):
            continue
    return None


class EncryptionCodec(PayloadCodec):
    """AES-256-GCM over each whole serialized payload (its metadata too: the payload's encoding
    and type say something); the key id is the associated data, so a payload cannot be passed off
    as another key's.

    Without keys it encrypts nothing, and refuses an encrypted payload with an error naming its
    key id, where the plain converter would only say "unknown encoding binary/encrypted"."""

    def __init__(self, keys: PayloadKeys | None) -> None:
        self.keys = keys
        self._ciphers: dict[str, Any] = {}
        if keys:
            # cryptography is imported by a process that has keys: one without (most) does not load it.
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM

            self._ciphers = {key_id: AESGCM(key) for key_id, key in keys.keys}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EncryptionCodec) and other.keys == self.keys

    def __hash__(self) -> int:
        return hash(self.keys)

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.encrypt(p) for p in payloads] if self.keys else list(payloads)

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.decrypt(p) for p in payloads]

    def encrypt(self, payload: Payload) -> Payload:
        assert self.keys is not None
        key_id = self.keys.current
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._ciphers[key_id].encrypt(nonce, payload.SerializeToString(), key_id.encode())
        return Payload(metadata={"encoding": ENCODING, KEY_ID: key_id.encode()}, data=nonce + sealed)

    def decrypt(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") != ENCODING:
            return payload  # written before the codec was on (or by a client without it)
        key_id = payload.metadata.get(KEY_ID, b"").decode("utf-8", "replace")
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            held = f"its keys: {', '.join(self.keys.ids)}" if self.keys else "it has no payload keys"
            raise PayloadKeyError(
                f"payload encrypted with key id {key_id!r}, which this process does not have ({held}); "
                f"add that key to {KEYS_VARIABLE} or {KEYS_FILE_VARIABLE}")
        from cryptography.exceptions import InvalidTag  # loaded with the cipher

        try:
            plain = cipher.decrypt(payload.data[:NONCE_BYTES], payload.data[NONCE_BYTES:], key_id.encode())
        except (InvalidTag, ValueError):
            raise PayloadKeyError(
                f"payload encrypted with key id {key_id!r} does not decrypt: it was altered, or the key "
                f"given for {key_id!r} is not the one it was encrypted with") from None
        decoded = Payload()
        decoded.ParseFromString(plain)
        return decoded


KEYLESS = EncryptionCodec(None)
"""The codec of a process without payload keys: plain payloads, and a clear error for encrypted ones."""


def data_converter(codec: PayloadCodec | None) -> DataConverter:
    """The engine's data converter (pydantic) with ``codec``; failures' messages and stack traces
    are encoded as payloads too (``encode_common_attributes``), so a tool's error text is not left
    in clear in history either. Without a codec, plain payloads (:data:`KEYLESS`)."""
    if codec is None or codec == KEYLESS:
        return dataclasses.replace(pydantic_data_converter, payload_codec=KEYLESS)
    return dataclasses.replace(pydantic_data_converter, payload_codec=codec,
                               failure_converter_class=DefaultFailureConverterWithEncodedAttributes)


def codec_from_environ(environ: Mapping[str, str] | None = None) -> EncryptionCodec | None:
    """The codec that ``SKILLS_PAYLOAD_KEYS`` or ``SKILLS_PAYLOAD_KEYS_FILE`` configure (empty means
    unset); None when neither is set. Raises SettingsError naming the variable for unusable keys."""
    environ = os.environ if environ is None else environ
    given, file = environ.get(KEYS_VARIABLE) or None, environ.get(KEYS_FILE_VARIABLE) or None
    try:
        keys = PayloadKeys.load(given, file)
    except ValueError as e:
        raise _settings_error(str(e), KEYS_FILE_VARIABLE if file else KEYS_VARIABLE) from None
    return EncryptionCodec(keys) if keys else None


def _settings_error(message: str, field: str) -> SettingsError:
    return SettingsError([{"field": field, "message": message.removeprefix(f"{field}: ")}])


def settings_codec(settings: Settings) -> EncryptionCodec | None:
    """The codec ``settings.payload_keys`` or ``payload_keys_file`` configure; None for neither.
    Raises SettingsError naming the setting for keys that cannot be used."""
    given = settings.payload_keys
    given = given.get_secret_value() if isinstance(given, SecretStr) else given  # model_copy leaves a str
    try:
        keys = PayloadKeys.load(given, settings.payload_keys_file)
    except ValueError as e:
        raise _settings_error(str(e), KEYS_FILE_VARIABLE if settings.payload_keys_file else KEYS_VARIABLE) from None
    return EncryptionCodec(keys) if keys else None


def encrypts(client: Client) -> bool:
    """Whether ``client`` encrypts what it sends (it has payload keys)."""
    codec = client.data_converter.payload_codec
    return codec is not None and not (isinstance(codec, EncryptionCodec) and codec.keys is None)


def with_codec(client: Client, codec: PayloadCodec | None) -> Client:
    """``client`` itself when it already uses ``codec``; else a client on the same connection that does."""
    if client.data_converter.payload_codec == (codec or KEYLESS):
        return client
    config = client.config()
    config["data_converter"] = data_converter(codec)
    return Client(**config)


def encrypting(client: Client, settings: Settings) -> Client:
    """``client`` encrypting with the keys ``settings`` give (the worker's client); ``client`` as it
    is when they give none, so a client built with its own codec keeps it."""
    codec = settings_codec(settings)
    return client if codec is None else with_codec(client, codec)
