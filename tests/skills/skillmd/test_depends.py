"""Composition (``depends``): dependencies come along once each, missing ones and cycles are named."""

from __future__ import annotations

from pathlib import Path

from adapters.skill_folders import FOLDERS, discover
from skills.skillmd import dependency_problems, disclose, find_cycle, run_skill_tool, with_dependencies


def test_a_diamond_brings_each_dependency_once(tmp_path: Path, write_skill) -> None:
    write_skill(tmp_path, "report", triggers={"keywords": ["report"]}, depends=["tables", "charts"],
                body="Write the report.")
    write_skill(tmp_path, "tables", depends=["style"], body="Tables like this.")
    write_skill(tmp_path, "charts", depends=["style"], body="Charts like that.")
    write_skill(tmp_path, "style", body="House style.")
    catalog = discover(user=tmp_path)

    assert with_dependencies(["report"], catalog) == ["report", "tables", "style", "charts"]
    disclosure = disclose("the weekly report please", catalog, FOLDERS)
    assert disclosure.tier == 3
    assert disclosure.instructions == ["report", "tables", "style", "charts"]
    assert disclosure.text.count("House style.") == 1


def test_the_skill_tool_brings_the_dependencies_bodies_but_not_their_resources(
    tmp_path: Path, write_skill
) -> None:
    write_skill(tmp_path, "report", depends=["tables", "charts"], body="Write the report.")
    write_skill(tmp_path, "tables", depends=["style"], body="Tables like this.")
    write_skill(tmp_path, "charts", depends=["style"], body="Charts: see references/palette.md.")
    write_skill(tmp_path, "style", body="House style.")
    palette = tmp_path / "charts" / "references" / "palette.md"
    palette.parent.mkdir()
    palette.write_text("PALETTE-CONTENT")
    catalog = discover(user=tmp_path)

    result = run_skill_tool(catalog, "report", FOLDERS)

    assert result.startswith("Write the report.\n\n<skill_instructions name=\"tables\">\nTables like this.")
    assert [line for line in result.splitlines() if line.startswith("<skill_instructions")] == [
        '<skill_instructions name="tables">', '<skill_instructions name="style">',
        '<skill_instructions name="charts">',
    ]
    assert result.count("House style.") == 1
    assert "PALETTE-CONTENT" not in result  # resources stay on disk until asked for
    # Skills already given in the conversation are not given again.
    again = run_skill_tool(catalog, "report", FOLDERS, loaded=["tables", "style"])
    assert "Tables like this." not in again and "House style." not in again and "Charts: see" in again
    # A skill without dependencies is its body alone, as before.
    assert run_skill_tool(catalog, "style", FOLDERS) == "House style."


def test_a_cycle_is_printed_and_a_missing_dependency_named() -> None:
    graph = {"a": ["b"], "b": ["c", "ghost"], "c": ["a"], "d": ["a"], "e": ["e"]}

    assert find_cycle("a", graph) == ["a", "b", "c", "a"]
    assert find_cycle("d", graph) is None  # d depends on a cycle but is not in it
    assert find_cycle("e", graph) == ["e", "e"]
    found = dependency_problems(graph, graph)
    assert [p.message for p in found["a"]] == ["Skill dependencies form a cycle: a → b → c → a"]
    assert [p.message for p in found["b"]] == [
        "Skill 'b' depends on unknown skill 'ghost'", "Skill dependencies form a cycle: b → c → a → b",
    ]
    assert "d" not in found
    assert all(p.severity == "error" and p.field == "depends" for ps in found.values() for p in ps)


def test_discovery_warns_about_a_cycle_and_still_loads_each_skill_once(tmp_path: Path, write_skill) -> None:
    write_skill(tmp_path, "first", triggers={"keywords": ["go"]}, depends=["second"])
    write_skill(tmp_path, "second", depends=["first"])
    catalog = discover(user=tmp_path)

    assert sorted(p.message for p in catalog.problems) == [
        "Skill dependencies form a cycle: first → second → first",
        "Skill dependencies form a cycle: second → first → second",
    ]
    assert all(p.severity == "warning" for p in catalog.problems)
    assert disclose("go", catalog, FOLDERS).instructions == ["first", "second"]


def test_a_long_chain_does_not_exhaust_the_recursion_limit() -> None:
    graph = {f"s{i}": [f"s{i + 1}"] for i in range(5000)} | {"s5000": []}

    from skills.skillmd.depends import with_dependencies as order

    assert len(order(["s0"], graph)) == 5001
    assert find_cycle("s0", graph) is None
