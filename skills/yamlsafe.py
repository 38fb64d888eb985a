"""The one YAML loader for everything the engine reads: safe types only, and no alias bombs.

Safe YAML builds no Python objects (``!!python/object`` is refused), but it still
expands aliases: a 400-byte "billion laughs" (``&a [x, x, ...]``, ``&b [*a, *a, ...]``,
...) is a few nodes on disk and hundreds of millions once expanded, so a later walk,
dump or copy of it takes gigabytes. :func:`load` composes the document first (aliases
are shared nodes then, nothing is expanded), counts what the aliases would add, and
refuses the document past :data:`MAX_ALIAS_EXPANSION` nodes, or when an alias holds
itself; only then are the Python values built.

Deep nesting is refused too, before the parser sees it: libyaml takes seconds on a few
thousand nested ``[`` (it is quadratic there) and the composer then raises RecursionError,
which once broke discovery for every skill. The flow brackets are counted in the raw text
(quoted ones included: a document with more than :data:`MAX_NESTING` unclosed ``[`` or
``{`` is refused whatever they mean), then the composed document's depth is checked, and a
RecursionError or MemoryError that still escapes the parser becomes a refusal naming the source.

Use it for SKILL.md and AGENT.md frontmatter, registration files and config files::

    data = yamlsafe.load(path.read_text(), source=str(path))

Pure code, no I/O.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from skills.spec.limits import MAX_NESTING

MAX_ALIAS_EXPANSION = 10_000
"""Nodes that aliases may add to a document once expanded; real documents use a handful."""

_SAFE: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""The C parser when libyaml is present (discovery parses thousands of files); both build only plain types."""

_RESOLVED: dict[tuple[str, bool], str] = {}
"""The tag of each short plain scalar seen (``true``, ``name``, ``10``): the same words come back in every file."""
_RESOLVED_MAX = 50_000
_SHORT = 40


class _Loader(_SAFE):  # type: ignore[misc,valid-type]
    """The safe loader, with the implicit tag of short plain scalars remembered (no path resolvers
    are registered, so a scalar's tag depends on its text alone)."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is not yaml.ScalarNode or len(value) > _SHORT:
            return super().resolve(kind, value, implicit)
        key = (value, implicit[0])
        tag = _RESOLVED.get(key)
        if tag is None:
            tag = super().resolve(kind, value, implicit)
            if len(_RESOLVED) < _RESOLVED_MAX:
                _RESOLVED[key] = tag
        return tag


_STR, _SEQ, _MAP = "tag:yaml.org,2002:str", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"


class YamlRefusedError(yaml.YAMLError):
    """A YAML document refused before its values are built (its aliases expand too far, or hold themselves)."""


def load(text: str, *, source: str) -> Any:
    """The document in ``text`` as plain Python values (dicts, lists, strings, numbers, dates...).

    ``source`` names it in errors (a path, ``SKILL.md``, ``-``). Raises
    :class:`yaml.YAMLError` for YAML that does not parse, a tag that would build an object
    (``yaml.constructor.ConstructorError``), or :class:`YamlRefusedError` naming the source
    for an alias bomb or a recursive alias.
    """
    _check_brackets(text, source)
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_depth(node, source)
        if "&" in text:  # without an anchor there is no alias to expand
            _check_aliases(node, source)
        if "<<" in text:  # merge keys: PyYAML's constructor flattens them
            return loader.construct_document(node)
        return _build(loader, node)
    except RecursionError:
        raise YamlRefusedError(f"{source}: the document nests too deeply for the YAML parser; at most "
                               f"{MAX_NESTING} levels are allowed; refused") from None
    except MemoryError:
        raise YamlRefusedError(f"{source}: the document is too big for the YAML parser; refused") from None
    except (ValueError, OverflowError) as e:
        # A value the constructor cannot build (a date 2026-13-45, an integer of over 4,300 digits):
        # invalid YAML for the caller, not a crash of whoever reads many files.
        raise yaml.YAMLError(f"{source}: a value cannot be read: {e}") from None
    finally:
        loader.dispose()


_BRACKET = re.compile(r"[\[\]{}]")


def _check_brackets(text: str, source: str) -> None:
    """Refuse more than :data:`MAX_NESTING` unclosed ``[``/``{`` anywhere in the text, in one pass."""
    if text.count("[") + text.count("{") <= MAX_NESTING:
        return
    depth = 0
    for found in _BRACKET.finditer(text):
        if found.group() in "[{":
            depth += 1
            if depth > MAX_NESTING:
                raise YamlRefusedError(
                    f"{source}: more than {MAX_NESTING} levels of nested [ or {{ (at line "
                    f"{text.count(chr(10), 0, found.start()) + 1}); at most {MAX_NESTING} are allowed; refused")
        elif depth:
            depth -= 1


def _check_depth(root: yaml.Node, source: str) -> None:
    """Refuse a composed document nested (by indentation too) deeper than :data:`MAX_NESTING`."""
    stack: list[tuple[yaml.Node, int]] = [(root, 0)]
    seen: set[int] = set()
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, yaml.SequenceNode | yaml.MappingNode) or id(node) in seen:
            continue
        seen.add(id(node))  # an alias is a shared node: counted once (aliases are _check_aliases's)
        if depth + 1 > MAX_NESTING:
            raise YamlRefusedError(f"{source}: nests lists and mappings more than {MAX_NESTING} levels deep "
                                   f"(at line {node.start_mark.line + 1}); refused")
        stack.extend((child, depth + 1) for child in _children(node))


def _build(loader: Any, node: yaml.Node) -> Any:
    """The value of ``node``: strings, lists and maps built directly (most of a frontmatter), every
    other tag (numbers, booleans, dates, ``!!set``; a refused ``!!python/...``) by PyYAML's safe
    constructor, so the values and the errors are the ones it gives."""
    tag = node.tag
    if tag == _STR and isinstance(node, yaml.ScalarNode):
        return node.value
    if tag == _SEQ and isinstance(node, yaml.SequenceNode):
        return [_build(loader, child) for child in node.value]
    if tag == _MAP and isinstance(node, yaml.MappingNode):
        built: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _build(loader, key_node)
            try:
                hash(key)
            except TypeError:
                raise yaml.constructor.ConstructorError("while constructing a mapping", node.start_mark,
                                                        "found unhashable key", key_node.start_mark) from None
            built[key] = _build(loader, value_node)
        return built
    return loader.construct_object(node, deep=True)


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
