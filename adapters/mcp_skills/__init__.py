"""The MCP Skills extension (SEP-2640, ``io.modelcontextprotocol/skills``): serving the engine's
SKILL.md skills, and fetching a server's skills to install them.

The wire, as the extension defines it (base protocol 2026-07-28):

- a server declares ``capabilities.extensions["io.modelcontextprotocol/skills"]``;
- ``skills/list`` (paginated) answers ``{"skills": [entry, ...], "nextCursor"?}`` and ``skills/get``
  (``{"uri"}``) answers ``{"skill": entry}``, an unknown URI an ``INVALID_PARAMS`` error;
- an entry is ``{"uri": "skill://<skill-path>/SKILL.md", "frontmatter": {...verbatim...},
  "resources": [{"uri", "digest": "sha256:<hex>", "size"}, ...] | "dynamic"}``: the last segment
  of the skill path is the skill's name, and every file of the skill, SKILL.md included, is listed
  with the digest and size of its bytes;
- every file is an ordinary resource, read with ``resources/read``.

Serving (:class:`Publisher`) reads the skills of this machine's folders (as ``skills list --files``
does) at every request, so a skill installed while the server runs is served at once. A skill's
files are those of its folder, walked without following a link out of it; hidden files (the
installer's ``.install.json`` among them) and ``__pycache__`` are not served. Serving reads bytes
and nothing else: a toolset's command or a script of a served skill is a file like any other, never
run. Fetching (:func:`download`, entry by entry) checks every entry and every byte against its digest before
anything is written; the installer then checks the skills as it checks any source.
"""

from adapters.mcp_skills.fetching import FetchedSkill, download, list_entries, select, skill_path
from adapters.mcp_skills.serving import Publisher, build_extension, skills_server
from adapters.mcp_skills.stdio import AnswerCap
from adapters.mcp_skills.wire import (
    EXTENSION_ID,
    MAX_BYTES,
    SkillEntry,
    SkillExchangeError,
    SkillResource,
    digest_of,
    skill_uri,
    uri_parts,
)

__all__ = [
    "EXTENSION_ID",
    "MAX_BYTES",
    "AnswerCap",
    "FetchedSkill",
    "Publisher",
    "SkillEntry",
    "SkillExchangeError",
    "SkillResource",
    "build_extension",
    "digest_of",
    "download",
    "list_entries",
    "select",
    "skill_path",
    "skill_uri",
    "skills_server",
    "uri_parts",
]
