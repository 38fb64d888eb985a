"""How big a skill may be: the limits every road into the engine checks, in one place.

Temporal refuses a payload over 2 MB ("Blob data size exceeds limit") and a gRPC
message over 4 MB, with errors that name neither the field nor the limit; the SDK
also prints a warning for every payload over 512 KiB. So a registration is measured
before it reaches Temporal (by the client, ``SkillsClient.register``/``update``) and
again by the normalizer, each refusal naming the limit:

- ``instructions``: the SKILL.md body limit, since a file skill's body is its instructions;
- ``execution_plan``: as JSON, a fixed list of tool calls;
- the whole registration body, as JSON: well under Temporal's 2 MB, with room for what
  the workflow adds (notes, the normalized skill) around it.

Pure code, no I/O.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import to_json

from skills.errors import FieldError

KIB = 1024
MIB = 1024 * KIB

MAX_INSTRUCTIONS_BYTES = 1 * MIB
"""``instructions`` in UTF-8 (and a SKILL.md body, whose text becomes the instructions)."""
MAX_PLAN_BYTES = 256 * KIB
"""``execution_plan`` as JSON."""
MAX_SKILL_BYTES = 1536 * KIB
"""A whole registration (or update) body as JSON, and a whole normalized skill."""
MAX_INSTALL_FILE_BYTES = 10 * MIB
"""One file of a skill being installed (``skills install``): scripts and assets can be bigger than a resource an LLM reads."""
MAX_INSTALL_BYTES = 50 * MIB
"""Everything one ``skills install`` unpacks, all skills together (what an archive says it holds is checked first)."""
MAX_INSTALL_FILES = 2000
"""Files and folders one ``skills install`` may unpack."""
TEMPORAL_PAYLOAD_WARNING_BYTES = 2 * MIB
"""Where the Temporal SDK's own payload warning is set for our clients: past anything we send
(the SDK's default, 512 KiB, is below a legitimate skill and prints on stdout)."""


def describe(limit: int) -> str:
    """A limit as a person reads it, with its exact bytes: ``"1 MiB (1,048,576 bytes)"``."""
    for unit, name in ((MIB, "MiB"), (KIB, "KiB")):
        if limit >= unit:
            return f"{limit / unit:.2f}".rstrip("0").rstrip(".") + f" {name} ({limit:,} bytes)"
    return f"{limit:,} bytes"


def json_size(value: Any) -> int:
    """Bytes of ``value`` as JSON, as Temporal's converter would write it (a value JSON lacks counts as its text)."""
    try:
        return len(to_json(value, fallback=str))
    except ValueError:  # a structure that holds itself: no converter can write it, but it has a size
        return len(repr(value).encode(errors="replace"))


def too_large(field: str, size: int, limit: int, measured: str = "as JSON") -> FieldError | None:
    """A refusal naming the field, its size and the limit, when ``size`` is over ``limit``;
    the field "" is the whole skill."""
    if size <= limit:
        return None
    subject = "the skill is" if not field else "is"
    return FieldError(field=field, message=f"{subject} {size:,} bytes {measured}; the limit is {describe(limit)}")


def body_too_large(body: Any) -> FieldError | None:
    """The refusal of a registration body over :data:`MAX_SKILL_BYTES` as JSON, if it is."""
    return too_large("", json_size(body), MAX_SKILL_BYTES)
