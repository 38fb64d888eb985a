"""``SkillsClient.sandbox`` (what ``skills doctor`` asks about the script sandbox) against a worker older
than the read: it says the worker did not report, at once, instead of retrying until the read times out."""

from __future__ import annotations

import time
import uuid

from temporalio import activity
from temporalio.client import Client
from temporalio.worker import Worker

from client import SkillsClient


@activity.defn(name="get_skill")
async def get_skill(ref: object) -> None:
    """The only activity of a worker from before ``sandbox_state``."""


async def test_a_worker_older_than_the_read_reports_no_sandbox_at_once(client: Client) -> None:
    queue = f"older-{uuid.uuid4().hex[:8]}"
    async with Worker(client, task_queue=queue, activities=[get_skill]):
        began = time.monotonic()
        state = await SkillsClient(client, queue).sandbox()
    assert state.ok and state.summary == "not reported: the worker that answered is older than this client"
    # One attempt, not retries until the 30 s read timeout: a bound between the two, as far from one read on a
    # loaded machine (seconds) as the timeout allows.
    assert time.monotonic() - began < 25
