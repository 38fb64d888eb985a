"""A scripted OpenAI-compatible HTTP server on loopback, standing in for the LLM in tests.

It speaks the real wire protocol (chat completions with tools, the models list, OpenAI's
error bodies and headers), so the real `openai` client works unchanged against `base_url`.
Each request plays the next step of the script of its `model`, so several skills with
different models can run concurrently against one server:

    with ScriptedLLM(api_key="sk-test") as llm:
        llm.script("planner", [call("outbox_send_message", {"message": "hi"}), say("Sent.")])
        llm.script("flaky", [error(429, retry_after=1), say("ok")])
        ... point the engine at llm.base_url ...
        assert llm.requests_for("planner")[1].messages[-1]["role"] == "tool"

Every request is recorded (`requests`, `requests_for`, `count`), so a test can also prove
that no request was made at all. `down()`/`up()` make the endpoint unreachable and back.

A request that carries the `Idempotency-Key` of one already answered (an answer or a refusal, not an
error that says to ask again) is answered with that step again, without taking the next: the engine
sends one key for every attempt of a turn, so an attempt lost on a loaded machine (a heartbeat the
server timed out) and retried does not run the script out. `Recorded.replayed` marks such a request.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

HOST = "127.0.0.1"
# Headers that carry the key are not recorded, so a test's failure output never shows one.
SECRET_HEADERS = frozenset({"authorization", "api-key"})


# --- Steps ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Say:
    """A final answer (finish_reason "stop")."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass(frozen=True)
