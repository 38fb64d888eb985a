"""Fuzzing SKILL.md files: whatever one folder holds, discovery loads it or skips it saying why,
the other skills keep loading, and matching a message against them ends in bounded time.

A deeper run: ``SKILLS_FUZZ_EXAMPLES=2000 HYPOTHESIS_PROFILE=deep .venv/bin/python -m pytest
tests/fuzz``. Failing examples found are kept in ``corpus.py`` and replayed."""

from __future__ import annotations

import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from adapters.skill_folders import FOLDERS, discover, validate_path
from skills.errors import SkillValidationError
from skills.skillmd.matching import SkillIndex
from skills.skillmd.registration import FILE_FIELDS, registration_request
from skills.spec.normalize import NormalizeContext, normalize
from tests.fuzz import EXAMPLES, fuzz_settings
from tests.fuzz.corpus import FRONTMATTERS, SCHEDULED_FILES
from tests.fuzz.strategies import FIELD_VALUES, HOSTILE, MESSAGES, TRIGGERS, frontmatters

BOUND = 5.0
"""CPU seconds (this thread's) for discovering, validating and matching one folder: a guard against a runaway
(a pattern or parser that goes superlinear), not a speed check. CPU, not the wall clock: a full suite on a busy
2-core machine once took 5.6 s of wall time over an ordinary example; a hang in I/O is pytest-timeout's."""

GOOD = """---
name: good-neighbour
description: Waters the plants when asked to water them.
triggers:
  keywords: [water the plants]
---
Water the plants.
"""


def check_folder(text: str, message: str) -> None:
    with tempfile.TemporaryDirectory() as place:
        root = Path(place)
        (root / "good-neighbour").mkdir()
        (root / "good-neighbour" / "SKILL.md").write_text(GOOD)
        (root / "fuzzed").mkdir()
        bad = root / "fuzzed" / "SKILL.md"
        bad.write_text(text, errors="surrogatepass")
        started = time.thread_time()
        catalog = discover(user=root)
        assert "good-neighbour" in catalog.skills, f"one bad file broke its neighbour: {catalog.problems}"
        if "fuzzed" not in catalog.skills and "fuzzed" not in catalog.disabled:  # loaded, off by default
            assert any(Path(str(p.path)) == bad for p in catalog.problems if p.path), \
                f"the skipped file is not named: {catalog.problems}"
        problems = validate_path(bad)
        assert all(p.message for p in problems)
        matched = SkillIndex(catalog.skills.values()).match(message)
        assert all(m.name in catalog.skills for m in matched)
        assert SkillIndex(catalog.skills.values()).match("please water the plants")[0].name in catalog.skills
        elapsed = time.thread_time() - started
    assert elapsed < BOUND, f"discovery, validation and matching took {elapsed:.1f} CPU s"


@fuzz_settings(EXAMPLES * 8)
@given(text=frontmatters("fuzzed"), message=MESSAGES)
def test_any_skill_file_is_loaded_or_skipped_by_name_and_matching_ends(text: str, message: str) -> None:
    check_folder(text, message)


@pytest.mark.parametrize("text", FRONTMATTERS)
def test_the_corpus_of_found_files_still_passes(text: str) -> None:
    check_folder(text, "remind me in five minutes to drink water please now!")
    assert not Path("/tmp/fuzz-pwned").exists()


LEFT_TO_THE_REGISTRATION = ("is in the past", "only a repeating schedule", "is not one of the skill's tools",
                            "is not marked destructive", "in approval_required_tools too")
"""What the registration weighs against the clock or the rest of the skill, which ``skills validate`` leaves
to it (docs/skill-files.md)."""


@fuzz_settings(EXAMPLES)
@given(trigger=st.sampled_from([t for t in TRIGGERS if t]),
       fields=st.dictionaries(st.sampled_from(sorted(FILE_FIELDS)), st.none(), max_size=4).flatmap(
           lambda chosen: st.fixed_dictionaries(
               {key: st.one_of(FIELD_VALUES[key], HOSTILE) for key in chosen})))
def test_validate_refuses_what_the_registration_of_a_scheduled_file_would(trigger: dict[str, Any],
                                                                        fields: dict[str, Any]) -> None:
    """``skills validate`` and the sync's registration say the same of each field a scheduled file
    passes on: validate refused jitter_seconds 999999999 and max_runs 0 once only in the sync's log."""
    check_scheduled_file(trigger, fields)


@pytest.mark.parametrize(("trigger", "fields"), SCHEDULED_FILES)
def test_the_corpus_of_found_scheduled_files_still_passes(trigger: dict[str, Any], fields: dict[str, Any]) -> None:
    check_scheduled_file(trigger, fields)


def check_scheduled_file(trigger: dict[str, Any], fields: dict[str, Any]) -> None:
    """A scheduled SKILL.md with these fields in its ``metadata``: each refusal of one by the sync's
    registration is said by validate too, in its words, and validate refuses nothing the registration
    takes; a file discovery does not load is an error for validate."""
    front = {"name": "fuzzed", "description": "A scheduled fuzzed skill.",
             "metadata": {"trigger_config": dict(trigger), "required_tools": ["outbox_send_message"], **fields}}
    try:
        text = yaml.dump(front, Dumper=yaml.CSafeDumper)
    except (ValueError, RecursionError, yaml.YAMLError):
        return
    with tempfile.TemporaryDirectory() as place:
        folder = Path(place) / "fuzzed"
        folder.mkdir()
        (folder / "SKILL.md").write_text(f"---\n{text}---\nSay hello.\n", errors="surrogatepass")
        errors = [p for p in validate_path(folder) if p.severity == "error"]
        said = {p.field: p.message for p in errors if p.field}
        skill = discover(user=Path(place)).skills.get("fuzzed")
        request = registration_request(skill, FOLDERS) if skill is not None else None
    if request is None:  # not loaded, or its trigger_config dropped: validate has said why
        assert errors
        return
    ctx = NormalizeContext(now=datetime.now(UTC), default_timezone="UTC", default_agent_id="files")
    try:
        normalize(request, ctx)
        refused: dict[str, str] = {}
    except SkillValidationError as e:
        refused = {f"metadata.{err.field}": f"Field 'metadata.{err.field}': {err.message}" for err in e.errors
                   if err.field in FILE_FIELDS}
    validated = {field: message for field, message in said.items() if field.removeprefix("metadata.") in FILE_FIELDS}
    for field, message in refused.items():
        if not any(reason in message for reason in LEFT_TO_THE_REGISTRATION):
            assert validated.get(field) == message, f"validate missed {message!r}: {validated}"
    for field, message in validated.items():
        assert refused.get(field) == message, f"validate refused what the registration takes: {message!r}"
