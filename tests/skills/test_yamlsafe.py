"""The one YAML loader: plain types only, and alias bombs refused before anything is expanded."""

from __future__ import annotations

import time
from datetime import date

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from skills import yamlsafe

LAUGHS = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
    for prev, name in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)
"""The "billion laughs": nine lists of nine, each made of the one before; 9^9 strings once expanded."""


def test_the_billion_laughs_is_a_small_document() -> None:
    assert 300 < len(LAUGHS.encode()) < 450 and "i: &i [*h, *h" in LAUGHS


def test_an_alias_bomb_is_refused_fast_naming_the_source() -> None:
    started = time.thread_time()
    with pytest.raises(yamlsafe.YamlRefusedError) as refused:
        yamlsafe.load(LAUGHS, source="water.yaml")
    assert time.thread_time() - started < 5  # CPU s, not a speed check: expanding it would take hours and gigabytes
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


PLAIN = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30)
    | st.dates(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10) | st.integers(),
                                                                      children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(value=PLAIN, flow=st.sampled_from([None, True, False]))
def test_values_are_the_ones_pyyaml_builds(value: object, flow: bool | None) -> None:
    """The direct builder of strings, lists and maps agrees with PyYAML's safe constructor."""
    text = yaml.safe_dump({"value": value}, default_flow_style=flow, allow_unicode=True)
    assert yamlsafe.load(text, source="x") == yaml.safe_load(text)


@pytest.mark.parametrize("text", [
    "a: 1\nb: [yes, no, ~, 0x1F, 1_000, .inf, 2026-11-23, 2026-11-23T06:00:00Z]\n",
    "tags: !!set {a, b}\nraw: !!binary aGVsbG8=\nordered: !!omap [{a: 1}, {b: 2}]\ntext: !!str 10\n",
    "base: &b {x: 1, y: 2}\nmore:\n  <<: *b\n  y: 3\n",
    "'quoted': 'true'\n\"n\": \"10\"\nblock: |\n  two\n  lines\n",
])
def test_tagged_and_merged_documents_are_the_ones_pyyaml_builds(text: str) -> None:
    assert yamlsafe.load(text, source="x") == yaml.safe_load(text)


def test_refusals_are_pyyamls() -> None:
    for text, message in [("? [a, b]\n: 1\n", "found unhashable key"),
                          ("x: !!python/object:os.system {}\n", "could not determine a constructor")]:
        with pytest.raises(yaml.constructor.ConstructorError, match=message):
            yaml.safe_load(text)
        with pytest.raises(yaml.constructor.ConstructorError, match=message):
            yamlsafe.load(text, source="x")
