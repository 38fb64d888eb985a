"""Frontmatter parsing on strings: python-frontmatter for the split, the engine's safe YAML
(``skills.yamlsafe``: plain types, no alias bombs) for the data.

Error messages follow the reference validator skills-ref, so a user sees the same
words whichever tool checked the file.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from skills.errors import FrontmatterError

if TYPE_CHECKING:
    import yaml


@lru_cache(maxsize=1)
def _handler() -> Any:
    """python-frontmatter's YAML handler pinned to the engine's safe loader, whatever its defaults become:
    a tag like !!python/object is refused, never run, and so is an alias bomb. Made with the first file
    read: PyYAML and python-frontmatter load then, not with a worker that reads no SKILL.md
    (docs/performance.md, "Worker RSS")."""
    from frontmatter.default_handlers import YAMLHandler

    from skills import yamlsafe

    class _SafeYAMLHandler(YAMLHandler):
        def load(self, fm: str, source: str = "frontmatter", **kwargs: object) -> Any:
            return yamlsafe.load(fm, source=source)

    return _SafeYAMLHandler()


def is_boundary(line: str) -> bool:
    """Whether a line opens or closes frontmatter (``---``)."""
    return _handler().FM_BOUNDARY.match(line) is not None


def split_frontmatter(text: str, filename: str = "SKILL.md") -> tuple[str, str]:
    """The raw frontmatter and the body (stripped) of a file's text."""
    text = text.removeprefix("\ufeff")
    if not _handler().detect(text):
        raise FrontmatterError(f"{filename} must start with YAML frontmatter (---)")
    try:
        fm, body = _handler().split(text)
    except ValueError:
        raise FrontmatterError(f"{filename} frontmatter not properly closed with ---") from None
    return fm, body.strip()


def parse_frontmatter(text: str, filename: str = "SKILL.md") -> tuple[dict[str, Any], str]:
    """The frontmatter as a mapping, and the body. Raises ``FrontmatterError``."""
    import yaml

    from skills import yamlsafe

    fm, body = split_frontmatter(text, filename)
    try:
        data = _handler().load(fm, source=filename)
    except yaml.constructor.ConstructorError as exc:
        raise FrontmatterError(f"Invalid YAML in frontmatter: {_describe_constructor_error(exc)}") from None
    except yamlsafe.YamlRefusedError as exc:
        raise FrontmatterError(f"Refused YAML in frontmatter: {exc}") from None
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"Invalid YAML in frontmatter: {exc}") from None
    if data is None:
        # An empty block is a mapping with nothing in it: report the missing fields, not the shape.
        data = {}
    if not isinstance(data, dict):
        raise FrontmatterError(f"{filename} frontmatter must be a YAML mapping")
    return data, body


def _describe_constructor_error(exc: yaml.constructor.ConstructorError) -> str:
    problem = exc.problem or str(exc)
    if "constructor for the tag" in problem:
        return f"{problem}; only plain YAML is allowed (tags that build objects are refused)"
    return problem
