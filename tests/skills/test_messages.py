"""Messages: how a time in a skill's zone reads (a chat's reply, the management tools' answers), and
payloads of an earlier shape that a run in flight across an upgrade still carries."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import pydantic_data_converter

from skills.messages.chat import ChatReply, zone_time
from skills.messages.run import RunStart
from skills.run.catalog import ToolCallInput, ToolsetGrant, toolsets_digest

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


def test_payloads_written_before_toolset_grants_still_decode() -> None:
    """A run in flight across a worker upgrade: its recorded RunStart and a pending tool call's input,
    written when toolsets were a bare mapping beside ``skill_folder``, decode through the data converter."""
    def decoded(data: dict[str, object], kind: type) -> object:
        payload = Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(data).encode())
        return pydantic_data_converter.payload_converter.from_payloads([payload], [kind])[0]

    servers = {"changing": {"command": "python", "args": ["server.py"]}}
    call = decoded({"tool": "changing_add", "skill": "with-tools", "toolsets": servers, "skill_folder": "/s"},
                   ToolCallInput)
    # By reference: the names and the digest of what the payload carried; never the command itself.
    assert call.toolsets == ToolsetGrant(skill="with-tools", servers=["changing"],  # type: ignore[attr-defined]
                                         digest=toolsets_digest(servers))
    assert "server.py" not in call.model_dump_json()  # type: ignore[attr-defined]
    plain = decoded({"tool": "outbox_send_message", "skill": None, "toolsets": {}, "skill_folder": None},
                    ToolCallInput)
    assert plain.toolsets is None  # type: ignore[attr-defined]
    start = decoded({"skill": None, "run": None, "toolsets": {}, "skill_folder": None}, RunStart)
    assert start.toolsets is None  # type: ignore[attr-defined]
    # A grant of the shape before grants were by reference (whole entries and a folder) decodes the same way.
    granted = decoded({"tool": "changing_add", "toolsets": {"skill": "s", "servers": servers, "folder": "/s"}},
                      ToolCallInput)
    assert granted.toolsets == ToolsetGrant(skill="s", servers=["changing"],  # type: ignore[attr-defined]
                                            digest=toolsets_digest(servers))
    # Today's shape goes through unchanged.
    grant = ToolCallInput(tool="changing_add", toolsets=ToolsetGrant(skill="s", servers=["changing"], digest="sha256:x"))
    assert decoded(grant.model_dump(mode="json"), ToolCallInput) == grant
