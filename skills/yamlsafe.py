"""The one YAML loader for everything the engine reads: safe types only, and no alias bombs.

Safe YAML builds no Python objects (``!!python/object`` is refused), but it still
expands aliases: a 400-byte "billion laughs" (``&a [x, x, ...]``, ``&b [*a, *a, ...]``,
...) is a few nodes on disk and hundreds of millions once expanded, so a later walk,
dump or copy of it takes gigabytes. :func:`load` composes the document first (aliases
are shared nodes then, nothing is expanded), counts what the aliases would add, and
refuses the document past :data:`MAX_ALIAS_EXPANSION` nodes, or when an alias holds
itself; only then are the Python values built.

Use it for SKILL.md and AGENT.md frontmatter, registration files and config files::

    data = yamlsafe.load(path.read_text(), source=str(path))

Pure code, no I/O.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_ALIAS_EXPANSION = 10_000
"""Nodes that aliases may add to a document once expanded; real documents use a handful."""

# The C loader when libyaml is present (discovery parses thousands of files); both build only
# plain YAML types.
_LOADER: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlRefusedError(yaml.YAMLError):
    """A YAML document refused before its values are built (its aliases expand too far, or hold themselves)."""


def load(text: str, *, source: str) -> Any:
    """The document in ``text`` as plain Python values (dicts, lists, strings, numbers, dates...).

    ``source`` names it in errors (a path, ``SKILL.md``, ``-``). Raises
    :class:`yaml.YAMLError` for YAML that does not parse, a tag that would build an object
    (``yaml.constructor.ConstructorError``), or :class:`YamlRefusedError` naming the source
    for an alias bomb or a recursive alias.
    """
    loader = _LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if "&" in text:  # without an anchor there is no alias to expand
            _check_aliases(node, source)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _check_aliases(root: yaml.Node, source: str) -> None:
    """Count the nodes of the expanded document, each shared node once per use, without expanding it."""
    expanded: dict[int, int] = {}  # node id -> nodes in it, expanded
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            expanded[key] = 1 + sum(expanded[id(child)] for child in _children(node))
            continue
        if key in expanded:
            continue
        if key in on_path:
            raise YamlRefusedError(f"{source}: a YAML alias refers to a node that contains it (a recursive "
                                   "document); refused")
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in expanded)
    added = expanded[id(root)] - len(expanded)
    if added > MAX_ALIAS_EXPANSION:
        raise YamlRefusedError(
            f"{source}: YAML aliases (*name) would expand the document by {added:,} nodes; at most "
            f"{MAX_ALIAS_EXPANSION:,} are allowed (an alias bomb?); refused")


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []
