"""`skills install|uninstall`, and `skills list --files`: SKILL.md skills in the user folder.

    skills install SOURCE [--path P] [--ref R] [--force] [--all-or-nothing] [--trust] [--json]
                                  a folder, an archive, a git repository, or mcp:SERVER[/PATH]
    skills uninstall NAME [--json]                                   remove a skill from the user folder
    skills list --files [--json]                                     every file skill, and where it came from

They work on this machine's folders (the `SKILLS_*` settings), like `skills validate`; the code is
in `adapters/installer/`. A worker reads its own folders: the next sync registers an installed skill
that carries a schedule (`skills sync` does it now), when the worker shares this user folder.

`install` lists every command, URL and script an installed skill brings: they run only once the owner
trusts them. On a terminal it asks (y/N); `--trust` trusts them without asking; otherwise (no terminal,
or no) the skill is installed untrusted, and `skills trust NAME` trusts it later. Trusting goes through
the worker (the ``TrustSkill`` workflow), which pins what its own folders hold.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from adapters.installer import InstalledSkill, describe_record, install, read_record, uninstall
from adapters.skill_folders import discover, executable_parts, load_skill_file
from skills.display import shown
from skills.errors import InstallRefusedError, McpConfigError, SkillsError
from skills.skillmd.trust import ExecutableParts
from starter import print_failure
from starter.command import current, data_command
from starter.files_cli import trust_line, with_worker, worker_trust
from starter.output import fields, print_json, table


@click.command("install", short_help="Install SKILL.md skills into the user folder.")
@click.argument("source")
@click.option("--path", "subpath", metavar="P", help="The skill (or folder of skills) inside the source.")
@click.option("--ref", metavar="R", help="Git branch, tag or commit (the default branch otherwise).")
@click.option("--force", is_flag=True, help="Replace an installed skill of the same name.")
@click.option("--all-or-nothing", is_flag=True,
              help="Install nothing unless every skill of the source passes (by default the others are installed).")
@click.option("--trust", "trust_now", is_flag=True,
              help="Trust the commands, URLs and scripts the skills bring (through the worker), without asking.")
@data_command
def install_command(source: str, subpath: str | None, ref: str | None, force: bool, all_or_nothing: bool,
                    trust_now: bool) -> int:
    """Install the skill (or folder of skills) at SOURCE into the user folder: a local folder, a
    .tar/.tar.gz/.tgz/.zip archive, a git repository URL, or mcp:SERVER[/PATH], the skills an MCP server
    of the MCP config publishes (the MCP Skills extension; every file checked against its digest). Everything is checked first (paths, links,
    sizes: any problem there refuses the whole source; then each skill against the Agent Skills spec as
    `skills validate` checks it, its dependencies and name clashes). Every skill that passes is installed,
    the others are named with their reasons (exit 1); with --all-or-nothing, nothing is installed unless
    all pass. Hidden folders (`.curated/`) are left out unless --path points at them, and said so.
    Nothing from the source is run.

    Everything a skill would make the engine do is listed (the tools it calls with their arguments, what
    it reads, which approvals it skips, every command, URL and script): it runs only once trusted. On a terminal
    you are asked; with --trust they are trusted at once; otherwise the skill is installed untrusted
    (`skills trust NAME` later)."""
    options = current()
    try:
        settings = options.settings()
        servers = _mcp_servers(settings.mcp_config) if source.lower().startswith("mcp:") else None
        result = install(source, folders=settings.skill_folders(), path=subpath, ref=ref, force=force,
                         all_or_nothing=all_or_nothing, mcp_servers=servers)
    except McpConfigError as exc:
        return print_failure(options.json, "refused", [{"field": "mcp_config", "message": str(exc)}])
    except InstallRefusedError as exc:
        return print_failure(options.json, "refused", [{"field": "", "message": r} for r in exc.reasons])
    parts = {skill.name: _parts(skill) for skill in result.installed}
    executable = [name for name, found in parts.items() if found.executable]
    if not options.json:
        for skill in result.installed:
            verb = "replaced" if skill.replaced else "installed"
            print(f"{verb} {skill.name} in {skill.path}")
            for line in [*skill.notes, *(f"warning: {w}" for w in skill.warnings)]:
                print(f"  {shown(line)}")  # notes quote the source's own names
            if skill.scheduled:
                paused = ", paused until you trust it" if parts[skill.name].executable else ""
                print(f"  it carries a schedule: the next sync registers it{paused} (`skills sync` does it now)")
            if parts[skill.name].executable:
                print("  it runs and reaches, once you trust it:")
                for line in parts[skill.name].lines():
                    print(f"    {line}")
        print(f"from {describe_record(result.record)}")
        for refused in result.refused:
            print(f"refused {shown(refused.label)}" + (f" ({shown(refused.folder)})" if refused.name and
                                                      refused.folder not in (refused.name, "SKILL.md") else ""),
                  file=sys.stderr)
            for reason in refused.reasons:
                print(f"  {shown(reason)}", file=sys.stderr)
        for line in result.skipped:
            print(f"left out {shown(line)}")
        if result.refused:
            print(f"{len(result.installed)} installed, {len(result.refused)} refused "
                  "(--all-or-nothing installs none unless all pass)", file=sys.stderr)
    asked = bool(executable) and not trust_now and not options.json and sys.stdin.isatty()
    if asked:
        trust_now = click.confirm(f"Trust what {', '.join(executable)} run{'s' * (len(executable) == 1)} and "
                                  f"reach{'es' * (len(executable) == 1)}, as listed above?", default=False)
    trusted, failed = _trust(executable, parts) if trust_now and executable else ({}, "")
    if options.json:
        print_json({"ok": not failed and not result.refused, **result.model_dump(mode="json"),
                    "executable": {name: found.model_dump(mode="json") for name, found in parts.items()},
                    "trusted": sorted(trusted), **({"trust_error": failed} if failed else {})})
        return int(bool(failed or result.refused))
    for name in executable:
        if name in trusted:
            print(f"trusted {name}: its toolsets and scripts run, and what it reaches (until any of it changes)")
        else:
            print(f"{name} is installed untrusted: its instructions work; what it runs and reaches (above) waits, "
                  f"its schedule paused, until `skills trust {name}`" + (f" (not trusted: {failed})" if failed else ""))
    return int(bool(failed or result.refused))


def _mcp_servers(path: Path | None) -> dict[str, Any]:
    """The servers of the MCP config (``SKILLS_MCP_CONFIG``), for an ``mcp:SERVER`` source."""
    from adapters.mcp.config import load_mcp_config

    return load_mcp_config(path, defaults={})


def _parts(skill: InstalledSkill) -> ExecutableParts:
    found, _ = load_skill_file(Path(skill.path) / "SKILL.md", "user")
    return executable_parts(found) if found is not None else ExecutableParts()


def _trust(names: list[str], parts: dict[str, ExecutableParts]) -> tuple[dict[str, Any], str]:
    """Trust each of ``names`` through the worker, pinned to what was listed; (trusted, why not all)."""
    from client.trust import trust

    async def work(skills: Any) -> dict[str, Any]:
        return {name: await trust(skills, name, expected_digest=parts[name].digest) for name in names}

    try:
        return with_worker(work), ""
    except (SkillsError, OSError, RuntimeError) as e:
        return {}, str(e)


@click.command("uninstall", short_help="Remove a skill from the user folder.")
@click.argument("name")
@data_command
def uninstall_command(name: str) -> int:
    """Remove the skill NAME from the user folder. Bundled and project skills are refused, with the reason."""
    options = current()
    try:
        result = uninstall(name, folders=options.settings().skill_folders())
    except InstallRefusedError as exc:
        return print_failure(options.json, "refused", [{"field": "name", "message": r} for r in exc.reasons])
    if options.json:
        print_json({"ok": True, **result.model_dump(mode="json")})
        return 0
    print(f"removed {result.name} ({result.path})")
    if result.scheduled:
        print("  it carried a schedule: the next sync disables its stored skill (`skills sync` does it now)")
    if result.revealed:
        print(f"  the {result.revealed} skill of that name is in effect again")
    return 0


def list_files() -> int:
    """`skills list --files`: every SKILL.md skill of this machine's folders, its source and its origin."""
    options = current()
    catalog = discover(**options.settings().skill_folders())
    if catalog.disabled:
        catalog = discover(**options.settings().skill_folders(), enable=catalog.disabled)
    disabled = set(discover(**options.settings().skill_folders()).disabled)
    parts = {name: executable_parts(skill) for name, skill in catalog.skills.items()}
    # One question to the worker for every skill whose trust is its to say.
    asked = [name for name, skill in catalog.skills.items() if parts[name].executable and skill.source != "bundled"]
    known = worker_trust(asked)
    rows = []
    for skill in catalog.skills.values():
        record = read_record(skill.folder) if skill.source == "user" else None
        rows.append({
            "name": skill.name, "source": skill.source, "path": str(skill.folder),
            "enabled": skill.name not in disabled, "scheduled": bool(skill.manifest.metadata.trigger_config),
            "installed_from": record.model_dump(mode="json") if record else None,
            "trust": trust_line(skill, parts[skill.name], known),
        })
    shadowed = [{"name": s.name, "source": s.source, "path": str(s.path.parent), "shadowed_by": str(s.winner_path.parent)}
                for s in catalog.shadowed]
    if options.json:
        print_json({"skills": rows, "shadowed": shadowed})
        return 0
    table(["NAME", "SOURCE", "TRUST", "FROM", "PATH"],
          [[r["name"], r["source"] + ("" if r["enabled"] else " (disabled)"), _short_trust(r["trust"]),
            describe_record(read_record(catalog.skills[r["name"]].folder)) if r["installed_from"] else "-",
            r["path"]] for r in rows],
          cut={"FROM": 60})
    if isinstance(known, str) and asked:
        print(f"(trust unknown: the worker's trust could not be read: {known})", file=sys.stderr)
    if shadowed:
        fields([("shadowed", f"{s['name']}: {s['path']} ({s['source']}), by {s['shadowed_by']}") for s in shadowed])
    return 0


def _short_trust(line: str) -> str:
    """The state alone, for a table cell: ``untrusted (changed since trusted)``, ``trusted``, ``-``."""
    if line.startswith("not needed"):
        return "-"
    return line.split(":", 1)[0]


COMMANDS = (install_command, uninstall_command)
