"""An MCP server that publishes skills (the MCP Skills extension) as a source: ``mcp:SERVER[/PATH]``, each file
checked against its digest, the whole held to the install's limits before a file is read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from adapters.installer.records import InstallLimits, RefusedSkill
from adapters.installer.staging import remove_tree
from adapters.mcp_skills import (
    EXTENSION_ID,
    AnswerCap,
    SkillEntry,
    SkillExchangeError,
    download,
    list_entries,
    select,
    skill_path,
    uri_parts,
)
from skills.errors import InstallRefusedError, ToolServerError
from skills.spec.limits import describe
from skills.spec.mcpservers import McpServerConfig


@dataclass
class Fetched:
    uris: dict[str, str] = field(default_factory=dict)
    """Each fetched skill's SKILL.md URI on the server, by name."""
    refused: list[RefusedSkill] = field(default_factory=list)
    """Skills that could not be fetched as the extension says (a file off its digest, no manifest...)."""


def mcp_source(source: str, path: str | None, ref: str | None,
                servers: Mapping[str, McpServerConfig]) -> tuple[str, str | None]:
    """``mcp:SERVER[/PATH]``: the server's name (an entry of the MCP config) and the skill path, if any."""
    name, _, inside = source[len("mcp:"):].partition("/")
    if ref is not None:
        raise InstallRefusedError([f"{source}: --ref is for git repositories, not MCP servers"])
    if path is not None and inside:
        raise InstallRefusedError([f"{source}: give the path once, in the source (mcp:SERVER/PATH) or as --path"])
    if not name:
        raise InstallRefusedError([f"{source}: name a server of the MCP config: mcp:SERVER[/PATH]"])
    if name not in servers:
        known = ", ".join(sorted(servers)) or "none"
        raise InstallRefusedError([f"{source}: no server '{name}' in the MCP config (SKILLS_MCP_CONFIG); "
                                   f"it has: {known}"])
    return name, (inside.strip("/") or path or None)


def fetch_from_server(name: str, config: McpServerConfig, path: str | None, target: Path,
                       limits: InstallLimits, timeout: float) -> Fetched:
    """The server's skills (those under ``path``) written under ``target/<name>/``, each file checked
    against its digest; a skill that fails is refused by name and leaves nothing behind."""
    from mcp.client import advertise

    from adapters.mcp.session import one_off_client

    answers = AnswerCap()

    async def fetch() -> Fetched:
        fetched = Fetched()
        async with one_off_client(name, config, timeout=timeout, extensions=[advertise(EXTENSION_ID, {})],
                                  stdio=answers.stdio_client) as client:
            async with asyncio.timeout(timeout):
                entries = await list_entries(client)
            chosen = select(entries, path)
            if not chosen:
                paths = sorted("/".join(skill_path(e)) for e in entries if _has_path(e))
                where = f" under '{path}'" if path else ""
                raise InstallRefusedError([f"mcp:{name} publishes no skill{where}" + (
                    f"; it publishes {', '.join(paths[:10])}" + (f" and {len(paths) - 10} more" if len(paths) > 10
                                                                  else "") if paths else "")])
            _refuse_over_limits(name, chosen, limits)
            names: dict[str, list[str]] = {}
            for entry in chosen:
                names.setdefault(str(entry.frontmatter.get("name")), []).append(entry.uri)
            budget = [limits.max_total_bytes]
            for entry in chosen:
                label = str(entry.frontmatter.get("name") or entry.uri)
                if len(names.get(label, ())) > 1:
                    fetched.refused.append(RefusedSkill(name=label, folder=entry.uri, reasons=[
                        f"the server publishes {len(names[label])} skills named '{label}' "
                        f"({', '.join(names[label])}): install one by its path"]))
                    continue
                try:
                    async with asyncio.timeout(timeout):
                        skill = await download(client, entry, target, max_file_bytes=limits.max_file_bytes,
                                               budget=budget, answers=answers)
                except SkillExchangeError as exc:
                    if _has_path(entry):
                        remove_tree(target / skill_path(entry)[-1])  # what it wrote, if anything
                    fetched.refused.append(RefusedSkill(name=label, folder=entry.uri, reasons=[str(exc)]))
                    continue
                fetched.uris[skill.name] = skill.uri
        return fetched

    target.mkdir(parents=True, exist_ok=True)
    try:
        return asyncio.run(fetch())
    except (SkillExchangeError, ToolServerError) as exc:
        raise InstallRefusedError([f"mcp:{name}: {exc}"]) from None
    except TimeoutError:
        raise InstallRefusedError([f"mcp:{name}: no answer within {timeout:g} s"]) from None


def _refuse_over_limits(server: str, chosen: list[SkillEntry], limits: InstallLimits) -> None:
    """The whole install refused, before a file is read, when the manifests of the chosen skills add up
    to more entries or bytes than one install may write: the bound an archive's index is held to."""
    files = size = 0
    folders: set[tuple[str, ...]] = set()
    for entry in chosen:
        where = skill_path(entry) if _has_path(entry) else (entry.uri,)
        folders.add(where)
        if entry.resources == "dynamic":
            continue
        for resource in entry.resources:
            files += 1
            size += resource.size
            try:
                parts = uri_parts(resource.uri)
            except SkillExchangeError:
                continue  # refused with its skill, later
            folders.update(parts[:end] for end in range(len(where) + 1, len(parts)))
    entries = files + len(folders)
    fewer = f"install fewer at a time (mcp:{server}/PATH)"
    if entries > limits.max_files:
        raise InstallRefusedError([f"mcp:{server}: the chosen skills hold {entries:,} entries ({files:,} files "
                                   f"and {len(folders):,} folders); one install may write at most "
                                   f"{limits.max_files:,}: {fewer}"])
    if size > limits.max_total_bytes:
        raise InstallRefusedError([f"mcp:{server}: the chosen skills declare {size:,} bytes; one install may "
                                   f"write at most {describe(limits.max_total_bytes)}: {fewer}"])


def _has_path(entry: SkillEntry) -> bool:
    try:
        skill_path(entry)
    except SkillExchangeError:
        return False
    return True
