"""What Temporal says of a skill's schedule, read the same way by the client and by the worker."""

from __future__ import annotations

from datetime import datetime

from temporalio.client import Client


async def next_fire(client: Client, schedule_id: str) -> datetime | None:
    """When the schedule fires next, as Temporal computes it: None when it is paused or has no next time."""
    description = await client.get_schedule_handle(schedule_id).describe()
    if description.schedule.state.paused:
        return None
    times = description.info.next_action_times
    return times[0] if times else None
