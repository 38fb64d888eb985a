"""The codec endpoint: Temporal's remote codec protocol on the worker's HTTP port.

``POST /codec/encode`` and ``POST /codec/decode`` take and answer ``{"payloads": [...]}`` in
proto3 JSON (each payload's ``data`` and metadata values in base64), run through the worker's
payload codec (:mod:`client.codec`). The Web UI (its codec endpoint setting) and
``temporal workflow show --codec-endpoint http://worker:8080/codec`` call it to show an
operator the decrypted history.

It decrypts for whoever reaches it, so it is off unless ``SKILLS_CODEC_ENDPOINT`` is on, can
require a bearer token (``SKILLS_CODEC_TOKEN``; compared in constant time), answers browsers only
from the origins ``SKILLS_CODEC_CORS_ORIGINS`` names (a request from any other origin is refused),
and logs who asked for how many payloads.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable, Collection, Sequence

from google.protobuf import json_format
from pydantic import SecretStr
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.client import Client
from temporalio.converter import PayloadCodec

from client.codec import encrypts
from config.settings import Settings
from service.health import Reply, Request
from skills.errors import PayloadKeyError

logger = logging.getLogger(__name__)

PREFIX = "/codec"
"""Where the endpoint is: give ``http://HOST:PORT/codec`` to the Web UI and the CLI."""
ALLOWED_HEADERS = "Content-Type, X-Namespace, Authorization"
"""What the Web UI and the CLI send: ``X-Namespace`` names the namespace (one codec serves all)."""

Transform = Callable[[Sequence[Payload]], Awaitable[list[Payload]]]


class CodecEndpoint:
    def __init__(self, codec: PayloadCodec, *, token: str | SecretStr | None = None,
                 origins: Collection[str] = ()) -> None:
        self._codec = codec
        self._token = token.get_secret_value() if isinstance(token, SecretStr) else token
        self._origins = frozenset(origin.rstrip("/") for origin in origins)

    def routes(self) -> dict[str, Callable[[Request], Awaitable[Reply]]]:
        return {f"{PREFIX}/encode": self.encode, f"{PREFIX}/decode": self.decode}

    async def encode(self, request: Request) -> Reply:
        return await self._answer(request, "encode", self._codec.encode)

    async def decode(self, request: Request) -> Reply:
        return await self._answer(request, "decode", self._codec.decode)

    async def _answer(self, request: Request, verb: str, transform: Transform) -> Reply:
        origin = request.headers.get("origin")
        cors: dict[str, str] = {}
        if origin is not None:
            if origin.rstrip("/") not in self._origins:
                return Reply(403, "text/plain", f"origin {origin} may not call the codec endpoint; "
                                                "add it to SKILLS_CODEC_CORS_ORIGINS\n")
            cors = {"Access-Control-Allow-Origin": origin, "Access-Control-Allow-Credentials": "true",
                    "Vary": "Origin"}
        if request.method == "OPTIONS":  # a browser's preflight: says what it may send, asks for no token
            return Reply(204, "text/plain", "", {**cors, "Access-Control-Allow-Methods": "POST, OPTIONS",
                                                  "Access-Control-Allow-Headers": ALLOWED_HEADERS,
                                                  "Access-Control-Max-Age": "600"})
        if request.method != "POST":
            return Reply(405, "text/plain", "POST only\n", {**cors, "Allow": "POST, OPTIONS"})
        if self._token is not None and not hmac.compare_digest(
                request.headers.get("authorization", "").encode(), f"Bearer {self._token}".encode()):
            logger.warning("codec endpoint: %s refused to %s (no or wrong bearer token)", verb, request.peer)
            return Reply(401, "text/plain", "a bearer token is required (SKILLS_CODEC_TOKEN)\n",
                         {**cors, "WWW-Authenticate": 'Bearer realm="codec"'})
        try:
            payloads = json_format.Parse(request.body or b"{}", Payloads())
        except (json_format.ParseError, UnicodeDecodeError) as e:
            return Reply(400, "text/plain", f'body: expected {{"payloads": [...]}} in proto3 JSON ({e})\n', cors)
        try:
            done = await transform(list(payloads.payloads))
        except PayloadKeyError as e:
            return Reply(400, "text/plain", f"{e}\n", cors)
        logger.info("codec endpoint: %s of %d payload(s) for %s (namespace %s)", verb, len(done), request.peer,
                    request.headers.get("x-namespace", "?"))
        body = json_format.MessageToDict(Payloads(payloads=done))
        return Reply(200, "application/json", json.dumps({"payloads": body.get("payloads", [])}), cors)


def codec_routes(client: Client, settings: Settings) -> dict[str, Callable[[Request], Awaitable[Reply]]]:
    """The endpoint's routes over the codec of the worker's ``client``, when ``codec_endpoint`` is on
    (and the client encrypts: the settings refuse the endpoint without keys); else none."""
    codec = client.data_converter.payload_codec
    if not settings.codec_endpoint or codec is None or not encrypts(client):
        return {}
    return CodecEndpoint(codec, token=settings.codec_token, origins=settings.codec_cors_origins).routes()
