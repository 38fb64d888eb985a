"""Trigger matching: whole words, phrases, patterns, and the ranking order."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from skills.skillmd import SkillFile, SkillIndex, SkillManifest, discover


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
    assert names(index, "review the code") == []
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
            skill("weather"),
        ]
    )

    assert names(index, "weather daily report summary") == ["weather", "phrased"]


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
