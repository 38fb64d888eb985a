"""Which reading of MCP's ``destructiveHint`` the engine takes: only an explicit ``true`` on a tool not
said to be read-only (the specification's default of true for an unannotated tool is not applied)."""

from __future__ import annotations

import pytest

from skills.run.catalog import ToolHints, ToolInfo, destructive_tools


@pytest.mark.parametrize(("hints", "destructive"), [
    (ToolHints(), False),  # no annotations: most servers; the spec would say destructive
    (ToolHints(read_only=False), False),  # not read-only, destructiveHint absent: the spec's default is not taken
    (ToolHints(destructive=True), True),
    (ToolHints(read_only=False, destructive=True), True),
    (ToolHints(read_only=True, destructive=True), False),  # read-only wins: the spec ignores it then
    (ToolHints(read_only=False, destructive=False), False),
])
def test_only_an_explicit_destructive_hint_counts(hints: ToolHints, destructive: bool) -> None:
    assert hints.destructive_said is destructive


def test_a_skills_destructive_tools_less_its_exemptions() -> None:
    catalog = [ToolInfo(name="a_drop", server="a", tool="drop", hints=ToolHints(destructive=True)),
               ToolInfo(name="a_read", server="a", tool="read", hints=ToolHints(read_only=True)),
               ToolInfo(name="a_wipe", server="a", tool="wipe", hints=ToolHints(destructive=True))]
    assert destructive_tools(["a_read", "a_wipe", "a_drop", "a_wipe", "gone"], catalog) == ["a_wipe", "a_drop"]
    assert destructive_tools(["a_wipe", "a_drop"], catalog, exempt=["a_wipe"]) == ["a_drop"]
