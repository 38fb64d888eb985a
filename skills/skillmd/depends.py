"""Skill composition: ``depends: [other-skill, ...]``.

A skill's dependencies come along whenever its instructions do (disclosure, the
``skill`` tool), transitively and once each, even when two paths lead to the same
skill (a diamond). Here are the checks: a dependency that names no skill is an error
naming it, and a cycle is refused with the cycle printed (``a → b → a``).

Pure: it works on the dependency graph (name → the names it depends on).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from skills.skillmd.problems import Problem

Graph = Mapping[str, Sequence[str]]

ARROW = " → "


def missing_dependencies(name: str, graph: Graph) -> list[str]:
    """The direct dependencies of ``name`` that name no skill of the graph, in the order written."""
    return [dep for dep in dict.fromkeys(graph.get(name, ())) if dep not in graph]


def find_cycle(name: str, graph: Graph) -> list[str] | None:
    """The shortest cycle through ``name`` (``[a, b, a]``), or None when following its dependencies never leads back."""
    # Breadth first from each dependency, remembering how each skill was reached, so the cycle printed is the shortest.
    came_from: dict[str, str] = {}
    frontier = [name]
    while frontier:
        following: list[str] = []
        for current in frontier:
            for dep in dict.fromkeys(graph.get(current, ())):
                if dep == name:
                    path = [current]
                    while path[-1] != name:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), name]
                if dep in graph and dep not in came_from:
                    came_from[dep] = current
                    following.append(dep)
        frontier = following
    return None


def dependency_problems(names: Iterable[str], graph: Graph) -> dict[str, list[Problem]]:
    """Errors of each named skill: every missing dependency, and the cycle it is part of (if any)."""
    found: dict[str, list[Problem]] = {}
    for name in names:
        problems = [
            Problem.error(f"Skill '{name}' depends on unknown skill '{dep}'", "depends")
            for dep in missing_dependencies(name, graph)
        ]
        cycle = find_cycle(name, graph)
        if cycle is not None:
            problems.append(Problem.error(f"Skill dependencies form a cycle: {ARROW.join(cycle)}", "depends"))
        if problems:
            found[name] = problems
    return found


def with_dependencies(names: Iterable[str], graph: Graph, *, exclude: Iterable[str] = ()) -> list[str]:
    """Each named skill followed by what it depends on (transitively, depth first), once each.

    Unknown names are left out, and so are the names of ``exclude`` (skills already given,
    say earlier in a conversation) and everything reachable only through them.
    """
    ordered: list[str] = []
    seen = set(exclude)

    def visit(name: str) -> None:
        # Iterative: a long chain of dependencies must not exhaust Python's recursion limit.
        stack = [name]
        while stack:
            current = stack.pop()
            if current in seen or current not in graph:
                continue
            seen.add(current)
            ordered.append(current)
            stack.extend(reversed(list(graph[current])))

    for name in names:
        visit(name)
    return ordered
