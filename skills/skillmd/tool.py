"""The ``skill`` tool: the LLM loads a skill's instructions by name, or one of its files.

``skill_name``, whose JSON Schema ``enum`` is the skill names (the description lists the
skills as XML), and optionally ``file``, a path inside the skill's folder
(``references/schedules.md``): progressive disclosure's last tier, read when the model asks.
Unknown names, bad paths and unreadable files come back as error text for the LLM, never
as exceptions, so a conversation goes on.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable
from typing import Any

from skills.errors import SkillFileError
from skills.skillmd.disclosure import render_instructions, with_dependencies, xml_attribute, xml_text
from skills.skillmd.limits import DEFAULT_LIMITS, Limits
from skills.skillmd.manifest import SkillFile
from skills.skillmd.resources import SkillReader
from skills.skillmd.sources import Catalog

TOOL_NAME = "skill"
_NAMES_IN_ERROR = 20
FILE_DESCRIPTION = "Read this file of the skill instead, e.g. 'references/x.md'"


def skill_file_tool(skills: Iterable[str] | None) -> dict[str, Any] | None:
    """The ``skill`` tool as a chat offers it beside instructions it already disclosed: short, the names
    as an ``enum`` and no listing (the system prompt has them), ``file`` to read more. ``None``: any skill
    (no ``enum``; a wrong name is answered with the names); an empty list: no tool."""
    names = sorted(skills) if skills is not None else None
    if names == []:
        return None
    return {"type": "function", "function": {
        "name": TOOL_NAME,
        "description": "Read a skill's instructions, or one of its files.",
        "parameters": {"type": "object", "properties": {
            "skill_name": {"type": "string", **({"enum": names} if names is not None else {})},
            "file": {"type": "string", "description": FILE_DESCRIPTION},
        }, "required": ["skill_name"], "additionalProperties": False},
    }}


def skill_tool_definition(skills: Iterable[SkillFile]) -> dict[str, Any] | None:
    """The OpenAI-style function tool, or ``None`` when there are no skills (an empty enum is invalid)."""
    skills = list(skills)
    if not skills:
        return None
    listing = "\n".join(
        f"<skill name={xml_attribute(s.name)}>{xml_text(s.manifest.description)}</skill>" for s in skills
    )
    return {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": (
                "Load a specialized skill: returns its full instructions, to follow for the task at hand.\n"
                f"<skills>\n{listing}\n</skills>"
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "skill_name": {
                        "type": "string",
                        "enum": [s.name for s in skills],
                        "description": "The name of the skill to load",
                    },
                    "file": {"type": "string", "description": FILE_DESCRIPTION},
                },
                "required": ["skill_name"],
                "additionalProperties": False,
            },
        },
    }


def run_skill_tool(
    catalog: Catalog, skill_name: str, reader: SkillReader, limits: Limits = DEFAULT_LIMITS, *,
    loaded: Collection[str] = (),
    file: str | None = None,
) -> str:
    """The tool's result: the skill's body (or its ``file``), or an error text that helps the LLM pick again.

    The skills it ``depends`` on follow its body, each in a ``<skill_instructions>`` block, once
    each; those named in ``loaded`` (already given in the conversation) are not repeated.
    Resources stay unread until asked for by ``file``: the bodies say which files to ask for.
    """
    skill = catalog.get(skill_name)
    if skill is None:
        return _not_found(skill_name, list(catalog.skills))
    if file:
        # Only the files progressive disclosure offers (references/, assets/...): not SKILL.md's
        # neighbours such as scripts or an installer's record, whatever path is asked for.
        known = [resource.path for resource in reader.list_resources(skill)]
        listed = ", ".join(known[:_NAMES_IN_ERROR]) or "none"
        path = file.strip().removeprefix("./")
        if path not in known:
            return f"Error: skill '{skill_name}' has no file '{file}'. Its files: {listed}."
        try:
            return reader.read_resource(skill, path, limits)
        except SkillFileError as exc:
            return f"Error reading '{file}' of skill '{skill_name}': {exc}. Its files: {listed}."
    try:
        body = reader.read_body(skill, limits)
    except SkillFileError as exc:
        return f"Error loading skill '{skill_name}': {exc}"
    dependencies = with_dependencies([skill_name], catalog, exclude=[n for n in loaded if n != skill_name])[1:]
    return "\n\n".join([body, *(render_instructions(catalog.skills[name], reader, limits) for name in dependencies)])


def _not_found(skill_name: str, names: list[str]) -> str:
    message = f"Error: Skill '{skill_name}' not found."
    close = difflib.get_close_matches(skill_name, names, n=1)
    if close:
        message += f" Did you mean '{close[0]}'?"
    if not names:
        return message + " No skills are available."
    shown = ", ".join(names[:_NAMES_IN_ERROR])
    more = f" and {len(names) - _NAMES_IN_ERROR} more" if len(names) > _NAMES_IN_ERROR else ""
    return f"{message} Available skills: {shown}{more}."
