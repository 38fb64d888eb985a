"""Progressive disclosure: what an LLM is told about skills for one message.

Tier 0, nothing: there are no skills.
Tier 1, a breadcrumb ``[N skills available]``: skills exist, but none fits the message.
Tier 2, the registry: names and whole descriptions as the ``<available_skills>`` block (the
block Agent Skills clients put in a system prompt; the spec's description says when to use the
skill, so none of it is cut), for every skill when the user asks what the assistant can do, and
always for skills that have no triggers. Within a token budget (``registry_tokens``): when the
skills would not fit, the ones the matcher scores highest for the message are listed and the
block says how many it left out.
Tier 3, the full instructions of the matched skills (and of the skills they depend on).

When the matcher is not sure of its first candidate (:func:`~skills.skillmd.matching.unsure`: no
declared trigger or name in the message, and words and meaning do not both put it clearly first),
none of their instructions is given: the candidates' names and descriptions are, as the
``<candidate_skills>`` block, within the registry's budget, and the model loads the one that fits
with the ``skill`` tool (or none). A wrong playbook followed is worse than one more tool call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from skills import linear
from skills.errors import SkillFileError
from skills.skillmd.depends import with_dependencies as dependency_order
from skills.skillmd.limits import DEFAULT_LIMITS, Limits
from skills.skillmd.manifest import SkillFile
from skills.skillmd.matching import DEFAULT_LIMIT, SkillMatch, unsure
from skills.skillmd.resources import SkillReader
from skills.skillmd.sources import Catalog

Tier = Literal[0, 1, 2, 3]

_ASKS_FOR_REGISTRY = linear.compile(
    r"\bwhat\s+(?:else\s+)?(?:can|could)\s+you\s+do\b"
    r"|\bwhat\s+are\s+you\s+(?:able|capable)\b"
    r"|\b(?:list|show|which|what)\b(?:\s+\w+){0,2}?\s+(?:skills|capabilities|abilities)\b"
    r"|\byour\s+(?:skills|capabilities|abilities)\b",
    linear.IGNORECASE,
)

_INSTRUCTIONS_TAG = "skill_instructions"

REGISTRY_TOKENS = 2_000
"""The registry's default token budget (``SKILLS_DISCLOSURE_TOKENS``)."""

CHARS_PER_TOKEN = 4
"""English text and XML tags run about four characters a token in the common tokenizers: an
estimate, used only to keep the registry within its budget."""

# Control characters XML 1.0 cannot carry even escaped; a stray one would make the whole block invalid.
_NOT_XML = linear.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


class Disclosure(BaseModel):
    """The block an LLM gets for one message, and how it was chosen."""

    model_config = ConfigDict(frozen=True)

    tier: Tier
    """The highest tier the block reaches."""
    text: str
    """What goes into the prompt (empty at tier 0)."""
    matches: list[SkillMatch]
    instructions: list[str]
    """Skills whose full instructions are in the block: the matches, then what they depend on."""
    listed: list[str]
    """Skills in the ``<available_skills>`` registry."""
    left_out: int = 0
    """Skills the registry had no room for within its token budget (the block says how many)."""
    candidates: list[str] = []
    """Close matches whose descriptions the block gives for the model to choose among with the
    ``skill`` tool (the matcher was unsure); their instructions are not in the block."""


def asks_for_registry(message: str) -> bool:
    """Whether the user asks what the assistant can do, or for the list of skills."""
    return _ASKS_FOR_REGISTRY.search(message) is not None


