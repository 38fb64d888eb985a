"""Inputs the fuzzer found that broke the engine once, replayed by every run as regression tests.

Kept as code, not JSON files: several are nested deeper than Python's own JSON reader goes. Each
entry says what it broke, so a failure here names the bug it brings back. Add one with the smallest
input that still shows the failure."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fuzz.strategies import nested_dicts, nested_lists


def registration(**fields: Any) -> dict[str, Any]:
    return {"name": "fuzzed skill", "instructions": "Say hello", "trigger_config": {"schedule": "0 9 * * *"},
            "notify_on_completion": False, **fields}


REGISTRATIONS = [
    # The RegisterSkill workflow could not decode its own input (the JSON reader's recursion limit):
    # its workflow task failed and was retried for ever, and the client waited for nothing.
    pytest.param(registration(max_steps=nested_lists(3_000)), id="nested-lists-3000-deep-in-a-field"),
    pytest.param(registration(execution_plan=[{"toolName": "outbox_send_message",
                                               "parameters": {"message": nested_dicts(3_000)}}]),
                 id="nested-maps-3000-deep-in-a-plan-parameter"),
    # Refused later at fire time, or raising in workflow code (OverflowError in completion_due).
    pytest.param(registration(notify_interval_minutes=2000000000000), id="notify-interval-overflows-a-datetime"),
    pytest.param(registration(trigger_config={"interval_minutes": 2**63}), id="interval-past-a-64-bit-duration"),
    # The client raised pydantic's "surrogates not allowed" writing the workflow's input, naming no field.
    pytest.param(registration(instructions={"lone \udcff surrogate": 0}), id="lone-surrogate-in-a-key"),
    pytest.param(registration(execution_plan=[{"toolName": "outbox_send_message",
                                               "parameters": {"message": "a\udcffb"}}]),
                 id="lone-surrogate-in-a-plan-parameter"),
    # ZoneInfo read a 40 KB zone name as a file (OSError: file name too long): prepare_skill retried ten
    # times and the client gave up after 120 s.
    pytest.param(registration(timezone="{{" * 20_000), id="time-zone-longer-than-a-file-name"),
    # Registered, and then no run could start: the SkillAgent search attribute is capped at 2,048 bytes.
    pytest.param(registration(agent_id="{{steps." * 5_000, trigger_config={"event": "fuzz.happened"}),
                 id="agent-id-past-a-search-attribute"),
    # Quadratic placeholder scanning: minutes of CPU per registration at the plan limit.
    pytest.param(registration(execution_plan=[{"toolName": "outbox_send_message",
                                               "parameters": {"message": "{{" * 20_000}}]),
                 id="placeholder-bomb"),
]

FRONTMATTERS = [
    # Discovery raised RecursionError for every skill, not only this file.
    pytest.param("---\n" + "[" * 20_000 + "\n---\nBody.\n", id="frontmatter-of-nested-brackets"),
    # A pattern that backtracks for ever on an ordinary message.
    pytest.param("---\nname: fuzzed\ndescription: Hangs the matcher.\ntriggers:\n  patterns: ['(\\w+\\s?)+$']\n"
                 "---\nBody.\n", id="catastrophic-trigger-pattern"),
    # The YAML tag that would run a command must never do so.
    pytest.param("---\nname: !!python/object/apply:os.system ['touch /tmp/fuzz-pwned']\n---\nx\n",
                 id="yaml-python-tag"),
]

SCHEDULED_FILES = [
    # `skills validate` said valid, while discovery (and so the sync) skipped the file: its frontmatter was
    # over the 64 KiB that discovery reads, a limit validate did not apply.
    pytest.param({"schedule": "0 9 * * *"}, {"approval_required_tools": ["outbox_send_message"] * 5_000},
                 id="frontmatter-over-its-limit-said-valid"),
]
