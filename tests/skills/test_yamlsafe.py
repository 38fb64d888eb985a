"""The one YAML loader: plain types only, and alias bombs refused before anything is expanded."""

from __future__ import annotations

import time
from datetime import date

import pytest
import yaml

from skills import yamlsafe

LAUGHS = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
    for prev, name in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)
"""The "billion laughs": nine lists of nine, each made of the one before; 9^9 strings once expanded."""


def test_the_billion_laughs_is_a_small_document() -> None:
    assert 300 < len(LAUGHS.encode()) < 450 and "i: &i [*h, *h" in LAUGHS


def test_an_alias_bomb_is_refused_fast_naming_the_source() -> None:
    started = time.monotonic()
    with pytest.raises(yamlsafe.YamlRefusedError) as refused:
        yamlsafe.load(LAUGHS, source="water.yaml")
    assert time.monotonic() - started < 0.5
    assert str(refused.value) == (
        "water.yaml: YAML aliases (*name) would expand the document by 490,329,036 nodes; at most 10,000 are "
        "allowed (an alias bomb?); refused")
    assert isinstance(refused.value, yaml.YAMLError)  # callers that catch YAML errors catch this one too


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(yamlsafe.YamlRefusedError, match="^loop.yaml: a YAML alias refers to a node that contains it"):
        yamlsafe.load("a: &a [1, *a]", source="loop.yaml")


def test_ordinary_aliases_and_merge_keys_still_work() -> None:
    text = "base: &base {timezone: Europe/Paris}\nmorning: {<<: *base, schedule: '0 7 * * *'}\nnote: Q&A\n"
    assert yamlsafe.load(text, source="s") == {
        "base": {"timezone": "Europe/Paris"},
        "morning": {"timezone": "Europe/Paris", "schedule": "0 7 * * *"},
        "note": "Q&A",
    }
    reused = "x: &x [" + ", ".join(["v"] * 100) + "]\n" + "".join(f"k{i}: *x\n" for i in range(99))
    assert len(yamlsafe.load(reused, source="s")) == 100  # 9,900 nodes added: under the bound


def test_plain_yaml_types_and_nothing_else() -> None:
    assert yamlsafe.load("", source="s") is None
    assert yamlsafe.load("day: 2026-02-14\nn: 3", source="s") == {"day": date(2026, 2, 14), "n": 3}
    with pytest.raises(yaml.constructor.ConstructorError):
        yamlsafe.load("x: !!python/object/apply:os.system ['true']", source="s")
    with pytest.raises(yaml.YAMLError):
        yamlsafe.load("x: [unclosed", source="s")
