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

Numbers and nesting are bounded here too, for the same reason: a value that passes the
front door must not break the engine later. ``notify_interval_minutes: 2000000000000``
once registered and then overflowed ``timedelta`` inside workflow code at the first
fire; a frontmatter of 40 KB of nested ``[`` made discovery raise RecursionError for
every skill. Each :class:`Bound` is read by the normalizer, the SKILL.md checks and the
JSON Schemas the management tools give a model (``skills.management.manual``), so all three
say the same range; docs/skills.md lists them with the reasons.

Pure code, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Bound:
    """The range a numeric field may take, with why; ``low_exclusive``: the value must be above ``low``."""

    name: str
    low: float
    """Whole for a whole-number field; a fraction only where the field takes one (``timeout_minutes``)."""
    high: int
    why: str
    whole: bool = True
    """Whole numbers only (a JSON integer); otherwise any finite number."""
    low_exclusive: bool = False

    def range_text(self) -> str:
        if self.low_exclusive:
            return f"more than {self.low} and at most {self.high}"
        return f"between {self.low} and {self.high}"

    def problem(self, value: float) -> str | None:
        """Why ``value`` (already a finite number) is out of range, naming the range; None when it is in."""
        below = value <= self.low if self.low_exclusive else value < self.low
        if below or value > self.high:
            return f"must be {self.range_text()} (got {_show_number(value)})"
        return None

    def schema(self) -> dict[str, Any]:
        """The JSON Schema keywords of this range, for a tool's input schema."""
        low = {"exclusiveMinimum": self.low} if self.low_exclusive else {"minimum": self.low}
        return {"type": "integer" if self.whole else "number", **low, "maximum": self.high}


def _show_number(value: float) -> str:
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e16 else f"{value:g}"
    if abs(value) < 10**30:
        return str(value)
    # str() of an int of over 4,300 digits raises ValueError: say how long it is instead.
    return f"a number of {value.bit_length() * 30103 // 100000 + 1} digits"


MINUTES_PER_YEAR = 365 * 24 * 60

MAX_STEPS = Bound(
    "max_steps", 1, 100,
    "an Agent-tier run's LLM turns; each costs tokens, and a task that needs more than 100 is not one task")
NOTIFY_INTERVAL_MINUTES = Bound(
    "notify_interval_minutes", 0, MINUTES_PER_YEAR,
    "0 is the engine's default; a notice at most once a year is as quiet as a notice can usefully be, and "
    "a larger value overflowed the workflow's date arithmetic")
MAX_DESTINATIONS = 5
"""Entries of ``deliver_to``: each is a message per result; more is a broadcast, not a delivery."""
MAX_DESTINATION_BYTES = 2_048
"""JSON size of one destination's fixed arguments (a chat id, a URL name, a subject)."""
DIGEST_MINUTES = Bound(
    "digest_minutes", 0.05, 1440,
    "from 3 seconds to a day: a digest gathers one day's results at most", whole=False)
REMIND_AFTER_MINUTES = Bound(
    "remind_after_minutes", 0, MINUTES_PER_YEAR,
    "0 tells an incident once; a reminder at most once a year is as rare as one can usefully be")
INTERVAL_MINUTES = Bound(
    "trigger_config.interval_minutes", 1, MINUTES_PER_YEAR,
    "every minute up to once a year; anything rarer is a cron or a one-shot `at`")
RELATIVE_MINUTES_LIMIT = 10 * 366 * 24 * 60
IN_MINUTES = Bound(
    "trigger_config.in_minutes", 0, RELATIVE_MINUTES_LIMIT,
    "once, in the future and within ten years (further ahead, give an absolute `at`)",
    whole=False, low_exclusive=True)
IN_HOURS = Bound(
    "trigger_config.in_hours", 0, RELATIVE_MINUTES_LIMIT // 60,
    "the same ten years as in_minutes", whole=False, low_exclusive=True)
PRIORITY = Bound(
    "metadata.priority", -1000, 1000,
    "a SKILL.md's tie-breaker in matching: only the order matters, so a small range gives every order")
TOOLSET_TIMEOUT_SECONDS = Bound(
    "timeout (a SKILL.md toolset, an mcpServers entry)", 0, 3600,
    "seconds one call of a toolset's tool may take; the tool call's activity is bounded anyway, and an hour "
    "is past any interactive tool", whole=False, low_exclusive=True)

# The shape of a schedule and its runs: a run's own limit, how many runs, how late a fire may drift.
TIMEOUT_MINUTES = Bound(
    "timeout_minutes", 0.05, 7 * 24 * 60,
    "how long one run may take before it ends as `error`: timed out; never more than the engine's own cap "
    "on a run (7 days). A fraction of a minute is allowed down to 3 seconds: a shorter limit (1e-300 once "
    "passed \"more than 0\") ends every run before its first call", whole=False)
MAX_RUNS = Bound(
    "max_runs", 1, 1_000_000,
    "scheduled runs before the schedule ends: a million is past any schedule's life (every minute for two years)")
JITTER_SECONDS = Bound(
    "jitter_seconds", 0, 3600,
    "each fire is delayed by a random time up to this, so skills that share a minute do not all start in it; "
    "an hour at most, beyond which the fire no longer keeps its hour")

MAX_TOKENS_PER_MONTH = Bound(
    "max_tokens_per_month", 1, 1_000_000_000,
    "an Agent-tier skill's tokens in 30 days; a billion is far past any monthly bill worth a cap")
APPROVAL_TIMEOUT_MINUTES = Bound(
    "approval_timeout_minutes", 1, 7 * 24 * 60,
    "how long a call waits for the owner's answer: a run may not outlive a week (skills.run.deadline), waits included")

MAX_CONTEXT_FROM = 5
"""Skills one ``context_from`` may name (``self`` counts): each brings up to :data:`MAX_RECALL_CHARS` to
every run's first LLM turn, so five keep the block within a local model's context."""
MAX_RECALL_CHARS = 3000
"""Characters of one remembered result (``context_from``, ``{{last.result}}``, ``{{skill:NAME.last}}``) and of one
pre-flight check's result given to an Agent-tier run: a run's stored summary is up to 2,000 already; past
this it is cut and says so."""

BOUNDS = (MAX_STEPS, NOTIFY_INTERVAL_MINUTES, REMIND_AFTER_MINUTES, MAX_TOKENS_PER_MONTH, INTERVAL_MINUTES, IN_MINUTES, IN_HOURS, PRIORITY,
          TOOLSET_TIMEOUT_SECONDS, TIMEOUT_MINUTES, MAX_RUNS, JITTER_SECONDS, APPROVAL_TIMEOUT_MINUTES)
"""Every numeric field a user gives, in the order docs/skills.md lists them."""

MAX_NUMBER_TEXT = 40
"""Characters of a number written as text (``"15"``); Python refuses to read an integer of over 4,300
digits with a ValueError, so a longer one is refused before it is read."""

MAX_NESTING = 32
"""Levels of lists and objects inside one value: a registration, a plan step's parameters, event data,
a SKILL.md frontmatter. Real tool arguments use a handful; recursive code (parsers, copies, JSON
writers) fails at a few hundred to a thousand levels with RecursionError, which no caller expects."""


def nesting_depth(value: Any, stop: int = MAX_NESTING + 1) -> int:
    """Levels of lists and objects in ``value`` (a scalar is 0, ``[]`` is 1), counted without recursion,
    and no further than ``stop`` (so a million levels cost no more than ``stop``)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            depth += 1
            deepest = max(deepest, depth)
            if depth >= stop:
                return depth
            stack.extend((child, depth) for child in _children(item))
    return deepest


def _children(item: dict[Any, Any] | list[Any] | tuple[Any, ...]) -> Iterator[Any]:
    return iter(item.values()) if isinstance(item, dict) else iter(item)


def too_deep(field: str, value: Any, limit: int = MAX_NESTING) -> FieldError | None:
    """A refusal naming the field when ``value`` nests lists and objects deeper than ``limit``."""
    if nesting_depth(value, limit + 1) <= limit:
        return None
    subject = "the skill" if not field else "it"
    return FieldError(field=field, message=f"{subject} nests lists and objects more than {limit} levels deep; "
                                           f"at most {limit} are allowed")


def is_finite_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


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


def not_unicode(value: Any) -> FieldError | None:
    """A refusal naming the first text in ``value`` (a key or a value, at any depth) that is not valid
    Unicode: a lone surrogate (``"\\udcff"``, from a bad decode) cannot be written as UTF-8, so no
    payload can carry it. Walked without recursion; call it on a value :func:`too_deep` accepted."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        texts = [item] if isinstance(item, str) else [k for k in item if isinstance(k, str)] \
            if isinstance(item, dict) else []
        for text in texts:
            try:
                text.encode()
            except UnicodeEncodeError as e:
                where = path if text is item else ".".join(p for p in (path, "<key>") if p)
                return FieldError(field=where, message=f"is not valid Unicode: a lone surrogate "
                                                       f"({text[e.start]!r}) at character {e.start}")
        if isinstance(item, dict):
            stack.extend((child, f"{path}.{key}" if path else str(key)) for key, child in item.items())
        elif isinstance(item, list | tuple):
            stack.extend((child, f"{path}.{i}" if path else str(i)) for i, child in enumerate(item))
    return None


def valid_text(text: str) -> str:
    """``text`` with what no payload can carry (lone surrogates) replaced by U+FFFD, as a decoder
    replaces a bad byte; valid text comes back as it is."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")  # one U+FFFD each
    return text


def body_too_large(body: Any) -> FieldError | None:
    """The refusal of a registration body over :data:`MAX_SKILL_BYTES` as JSON, nested deeper than
    :data:`MAX_NESTING`, or holding text no payload can carry, if it is (the depth first: the other
    two walk the body)."""
    return too_deep("", body) or not_unicode(body) or too_large("", json_size(body), MAX_SKILL_BYTES)

GRANT_MINUTES = Bound(
    "for", 1, MINUTES_PER_YEAR,
    "a standing grant approves calls without asking; one that outlives a year should be given again, knowingly")
MAX_GRANT_WHERE = 20
"""``--where`` conditions of one grant."""
MAX_GRANT_VALUE_BYTES = 2_048
"""One ``--where`` value: an argument compared exactly, not a document."""
MAX_EXEMPT_TOOLS = 50
"""``approval_exempt_tools`` of one skill: each must be one of its tools, so a skill with more is unusual."""


MAX_NAME_LENGTH = 200
"""Characters of a skill's name (and of a skill named in ``context_from``)."""
