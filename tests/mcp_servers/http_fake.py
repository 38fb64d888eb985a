"""A fake HTTP API on loopback for the notification servers' tests.

It records every request (method, path, headers, JSON body) before it answers, so a
test that awaited its tool call can read exactly what the fake received, without
waiting. Answers come from a function of the request, which tests replace.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    """The JSON body, parsed (None when there was none)."""


@dataclass
class Answer:
    status: int = 200
    body: Any = None
    """JSON-encoded unless it is bytes or str."""
    headers: dict[str, str] = field(default_factory=dict)


Responder = Callable[[Request], Answer]


class FakeApi:
    def __init__(self, responder: Responder) -> None:
        self.requests: list[Request] = []
        self.responder = responder
        self.url = ""

    def serve(self) -> Iterator[FakeApi]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                request = Request(
                    method="POST",
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=json.loads(raw) if raw else None,
                )
                fake.requests.append(request)
                answer = fake.responder(request)
                payload = answer.body
                if not isinstance(payload, bytes | str):
                    payload = json.dumps(payload) if payload is not None else b""
                data = payload.encode() if isinstance(payload, str) else payload
                self.send_response(answer.status)
                content_type = "application/json" if not isinstance(answer.body, bytes | str) else "text/plain"
                self.send_header("content-type", content_type)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (a cancelled long poll)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet tests
                pass

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{httpd.server_address[1]}"
        thread = threading.Thread(target=httpd.serve_forever, name="fake-http-api", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            httpd.shutdown()
            httpd.server_close()
            thread.join()


@contextmanager
def fake_api(responder: Responder) -> Iterator[FakeApi]:
    yield from FakeApi(responder).serve()
