"""Tracing: a real worker sends its workflow and activity spans to an OTLP/HTTP collector (a fake one
on loopback, decoding the real protobuf); without the packages, one clear line."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from temporalio.client import Client

from client import SkillsClient
from config.settings import Settings
from tests.conftest import WorkerProcess, worker_process


class Collector:
    """An OTLP/HTTP trace receiver: every span name it was sent, with its service name."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, str]] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest.FromString(body)
                for resource in request.resource_spans:
                    service = next((a.value.string_value for a in resource.resource.attributes
                                    if a.key == "service.name"), "")
                    collector.spans += [(span.name, service) for scope in resource.scope_spans
                                        for span in scope.spans]
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def collector() -> Iterator[Collector]:
    running = Collector()
    thread = threading.Thread(target=running.server.serve_forever, daemon=True)
    thread.start()
    yield running
    running.server.shutdown()


async def test_a_run_is_traced_to_the_collector(client: Client, settings: Settings, collector: Collector) -> None:
    skills = SkillsClient(client, settings.task_queue)
    with worker_process(settings, client.service_client.config.target_host,
                        SKILLS_OTEL_ENDPOINT=collector.url) as worker:
        await skills.register({"name": "traced", "instructions": "x", "notify_on_completion": False,
                               "execution_plan": [{"toolName": "outbox_send_message",
                                                   "parameters": {"message": "hi"}}]})
        assert (await skills.run("traced")).status == "success"
        worker.stop()  # the spans still buffered are sent on the way out
        assert worker.process is not None and worker.process.returncode == 0
    names = {name for name, _ in collector.spans}
    assert {"RunWorkflow:SkillRun", "RunActivity:call_tool", "RunActivity:finish_run"} <= names, names
    assert {service for _, service in collector.spans} == {"skills-worker"}


def test_without_the_packages_an_endpoint_is_one_clear_error(client: Client, settings: Settings) -> None:
    last = WorkerProcess(settings, client.service_client.config.target_host,
                         SKILLS_OTEL_ENDPOINT="http://127.0.0.1:4318").refused_without("opentelemetry.sdk")
    assert last.startswith("error: SKILLS_OTEL_ENDPOINT") and "pip install 'skills-engine[otel]'" in last, last