def disclose(
    message: str,
    catalog: Catalog,
    reader: SkillReader,
    *,
    limit: int = DEFAULT_LIMIT,
    recent_use: Mapping[str, datetime] | None = None,
    limits: Limits = DEFAULT_LIMITS,
    registry_tokens: int = REGISTRY_TOKENS,
) -> Disclosure:
    """The disclosure block for ``message``; bodies are read by ``reader`` now."""
    if not catalog.skills:
        return Disclosure(tier=0, text="", matches=[], instructions=[], listed=[])
    matches = catalog.index.match(message, limit=limit, recent_use=recent_use)
    close = [catalog.skills[m.name] for m in unsure(matches)]
    candidates, _ = _within(close, registry_tokens, lambda: {m.name: m.score for m in matches})
    instructions = [] if candidates else with_dependencies([m.name for m in matches if m.sure], catalog)
    # Only the skills without triggers, unless the whole registry is asked for: a scan of every
    # skill per message would cost more than the matching itself in a large catalog.
    registry = catalog.skills.values() if asks_for_registry(message) else catalog.untriggered
    chosen = {s.name for s in candidates}
    listed = [s for s in registry if s.name not in instructions and s.name not in chosen]
    offered = render_candidates(candidates) if candidates else ""
    listed, left_out = _within(listed, registry_tokens - -(-len(offered) // CHARS_PER_TOKEN),
                               lambda: catalog.index.scores(message))
    hidden = len(catalog.skills) - len(instructions) - len(candidates) - len(listed) - left_out
    parts: list[str] = []
    tier: Tier = 1
    if instructions:
        parts += [render_instructions(catalog.skills[name], reader, limits) for name in instructions]
        tier = 3
    if candidates:
        parts.append(offered)
        tier = max(tier, 2)
    if listed:
        parts.append(render_available_skills(listed))
        tier = max(tier, 2)
    if left_out:
        parts.append(f"[{left_out} more skills not listed: the list is kept within {registry_tokens:,} tokens; "
                     "ask for a skill by what it does to find it]")
    if hidden:
        parts.append(f"[{hidden} more skills available]" if parts else f"[{hidden} skills available]")
    return Disclosure(
        tier=tier,
        text="\n\n".join(parts),
        matches=matches,
        instructions=instructions,
        listed=[s.name for s in listed],
        left_out=left_out,
        candidates=[s.name for s in candidates],
    )


def _within(skills: list[SkillFile], budget: int, scores: Callable[[], Mapping[str, float]]
            ) -> tuple[list[SkillFile], int]:
    """The skills whose registry entries fit ``budget`` tokens, and how many were left out: all, in
    their order, when they fit; else the best scored for the message first (then by name)."""
    cost = {skill.name: -(-len(_entry(skill)) // CHARS_PER_TOKEN) for skill in skills}
    if sum(cost.values()) <= budget:
        return skills, 0
    scored = scores()
    ranked = sorted(skills, key=lambda s: (-scored.get(s.name, 0.0), s.name))
    kept: list[SkillFile] = []
    spent = 0
    for skill in ranked:
        if spent + cost[skill.name] <= budget:
            kept.append(skill)
            spent += cost[skill.name]
    return kept, len(skills) - len(kept)


def with_dependencies(names: Iterable[str], catalog: Catalog, *, exclude: Iterable[str] = ()) -> list[str]:
    """Each named skill followed by what it depends on (transitively), once each, unknown names left out;
    the names of ``exclude`` (already given) and what only they bring are left out too."""
    return dependency_order(names, catalog.dependencies, exclude=exclude)


def xml_text(text: str) -> str:
    """Text made safe as XML element content."""
    # xml.sax imports urllib.request, http.client and email with it: loaded when a skill is first disclosed.
    from xml.sax.saxutils import escape

    # A raw carriage return would come back as a newline (XML normalises line ends).
    return escape(_NOT_XML.sub("", text), {"\r": "&#13;"})


def xml_attribute(text: str) -> str:
    """Text as a quoted XML attribute value."""
    from xml.sax.saxutils import quoteattr

    return quoteattr(_NOT_XML.sub("", text))


def render_available_skills(skills: Iterable[SkillFile]) -> str:
    """The ``<available_skills>`` block: each skill's name and whole description, XML-escaped."""
    return "\n".join(["<available_skills>", *(_entry(skill) for skill in skills), "</available_skills>"])


def render_candidates(skills: Iterable[SkillFile]) -> str:
    """The ``<candidate_skills>`` block: close matches, for the model to choose among."""
    return "\n".join([
        "<candidate_skills>",
        "Each of these skills may fit the message, and matching could not tell which. If one does, load "
        "its instructions with the skill tool before you answer; if none does, answer without them.",
        *(_entry(skill) for skill in skills),
        "</candidate_skills>",
    ])


def _entry(skill: SkillFile) -> str:
    return (f"<skill>\n<name>{xml_text(skill.name)}</name>\n"
            f"<description>{xml_text(skill.manifest.brief)}</description>\n</skill>")


def render_instructions(skill: SkillFile, reader: SkillReader, limits: Limits = DEFAULT_LIMITS) -> str:
    """A skill's full instructions in a tag named for it."""
    try:
        body = reader.read_body(skill, limits)
    except SkillFileError as exc:
        body = f"(instructions unavailable: {exc})"
    # Markdown stays as written (escaping would garble code samples); only a closing tag is
    # neutralised, so a body cannot end its own block early.
    body = body.replace(f"</{_INSTRUCTIONS_TAG}", f"&lt;/{_INSTRUCTIONS_TAG}")
    return f"<{_INSTRUCTIONS_TAG} name={xml_attribute(skill.name)}>\n{body}\n</{_INSTRUCTIONS_TAG}>"
