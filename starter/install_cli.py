"""`skills install|uninstall`, and `skills list --files`: SKILL.md skills in the user folder.

    skills install SOURCE [--path P] [--ref R] [--force] [--json]   a folder, an archive or a git repository
    skills uninstall NAME [--json]                                   remove a skill from the user folder
    skills list --files [--json]                                     every file skill, and where it came from

They work on this machine's folders (the `SKILLS_*` settings), like `skills validate`; the code is
in `client/install.py`. A worker reads its own folders: the next sync registers an installed skill
that carries a schedule (`skills sync` does it now), when the worker shares this user folder.
"""

from __future__ import annotations

import click

from client.install import describe_record, install, read_record, uninstall
from skills.errors import InstallRefusedError
from skills.skillmd import discover
from starter import print_failure
from starter.command import current, data_command
from starter.output import fields, print_json, table


@click.command("install", short_help="Install SKILL.md skills into the user folder.")
@click.argument("source")
@click.option("--path", "subpath", metavar="P", help="The skill (or folder of skills) inside the source.")
@click.option("--ref", metavar="R", help="Git branch, tag or commit (the default branch otherwise).")
@click.option("--force", is_flag=True, help="Replace an installed skill of the same name.")
@data_command
def install_command(source: str, subpath: str | None, ref: str | None, force: bool) -> int:
    """Install the skill (or folder of skills) at SOURCE into the user folder: a local folder, a
    .tar/.tar.gz/.tgz/.zip archive, or a git repository URL. Everything is checked first (the Agent
    Skills spec as `skills validate` checks it, dependencies, paths, links, sizes, name clashes);
    nothing is written unless all of it passes, and nothing from the source is run."""
    options = current()
    try:
        result = install(source, folders=options.settings().skill_folders(), path=subpath, ref=ref, force=force)
    except InstallRefusedError as exc:
        return print_failure(options.json, "refused", [{"field": "", "message": r} for r in exc.reasons])
    if options.json:
        print_json({"ok": True, **result.model_dump(mode="json")})
        return 0
    for skill in result.installed:
        verb = "replaced" if skill.replaced else "installed"
        print(f"{verb} {skill.name} in {skill.path}")
        for line in [*skill.notes, *(f"warning: {w}" for w in skill.warnings)]:
            print(f"  {line}")
        if skill.scheduled:
            print("  it carries a schedule: the next sync registers it (`skills sync` does it now)")
    print(f"from {describe_record(result.record)}")
    return 0


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
    rows = []
    for skill in catalog.skills.values():
        record = read_record(skill.folder) if skill.source == "user" else None
        rows.append({
            "name": skill.name, "source": skill.source, "path": str(skill.folder),
            "enabled": skill.name not in disabled, "scheduled": bool(skill.manifest.metadata.trigger_config),
            "installed_from": record.model_dump(mode="json") if record else None,
        })
    shadowed = [{"name": s.name, "source": s.source, "path": str(s.path.parent), "shadowed_by": str(s.winner_path.parent)}
                for s in catalog.shadowed]
    if options.json:
        print_json({"skills": rows, "shadowed": shadowed})
        return 0
    table(["NAME", "SOURCE", "FROM", "PATH"],
          [[r["name"], r["source"] + ("" if r["enabled"] else " (disabled)"),
            describe_record(read_record(catalog.skills[r["name"]].folder)) if r["installed_from"] else "-",
            r["path"]] for r in rows],
          cut={"FROM": 60})
    if shadowed:
        fields([("shadowed", f"{s['name']}: {s['path']} ({s['source']}), by {s['shadowed_by']}") for s in shadowed])
    return 0


COMMANDS = (install_command, uninstall_command)
