"""``write_skill``, the SKILL.md folders the tests of skills.skillmd write, for the tests of the adapter that reads them."""

from tests.skills.skillmd.conftest import write_skill

__all__ = ["write_skill"]
