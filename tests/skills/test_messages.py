"""How a time in a skill's zone reads, in a chat's reply and in the management tools' answers."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from skills.messages import ChatReply, zone_time

MOMENT = datetime(2026, 11, 22, 8, 5, tzinfo=UTC)


def test_a_time_reads_as_a_clock_in_the_zone_shows_it() -> None:
    assert zone_time(MOMENT, "Europe/Paris") == "2026-11-22 09:05 Europe/Paris"
    assert zone_time(MOMENT, "UTC") == "2026-11-22 08:05 UTC"


def test_a_zone_this_machine_does_not_know_is_the_callers_to_handle() -> None:
    with pytest.raises(KeyError):  # ZoneInfoNotFoundError
        zone_time(MOMENT, "Not/AZone")


def test_a_chat_reply_gives_each_change_its_next_fire_in_the_skill_zone() -> None:
    reply = ChatReply(session_id="s", ok=True, reply="done", changes=[
        {"action": "created", "id": 1, "name": "water", "tier": "direct",
         "trigger": {"timezone": "Europe/Paris"}, "next_fire": MOMENT.isoformat()},
        {"action": "updated", "id": 2, "name": "tea", "tier": "agent", "trigger": {}, "next_fire": MOMENT.isoformat()},
        {"action": "deleted", "id": 3, "name": "old", "tier": None, "trigger": {}, "next_fire": None},
    ])
    assert reply.change_lines() == [
        "created: skill 1 'water' (direct tier, next fire 2026-11-22 09:05 Europe/Paris)",
        "updated: skill 2 'tea' (agent tier, next fire 2026-11-22 08:05 UTC)",
        "deleted: skill 3 'old'",
    ]
