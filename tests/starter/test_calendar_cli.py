"""`skills next`, `skills get`'s skipped days, and the memory_next_fires tool of `skills mcp`, against a real
worker and server: what a person and a model are told is what the schedule will do."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, datetime
from typing import Any

from mcp import Client
from temporalio.client import Client as TemporalClient

from starter.mcp_server import build_server
from tests.conftest import Engine
from tests.starter.test_cli import options, run_skills
from tests.starter.test_mcp_server import text
from tests.workflows.test_calendar import as_started

LINE = re.compile(r"^  (\d{4}-\d\d-\d\d) (?:(\d\d:\d\d) (Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
                  r"|skipped: (.+))$")
"""A fire of a new reminder, at its exact time (a Direct plan is not spread), or a skipped day."""


def standup(**fields: Any) -> dict[str, Any]:
    return {"name": "standup", "instructions": "Post the standup reminder",
            "trigger_config": {"schedule": "30 8 * * *", "timezone": "Europe/Berlin"},
            "skip_holidays": "DE-BY", "business_days_only": True,
            "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "Standup!"}}], **fields}


async def server_fires(client: TemporalClient, schedule_id: str) -> list[datetime]:
    return [t.astimezone(UTC) for t in (await client.get_schedule_handle(schedule_id).describe()).info.next_action_times]


async def test_skills_next_lists_the_fires_in_the_skills_zone_with_skipped_days_marked(engine: Engine) -> None:
    skill = (await engine.skills.register(standup())).skill
    assert skill is not None and skill.schedule_id is not None
    done, as_json, too_many = await asyncio.gather(*(asyncio.to_thread(run_skills, *argv, *options(engine)) for argv in (
        ("next", "standup", "-n", "10"), ("next", "standup", "--json"), ("next", "standup", "-n", "500"))))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"skill {skill.id} 'standup': cron '30 8 * * *' (Europe/Berlin)"
    matched = [LINE.match(line) for line in lines[1:]]
    assert all(matched), lines
    fires = [m for m in matched if m and m.group(2)]
    skipped = [m for m in matched if m and m.group(4)]
    assert len(fires) == 10 and {m.group(2) for m in fires} == {"08:30"}
    assert not {m.group(3) for m in fires} & {"Sat", "Sun"}
    assert skipped and {m.group(4) for m in skipped} >= {"weekend"}

    assert as_json.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    assert data["timezone"] == "Europe/Berlin" and data["paused"] is None
    at = [datetime.fromisoformat(f["at"]) for f in data["fires"] if f["skipped"] is None]
    assert data["spread_seconds"] == 0  # a reminder at 8:30 comes at 8:30: the server's times are the listed ones
    assert as_started(await server_fires(engine.skills.client, skill.schedule_id), [t.astimezone(UTC) for t in at], 0)
    # In the skill's zone: Berlin's offset, an hour or two east of UTC.
    assert {t.utcoffset().total_seconds() for t in at if t.utcoffset() is not None} <= {3600.0, 7200.0}

    assert too_many.returncode == 2 and "500 is not in the range 1<=x<=100" in too_many.stderr


async def test_skills_get_lists_the_next_skipped_days(engine: Engine) -> None:
    await engine.skills.register(standup())
    got, as_json = await asyncio.gather(*(asyncio.to_thread(run_skills, *argv, *options(engine)) for argv in (
        ("get", "standup"), ("get", "standup", "--json"))))
    assert got.returncode == 0, got.stderr
    lines = got.stdout.splitlines()
    assert "skips           public holidays of DE-BY and weekends (business days only)" in lines
    skipped_line = next(line for line in lines if line.startswith("skipped next"))
    assert skipped_line.count("(") == 5 and "(weekend)" in skipped_line
    days = json.loads(as_json.stdout)["skipped_days"]
    assert len(days) == 5 and all(set(day) == {"date", "why"} for day in days)
    assert days == sorted(days, key=lambda day: day["date"])


async def test_a_model_reads_the_next_fires_through_skills_mcp(engine: Engine) -> None:
    async with Client(build_server(engine.skills)) as session:
        stored = await session.call_tool("memory_store_skill", standup())
        assert not stored.is_error, text(stored)
        # The answer to a new skill tells the user when it fires, skipped days and all.
        assert "Its next fires (Europe/Berlin): " in text(stored)
        assert re.search(r"Its next fires \(Europe/Berlin\): \d{4}-\d\d-\d\d (08:30 \w{3}|skipped: )", text(stored))

        listed = await session.call_tool("memory_next_fires", {"skill_id": "standup", "count": 10})
        assert not listed.is_error, text(listed)
        assert text(listed).startswith("Skill 1 'standup', cron '30 8 * * *' (Europe/Berlin):")
        assert listed.structured_content is not None
        fires = [datetime.fromisoformat(f["at"]) for f in listed.structured_content["fires"] if f["skipped"] is None]
        schedule_id = (await engine.skills.get("standup")).schedule_id
        assert schedule_id is not None
        assert as_started(await server_fires(engine.skills.client, schedule_id), [t.astimezone(UTC) for t in fires],
                          listed.structured_content["spread_seconds"])

        got = await session.call_tool("memory_get_skill", {"skill_id": "standup"})
        assert "It skips the public holidays of DE-BY and weekends; next skipped: " in text(got)
        assert got.structured_content is not None and len(got.structured_content["skipped_days"]) == 5

        refused = await session.call_tool("memory_next_fires", {"skill_id": "standup", "count": 0})
        assert refused.is_error and "count: must be a whole number from 1 to 100, got 0" in text(refused)
        missing = await session.call_tool("memory_next_fires", {"skill_id": "no such skill"})
        assert missing.is_error and "Not found" in text(missing)