class ToolCall:
    """One tool call inside a `Calls` step; `arguments` is sent as given when it is a str."""

    name: str
    arguments: dict[str, Any] | str
    id: str | None = None

    def arguments_json(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass(frozen=True)
class Calls:
    """One assistant turn with one or more tool calls (finish_reason "tool_calls")."""

    tool_calls: tuple[ToolCall, ...]
    content: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass(frozen=True)
class Error:
    """An HTTP error; `body` None means the body OpenAI sends for that status."""

    status: int
    body: Mapping[str, Any] | str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Hang:
    """Hold the request until `event` is set, then play `then`.

    A threading.Event, because the test's event loop is not the server's. If the event is
    not set within `timeout` the answer is a 500, so a forgotten event fails instead of hanging.
    """

    event: threading.Event
    then: Step
    timeout: float = 60.0


@dataclass(frozen=True)
class Expect:
    """Check the request before playing `then`; a check that raises or returns False fails it."""

    check: Callable[[Recorded], Any]
    then: Step


@dataclass(frozen=True)
class Slow:
    """Answer `then` (a Say or Calls) streamed slowly: nothing for `first_after` seconds (a model reading
    its prompt), then `pieces` chunks `every` seconds apart. Without `stream: true` in the request the
    whole answer comes after all that time, in one body."""

    then: Say | Calls
    first_after: float = 0.0
    every: float = 0.0
    pieces: int = 4


Step = Say | Calls | Error | Hang | Expect | Slow


def say(text: str, *, prompt_tokens: int | None = None, completion_tokens: int | None = None) -> Say:
    """A final answer; usage defaults to an estimate from the sizes (see `estimate_tokens`)."""
    return Say(text, prompt_tokens, completion_tokens)


def call(
    name: str,
    arguments: dict[str, Any] | str | None = None,
    id: str | None = None,  # noqa: A002 - the wire protocol's name
    *,
    content: str | None = None,
    prompt_tokens: int | None = None,
    completion_tokens: int | None = None,
) -> Calls:
    """A turn with one tool call; a str `arguments` is sent verbatim (e.g. malformed JSON)."""
    return Calls(
        (ToolCall(name, {} if arguments is None else arguments, id),),
        content,
        prompt_tokens,
        completion_tokens,
    )


def calls(
    items: Sequence[Calls | ToolCall | tuple[str, dict[str, Any] | str]],
    *,
    content: str | None = None,
    prompt_tokens: int | None = None,
    completion_tokens: int | None = None,
) -> Calls:
    """A turn with several tool calls: `calls([call("a", {...}), ("b", {...})])`."""
    flat: list[ToolCall] = []
    for item in items:
        if isinstance(item, Calls):
            flat.extend(item.tool_calls)
        elif isinstance(item, ToolCall):
            flat.append(item)
        else:
            flat.append(ToolCall(item[0], item[1]))
    return Calls(tuple(flat), content, prompt_tokens, completion_tokens)


def error(
    status: int,
    body: Mapping[str, Any] | str | None = None,
    headers: Mapping[str, str] | None = None,
    *,
    retry_after: float | None = None,
) -> Error:
    """An HTTP error; `retry_after` (seconds) sets both `retry-after` and `retry-after-ms`."""
    all_headers = dict(headers or {})
    if retry_after is not None:
        all_headers["retry-after"] = f"{retry_after:g}"
        all_headers["retry-after-ms"] = str(round(retry_after * 1000))
    return Error(status, body, all_headers)


def long(n_chars: int, *, prompt_tokens: int | None = None, completion_tokens: int | None = None) -> Say:
    """A final answer of exactly `n_chars` characters."""
    sentence = "This is a very long answer that keeps going. "
    text = (sentence * (n_chars // len(sentence) + 1))[:n_chars]
    return Say(text, prompt_tokens, completion_tokens)


def hang_until(event: threading.Event, then: Step | None = None, *, timeout: float = 60.0) -> Hang:
    """Hold the turn in flight until `event` is set (e.g. while a test kills the worker)."""
    return Hang(event, then if then is not None else say("ok"), timeout)


def slow(then: Say | Calls, *, first_after: float = 0.0, every: float = 0.0, pieces: int = 4) -> Slow:
    """A slow model: silent for `first_after` s, then `pieces` chunks `every` s apart (streamed)."""
    return Slow(then, first_after, every, pieces)


def expect(check: Callable[[Recorded], Any], then: Step) -> Expect:
    """Assert on the request (messages, tools offered) before answering with `then`."""
    return Expect(check, then)


# --- A small model's habits -------------------------------------------------------------
# What a small local model (Qwen2.5-Coder 1.5B on llama.cpp) does instead of a tool call.


def claims(text: str = "Stored: every weekday at 9 I will remind you to stand up.") -> Say:
    """A reply that claims an act, with no tool call: the engine must not let it stand."""
    return Say(text)


def text_call(name: str, arguments: dict[str, Any], *, style: str = "json") -> Say:
    """A tool call written as the reply's text: ``json``, a bare ``{"name": ..., "arguments": ...}`` (the
    1.5B model's habit, 3 times out of 3); ``qwen``, inside ``<tool_call>...</tool_call>`` (Qwen's template);
    ``function``, ``{"function": ..., "parameters": ...}``."""
    if style == "function":
        return Say(json.dumps({"function": name, "parameters": arguments}))
    body = json.dumps({"name": name, "arguments": arguments})
    return Say(f"<tool_call>\n{body}\n</tool_call>" if style == "qwen" else body)


def structured(answer: Mapping[str, Any] | str) -> Expect:
    """The model's answer to a structured-output request (``response_format`` with a ``json_schema``): the
    JSON the test scripts, given only to a request that asked for it, as an endpoint that honours the
    schema does (a request without one fails the test)."""

    def asked(recorded: Recorded) -> bool:
        fmt = recorded.response_format
        assert fmt is not None and fmt.get("type") == "json_schema", f"no json_schema response_format: {fmt!r}"
        assert isinstance(fmt.get("json_schema", {}).get("schema"), dict), "the json_schema carries no schema"
        # A grammar holds the model to the schema's actions: a scripted one outside them is the test's mistake.
        allowed = fmt["json_schema"]["schema"].get("properties", {}).get("action", {}).get("enum")
        if isinstance(answer, Mapping) and allowed is not None:
            assert answer.get("action") in allowed, f"the schema allows {allowed}, not {answer.get('action')!r}"
        return True

    return Expect(asked, Say(answer if isinstance(answer, str) else json.dumps(answer)))


# --- Recording --------------------------------------------------------------------------


@dataclass
class Recorded:
    """One request as the server saw it; `body` is the parsed JSON (or the raw text)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    time: float
    status: int = 0  # filled in once answered
    step: int | None = None  # the 1-based script step it played, if any
    replayed: bool = False  # it carried the Idempotency-Key of a request already answered: its step again

    @property
    def model(self) -> str | None:
        return self.body.get("model") if isinstance(self.body, dict) else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages", []) if isinstance(self.body, dict) else []

    @property
    def tools(self) -> list[dict[str, Any]]:
        return (self.body.get("tools") or []) if isinstance(self.body, dict) else []

    @property
    def response_format(self) -> dict[str, Any] | None:
        """The request's ``response_format`` (a structured-output request), or None."""
        fmt = self.body.get("response_format") if isinstance(self.body, dict) else None
        return fmt if isinstance(fmt, dict) else None

    @property
    def tool_names(self) -> list[str]:
        """The names of the function tools the request offered."""
        return [tool["function"]["name"] for tool in self.tools if tool.get("type") == "function"]


def estimate_tokens(chars: int) -> int:
    """The default token count for `chars` characters: a quarter, at least 1."""
    return max(1, chars // 4)


def message_chars(messages: Sequence[Mapping[str, Any]]) -> int:
    """The characters a default prompt_tokens counts: text content and tool call arguments."""
    total = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):
            total += sum(len(part.get("text", "")) for part in content if isinstance(part, dict))
        for tool_call in message.get("tool_calls") or []:
            function = tool_call.get("function", {})
            total += len(function.get("name", "")) + len(function.get("arguments", ""))
    return total


# --- OpenAI's bodies --------------------------------------------------------------------


def _error_body(
    message: str, type_: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def default_error_body(status: int, model: str | None = None) -> dict[str, Any]:
    """The body OpenAI sends for `status` (messages as the real API words them)."""
    match status:
        case 400:
            return _error_body(
                "Invalid value for 'messages': the request is not valid.",
                "invalid_request_error",
                param="messages",
            )
        case 401:
            return _error_body(
                "Incorrect API key provided: sk-wr***ey. You can find your API key at https://platform.openai.com/account/api-keys.",
                "invalid_request_error",
                code="invalid_api_key",
            )
        case 403:
            return _error_body("You are not allowed to sample from this model", "invalid_request_error")
        case 404:
            return _error_body(
                f"The model `{model}` does not exist or you do not have access to it.",
                "invalid_request_error",
                code="model_not_found",
            )
        case 429:
            return _error_body(
                f"Rate limit reached for {model} on tokens per min (TPM): Limit 30000, Used 30000, Requested 1000. "
                "Please try again in 1s.",
                "tokens",
                code="rate_limit_exceeded",
            )
        case 503:
            return _error_body("The engine is currently overloaded, please try again later.", "server_error")
        case _ if status >= 500:
            return _error_body(
                "The server had an error while processing your request. Sorry about that!", "server_error"
            )
        case _:
            return _error_body(f"Error {status}", "invalid_request_error")


def _wrong_key_body(key: str) -> dict[str, Any]:
    masked = f"{key[:3]}***{key[-2:]}" if len(key) > 5 else "***"
    return _error_body(
        f"Incorrect API key provided: {masked}. You can find your API key at https://platform.openai.com/account/api-keys.",
        "invalid_request_error",
        code="invalid_api_key",
    )


NO_KEY_BODY = _error_body(
    "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth "
    "(i.e. Authorization: Bearer YOUR_KEY). You can obtain an API key from https://platform.openai.com/account/api-keys.",
    "invalid_request_error",
)


# --- The server -------------------------------------------------------------------------


class ScriptedLLM:
    """A real HTTP server on 127.0.0.1 that answers chat completions from per-model scripts.

    `api_key`: when given, requests must carry `Authorization: Bearer <api_key>` (else 401).
    `models`: names the models list reports besides the scripted ones.
    `list_models`: False answers `GET /v1/models` with a 404, as endpoints without a model list do.
    `streaming`: False refuses `stream: true` with a 400, as endpoints that cannot stream do.
    `contexts`: a model's context length, said in its models-list entry.
    """

    def __init__(self, *, api_key: str | None = None, models: Sequence[str] = (), list_models: bool = True,
                 streaming: bool = True, contexts: Mapping[str, int] | None = None) -> None:
        self._api_key = api_key
        self._models = list(models)
        self.list_models = list_models
        self.streaming = streaming
        self.contexts = dict(contexts or {})
        """A model's context length, told in its models-list entry (``context_length``) as LM Studio does."""
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)  # notified on every recorded request
        self._scripts: dict[str, list[Step]] = {}
        self._played: dict[str, int] = {}
        self._answered: dict[tuple[str, str], tuple[int, Step]] = {}
        """By model and ``Idempotency-Key``: the step a request with that key was answered with, when that answer
        was final (an answer or a refusal): a retry of the turn gets it again instead of the script's next step."""
        self._requests: list[Recorded] = []
        self.failures: list[str] = []  # failed `expect` checks, also answered with a 400
        self._port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
        # Set while the server is going down, so hanging turns let go instead of holding it up.
        self._closing = threading.Event()
        self._app = Starlette(
            routes=[Route("/{path:path}", self._handle, methods=["GET", "POST", "PUT", "PATCH", "DELETE"])]
        )

    # Lifecycle

    def start(self) -> ScriptedLLM:
        """Start serving (on a free port the first time, on the same port after `down()`)."""
        if self._server is not None:
            return self
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # The port may still hold TIME_WAIT connections from before a down(); rebind anyway.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, self._port))
        sock.listen(128)
        self._port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=2
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name=f"scripted-llm:{self._port}", daemon=True
        )
        thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                sock.close()
                raise RuntimeError(f"scripted LLM did not start on {HOST}:{self._port}")
            time.sleep(0.005)
        self._server, self._thread, self._sock = server, thread, sock
        return self

    def stop(self) -> None:
        """Stop serving: the port refuses connections, pooled connections are closed."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        self._closing.set()
        server.should_exit = True
        thread.join(timeout=15)
        if self._sock is not None:
            self._sock.close()
        self._server, self._thread, self._sock = None, None, None
        self._closing.clear()

    def down(self) -> None:
        """Make the endpoint unreachable (connections refused); turns in flight get a 503."""
        self.stop()

    def up(self) -> None:
        """Make the endpoint reachable again at the same `base_url`."""
        self.start()

    @property
    def is_up(self) -> bool:
        return self._server is not None

    def __enter__(self) -> ScriptedLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if not self._port:
            raise RuntimeError("scripted LLM was never started")
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    # Scripts

    def script(self, model: str, steps: Sequence[Step]) -> ScriptedLLM:
        """Append `steps` to `model`'s script; each chat request for `model` plays the next one."""
        with self._lock:
            self._scripts.setdefault(model, []).extend(steps)
            self._played.setdefault(model, 0)
        return self

    def remaining(self, model: str) -> int:
        """How many of `model`'s steps have not been played yet."""
        with self._lock:
            return len(self._scripts.get(model, [])) - self._played.get(model, 0)

    # Recording

    @property
    def requests(self) -> list[Recorded]:
        """Every request, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    def requests_for(self, model: str) -> list[Recorded]:
        """The chat completion requests for `model`."""
        with self._lock:
            return self._chat_requests(model)

    def _chat_requests(self, model: str) -> list[Recorded]:
        return [r for r in self._requests if r.path == "/v1/chat/completions" and r.model == model]

    async def wait_for(self, model: str, count: int = 1, timeout: float = 60.0) -> list[Recorded]:
        """Wait until `count` chat requests for `model` arrived (e.g. a hanging turn is in flight)."""

        def wait() -> list[Recorded]:
            with self._arrived:
                if not self._arrived.wait_for(lambda: len(self._chat_requests(model)) >= count, timeout):
                    got = len(self._chat_requests(model))
                    raise TimeoutError(
                        f"scripted LLM: {got} of {count} requests for model {model!r} in {timeout}s"
                    )
                return self._chat_requests(model)

        # A thread waits, so the test's event loop keeps running the client that sends them.
        return await asyncio.to_thread(wait)

    @property
    def count(self) -> int:
        """How many requests arrived, on any path."""
        with self._lock:
            return len(self._requests)

    # Serving

    async def _handle(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        headers = {k: v for k, v in request.headers.items() if k.lower() not in SECRET_HEADERS}
        recorded = Recorded(request.method, request.url.path, headers, body, time.time())
        with self._arrived:
            self._requests.append(recorded)
            self._arrived.notify_all()
        response = await self._route(request, recorded)
        recorded.status = response.status_code
        response.headers["x-request-id"] = f"req_{uuid.uuid4().hex}"
        return response

    async def _route(self, request: Request, recorded: Recorded) -> Response:
        if self._api_key is not None:
            scheme, _, key = request.headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not key:
                return JSONResponse(NO_KEY_BODY, status_code=401)
            if key != self._api_key:
                return JSONResponse(_wrong_key_body(key), status_code=401)
        method, path = request.method, recorded.path
        if method == "GET" and path == "/v1/models" and self.list_models:
            return JSONResponse(
                {"object": "list", "data": [self._model_entry(m) for m in self._model_names()]}
            )
        if method == "GET" and path.startswith("/v1/models/"):
            name = path.removeprefix("/v1/models/")
            if name in self._model_names():
                return JSONResponse(self._model_entry(name))
            return JSONResponse(default_error_body(404, name), status_code=404)
        if method == "POST" and path == "/v1/chat/completions":
            return await self._chat(recorded)
        return JSONResponse(
            _error_body(f"Invalid URL ({method} {path})", "invalid_request_error"), status_code=404
        )

    def _model_names(self) -> list[str]:
        with self._lock:
            return sorted(set(self._models) | set(self._scripts))

    def _model_entry(self, name: str) -> dict[str, Any]:
        entry: dict[str, Any] = {"id": name, "object": "model", "created": 1700000000, "owned_by": "scripted"}
        if name in self.contexts:
            entry["context_length"] = self.contexts[name]
        return entry

    async def _chat(self, recorded: Recorded) -> Response:
        body = recorded.body
        if not isinstance(body, dict):
            return JSONResponse(
                _error_body("We could not parse the JSON body of your request.", "invalid_request_error"),
                status_code=400,
            )
        model = body.get("model")
        if not isinstance(model, str) or not model:
            return JSONResponse(
                _error_body("you must provide a model parameter", "invalid_request_error"), status_code=400
            )
        if body.get("stream") and not self.streaming:
            # As an endpoint that cannot stream answers a request that asks it to.
            return JSONResponse(
                _error_body(
                    "scripted LLM: streaming is not supported", "invalid_request_error", param="stream"
                ),
                status_code=400,
            )
        key = recorded.headers.get("idempotency-key")
        with self._lock:
            steps, index = self._scripts.get(model, []), self._played.get(model, 0)
            answered = self._answered.get((model, key)) if key else None
            if answered is not None:
                # A retry of a turn already answered: the same answer, as a server keeping answers by the key
                # gives (the engine's attempt lost it, e.g. to a heartbeat the server timed out under load).
                index, step = answered
            else:
                step = steps[index] if index < len(steps) else None
                if step is not None:
                    self._played[model] = index + 1
        number = index + 1
        if step is None:
            # Not consumed: the same loud message on every retry, and steps appended later still play.
            return JSONResponse(
                _error_body(
                    f"scripted LLM: script for model {model!r} has no step {number} (it has {len(steps)} steps)",
                    "server_error",
                ),
                status_code=500,
            )
        recorded.step, recorded.replayed = number, answered is not None
        response = await self._play(step, recorded, model, number)
        if key and answered is None and _final(response.status_code):
            with self._lock:
                self._answered[(model, key)] = (index, step)
        return response

    async def _play(self, step: Step, recorded: Recorded, model: str, number: int) -> Response:
        streamed = isinstance(recorded.body, dict) and bool(recorded.body.get("stream"))
        if streamed and isinstance(step, Say | Calls):
            step = Slow(step, pieces=1)
        match step:
            case Slow():
                if not streamed:
                    await asyncio.sleep(step.first_after + step.every * max(0, step.pieces - 1))
                    return await self._play(step.then, recorded, model, number)
                return StreamingResponse(self._stream(step, recorded, model), media_type="text/event-stream")
            case Say():
                message: dict[str, Any] = {"role": "assistant", "content": step.text, "refusal": None}
                usage = self._usage(recorded, step.prompt_tokens, step.completion_tokens, len(step.text))
                return JSONResponse(_completion(model, message, "stop", usage))
            case Calls():
                tool_calls = [
                    {
                        "id": tc.id or f"call_{uuid.uuid4().hex[:24]}",
                        "type": "function",
                        "function": {"name": tc.name, "arguments": tc.arguments_json()},
                    }
                    for tc in step.tool_calls
                ]
                message = {
                    "role": "assistant",
                    "content": step.content,
                    "refusal": None,
                    "tool_calls": tool_calls,
                }
                chars = len(step.content or "") + sum(
                    len(tc.name) + len(tc.arguments_json()) for tc in step.tool_calls
                )
                usage = self._usage(recorded, step.prompt_tokens, step.completion_tokens, chars)
                return JSONResponse(_completion(model, message, "tool_calls", usage))
            case Error():
                body = step.body if step.body is not None else default_error_body(step.status, model)
                if isinstance(body, str):
                    return PlainTextResponse(body, status_code=step.status, headers=dict(step.headers))
                return JSONResponse(dict(body), status_code=step.status, headers=dict(step.headers))
            case Hang():
                outcome = await self._wait(step)
                if outcome == "set":
                    return await self._play(step.then, recorded, model, number)
                if outcome == "closing":
                    return JSONResponse(default_error_body(503), status_code=503)
                return JSONResponse(
                    _error_body(
                        f"scripted LLM: model {model!r} step {number}: hang_until event not set within {step.timeout}s",
                        "server_error",
                    ),
                    status_code=500,
                )
            case Expect():
                try:
                    ok = step.check(recorded) is not False
                    problem = "the check returned False"
                except Exception as exc:  # noqa: BLE001 - any failure of the test's check is reported
                    ok, problem = False, f"{type(exc).__name__}: {exc}"
                if ok:
                    return await self._play(step.then, recorded, model, number)
                failure = f"scripted LLM: expectation for model {model!r} step {number} failed: {problem}"
                with self._lock:
                    self.failures.append(failure)
                # A 400, not a 500: the engine must not retry a request the test has refused.
                return JSONResponse(_error_body(failure, "invalid_request_error"), status_code=400)
        raise TypeError(f"not a script step: {step!r}")

    async def _stream(self, step: Slow, recorded: Recorded, model: str) -> AsyncIterator[str]:
        """The answer as OpenAI streams it: chunks of `chat.completion.chunk`, the usage (when asked
        for with `stream_options.include_usage`), then `[DONE]`."""
        answer = step.then
        base = {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion.chunk",
                "created": int(time.time()), "model": model, "system_fingerprint": "fp_scripted"}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
            body = {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
            return f"data: {json.dumps(body)}\n\n"

        await asyncio.sleep(step.first_after)
        pieces = max(1, step.pieces)
        if isinstance(answer, Say):
            text = answer.text
            size = -(-len(text) // pieces) or 1
            parts = [text[i:i + size] for i in range(0, len(text), size)] or [""]
            for index, part in enumerate(parts):
                if index:
                    await asyncio.sleep(step.every)
                yield chunk({"role": "assistant", "content": part} if index == 0 else {"content": part})
            finish, chars = "stop", len(text)
        else:
            yield chunk({"role": "assistant", "content": answer.content})
            for index, tc in enumerate(answer.tool_calls):
                arguments = tc.arguments_json()
                size = -(-len(arguments) // pieces) or 1
                yield chunk({"tool_calls": [{"index": index, "id": tc.id or f"call_{uuid.uuid4().hex[:24]}",
                                             "type": "function", "function": {"name": tc.name, "arguments": ""}}]})
                for start in range(0, len(arguments), size):
                    await asyncio.sleep(step.every)
                    yield chunk({"tool_calls": [{"index": index,
                                                 "function": {"arguments": arguments[start:start + size]}}]})
            finish = "tool_calls"
            chars = len(answer.content or "") + sum(len(tc.name) + len(tc.arguments_json())
                                                    for tc in answer.tool_calls)
        yield chunk({}, finish)
        options = recorded.body.get("stream_options") or {}
        if options.get("include_usage"):
            usage = self._usage(recorded, answer.prompt_tokens, answer.completion_tokens, chars)
            yield f"data: {json.dumps({**base, 'choices': [], 'usage': usage})}\n\n"
        yield "data: [DONE]\n\n"

    async def _wait(self, step: Hang) -> str:
        """Poll instead of blocking a thread: the server's loop keeps serving other requests."""
        deadline = time.monotonic() + step.timeout
        while not step.event.is_set():
            if self._closing.is_set():
                return "closing"
            if time.monotonic() > deadline:
                return "timeout"
            await asyncio.sleep(0.01)
        return "set"

    @staticmethod
    def _usage(
        recorded: Recorded, prompt: int | None, completion: int | None, answer_chars: int
    ) -> dict[str, int]:
        prompt_tokens = prompt if prompt is not None else estimate_tokens(message_chars(recorded.messages))
        completion_tokens = completion if completion is not None else estimate_tokens(answer_chars)
        return {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }


RETRY_LATER = frozenset({408, 409, 429})
"""The 4xx statuses that say "ask again" (the OpenAI SDK retries them), as every 5xx does."""


def _final(status: int) -> bool:
    """An answer a retry with the same ``Idempotency-Key`` gets again: a success, or a refusal no retry changes."""
    return status < 500 and status not in RETRY_LATER


def _completion(
    model: str, message: dict[str, Any], finish_reason: str, usage: dict[str, int]
) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "fp_scripted",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}],
        "usage": usage,
    }


# --- pytest -----------------------------------------------------------------------------


def scripted_llm_fixture(*, api_key: str | None = None, models: Sequence[str] = ()) -> Any:
    """A function-scoped fixture serving a fresh ScriptedLLM; in a conftest:

        llm = scripted_llm_fixture(api_key="sk-test")

    At teardown it fails the test if an `expect` check failed, even if the engine swallowed the 400.
    """

    @pytest.fixture
    def _fixture() -> Iterator[ScriptedLLM]:
        with ScriptedLLM(api_key=api_key, models=models) as server:
            yield server
            if server.failures:
                pytest.fail("\n".join(server.failures))

    return _fixture


# The plain fixture: `from tests.fakes.llm_server import scripted_llm` in a conftest.
scripted_llm = scripted_llm_fixture()
