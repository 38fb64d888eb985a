"""Fuzzing SKILL.md files: whatever one folder holds, discovery loads it or skips it saying why,
the other skills keep loading, and matching a message against them ends in bounded time.

A deeper run: ``SKILLS_FUZZ_EXAMPLES=2000 HYPOTHESIS_PROFILE=deep .venv/bin/python -m pytest
tests/fuzz``. Failing examples found are kept in ``corpus.py`` and replayed."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given

from skills.skillmd.matching import SkillIndex
from skills.skillmd.sources import discover
from skills.skillmd.validation import validate_path
from tests.fuzz import EXAMPLES, fuzz_settings
from tests.fuzz.corpus import FRONTMATTERS
from tests.fuzz.strategies import MESSAGES, frontmatters

BOUND = 5.0
"""Seconds for discovering, validating and matching one folder: a hang guard, not a speed check."""

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
        started = time.monotonic()
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
        elapsed = time.monotonic() - started
    assert elapsed < BOUND, f"discovery, validation and matching took {elapsed:.1f}s"


@fuzz_settings(EXAMPLES * 8)
@given(text=frontmatters("fuzzed"), message=MESSAGES)
def test_any_skill_file_is_loaded_or_skipped_by_name_and_matching_ends(text: str, message: str) -> None:
    check_folder(text, message)


@pytest.mark.parametrize("text", FRONTMATTERS)
def test_the_corpus_of_found_files_still_passes(text: str) -> None:
    check_folder(text, "remind me in five minutes to drink water please now!")
    assert not Path("/tmp/fuzz-pwned").exists()
