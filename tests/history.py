"""A workflow history as its reader sees it: every payload's data decoded, so a test can say a secret
is in none of it (searched as it is, the JSON holds payloads in base64, where no secret is found); and the
replayer that reads a history back as the worker runs it."""

from __future__ import annotations

import base64
import json
from typing import Any

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from service.workflow_sandbox import WORKFLOW_RUNNER


def replayer(*workflows: type[Any]) -> Replayer:
    """A replayer of ``workflows`` in the worker's own sandbox (its passthrough modules): with the SDK's
    default one, a module a workflow imports when first used (``skills.when.phrasing``) is imported again into
    the replay's sandbox, with the SDK's warning, and the replay is not of what the worker runs."""
    return Replayer(workflows=list(workflows), data_converter=pydantic_data_converter, workflow_runner=WORKFLOW_RUNNER)


def readable(history: dict[str, object]) -> str:
    """A history's JSON (``WorkflowHistory.to_json_dict()``) with every payload's data decoded and appended.
    A payload's data is base64 in that JSON: a secret in it is not found by searching the JSON as it is."""
    return "\n".join([json.dumps(history), *(decoded(value) for value in strings(history))])


def strings(node: object) -> list[str]:
    if isinstance(node, dict):
        return [s for value in node.values() for s in strings(value)]
    if isinstance(node, list):
        return [s for value in node for s in strings(value)]
    return [node] if isinstance(node, str) else []


def decoded(text: str) -> str:
    try:
        return base64.b64decode(text, validate=True).decode("utf-8", "replace")
    except ValueError:
        return ""
