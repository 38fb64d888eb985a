"""`skills validate|match|prompt|show|sync`: the command line of SKILL.md skills.

    skills validate PATH... [--strict] [--json]   check skill folders, SKILL.md files or folders of skills
    skills match "message" [--json] [--limit N]   which skills a message brings in, and why
    skills prompt "message" [--json]              the disclosure block an LLM would get for it
    skills show NAME [--json]                     a skill's frontmatter, body and resources
    skills sync [--json] [--dry-run]              sync file skills now (on the worker, through Temporal)
    skills trust NAME [--json]                    let a skill's toolsets and scripts run, as they are now
    skills untrust NAME [--json]                  forget that trust: they no longer run

validate, match, prompt and show work on this machine's folders, like a linter: the
bundled folder, the user folder and the project folder (`.agents/skills` under the
working directory), from the same `SKILLS_*` settings the worker reads. sync runs
the `SyncSkillFiles` workflow, which reads the worker's folders; trust and untrust run the
`TrustSkill` workflow, which records (or forgets) the digest of the skill's executable parts as
the worker's folders hold them (docs/skill-files.md, "Trust"). `show` asks the worker for the
trust state of a skill that has executable parts (it says so when no worker answers).

Exit status: 0 when all is well, 1 on an error (a refused file, an unknown skill, a
failed sync), 2 on a usage error. `python -m starter.files_cli` runs these commands alone.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.table import Table
from rich.text import Text

from adapters.semantic import catalog_meaning
from adapters.skill_files import collection
from adapters.skill_folders import FOLDERS, discover, executable_parts, load_skill_file, validate_path
from skills.display import shown
from skills.skillmd import (
    Catalog,
    Problem,
    SkillFile,
    SkillFileError,
    dependency_problems,
    disclose,
    has_errors,
    with_dependencies,
)
from skills.skillmd.scripts import declared_scripts
from skills.skillmd.trust import ExecutableParts, TrustState
from starter import exit_process, print_failure
from starter.command import (
    CONTEXT_SETTINGS,
    OrderedGroup,
    current,
    data_command,
    prepare_process,
    run_command,
)
from starter.output import fields, print_json, show
from starter.output import table as _table

T = TypeVar("T")

SEVERITY_STYLES = {"ok": "green", "error": "red", "warning": "yellow"}


# --- validate -----------------------------------------------------------------------------


@click.command("validate", short_help="Check SKILL.md files against the Agent Skills spec.")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--strict", is_flag=True, help="Fail on warnings too.")
@data_command
def validate(paths: tuple[str, ...], strict: bool) -> int:
    """Check SKILL.md files against the Agent Skills spec: a skill folder, a SKILL.md, or a folder
    of skills. Exit 1 on any error (with --strict, on warnings too)."""
    found = [_skill_paths(Path(given)) for given in paths]
    checked = _with_dependency_problems([(path, validate_path(path)) for skills, _ in found for path in skills])
    left_out = [line for _, skipped in found for line in skipped]
    failed = any(has_errors(problems, strict=strict) for _, problems in checked)
    if current().json:
        print_json({
            "ok": not failed,
            "files": [{"path": str(path), "ok": not has_errors(problems, strict=strict),
                       "problems": [p.model_dump(mode="json") for p in problems]} for path, problems in checked],
            "errors": _count(checked, "error"),
            "warnings": _count(checked, "warning"),
            "left_out": left_out,
        })
        return int(failed)
    lines = Table.grid(padding=(0, 1, 0, 0))
    lines.add_column(min_width=8, no_wrap=True)
    lines.add_column()
    for path, problems in checked:
        if not problems:
            lines.add_row(Text("ok", style=SEVERITY_STYLES["ok"]), Text(str(path)))
        for problem in problems:
            where = f" [{problem.field}]" if problem.field else ""
            lines.add_row(Text(problem.severity, style=SEVERITY_STYLES.get(problem.severity, "")),
                          Text(f"{problem.path or path}: {problem.message}{where}"))
    show(lines)
    for line in left_out:
        print(f"left out {shown(line)}")
    errors, warnings = _count(checked, "error"), _count(checked, "warning")
    print(f"\n{len(checked)} checked, {errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}")
    return int(failed)


def _skill_paths(path: Path) -> tuple[list[Path], list[str]]:
    """The path itself, or each skill folder in it when it is a folder of skills (a source folder); and
    the sub-folders left out, with why and how to check them."""
    if not path.is_dir():
        return [path], []
    found = collection(path)
    skipped = [f"{s.folder}/: {s.why}" + (f"; to check {'it' if s.holds == 1 else 'them'}: skills validate {s.folder}"
                                          if s.holds else "") for s in found.skipped]
    return (found.skills or [path]), (skipped if found.skills or any(s.holds for s in found.skipped) else [])


def _with_dependency_problems(checked: list[tuple[Path, list[Problem]]]) -> list[tuple[Path, list[Problem]]]:
    """Each checked skill's missing dependencies and cycles, as errors: the skills it may depend on are
    the ones checked together and those of this machine's folders (the checked ones win)."""
    loaded: dict[Path, SkillFile] = {}
    for path, _ in checked:
        skill_md = path / "SKILL.md" if path.is_dir() else path
        if skill_md.name == "SKILL.md" and skill_md.is_file():
            skill, _problems = load_skill_file(skill_md, "project")
            if skill is not None:
                loaded[path] = skill
    if not any(skill.manifest.depends for skill in loaded.values()):
        # Nothing to resolve: the folders are not read at all.
        return checked
    catalog = _catalog()
    if catalog.disabled:
        catalog = _catalog(enable=catalog.disabled)
    graph = {**catalog.dependencies, **{s.name: list(s.manifest.depends) for s in loaded.values()}}
    found = dependency_problems([s.name for s in loaded.values()], graph)
    result = []
    for path, problems in checked:
        skill = loaded.get(path)
        extra = [p.at(skill.path) for p in found.get(skill.name, [])] if skill is not None else []
        result.append((path, [*problems, *extra]))
    return result


def _count(checked: list[tuple[Path, list[Problem]]], severity: str) -> int:
    return sum(1 for _, problems in checked for p in problems if p.severity == severity)


# --- match, prompt ------------------------------------------------------------------------


LIMIT = click.option("--limit", type=click.IntRange(min=1), default=3, show_default=True,
                     help="At most this many skills.")


@click.command("match", short_help="Which SKILL.md skills a message may need, and why.")
@click.argument("message")
@LIMIT
@click.option("--sure", "only_sure", is_flag=True,
              help="Only the skills the matcher is sure of (for scripts): none when a model should choose.")
@data_command
def match(message: str, limit: int, only_sure: bool) -> int:
    """The candidate SKILL.md skills for a message, ranked, with the reasons, and whether the first is sure
    (used with no one asked) or the candidates are for a model to choose among, "none" allowed."""
    catalog = _catalog(matching=True)
    matches = catalog.index.match(message, limit=limit)
    if only_sure:
        matches = [m for m in matches if m.sure]
    if current().json:
        print_json([{**m.model_dump(mode="json"), "source": catalog.skills[m.name].source,
                      "path": str(catalog.skills[m.name].path)} for m in matches])
        return 0
    _warn_about(catalog)
    if not matches:
        print(f"no skill {'is sure' if only_sure else 'matches'} (of {len(catalog.skills)})")
    elif not matches[0].sure:
        print(f"not sure: {len(matches)} candidate{'s' * (len(matches) != 1)} for a model to choose among, or none")
    for rank, found in enumerate(matches, 1):
        skill = catalog.skills[found.name]
        sure = "sure; " if found.sure else ""
        print(f"{rank}. {found.name}  ({sure}score {found.score:.2f}; {skill.source}, priority {found.priority})")
        for reason in found.reasons:
            print(f"     {reason}")
    return 0


@click.command("prompt", short_help="The skills block an LLM would get for a message.")
@click.argument("message")
@LIMIT
@data_command
def prompt(message: str, limit: int) -> int:
    """The disclosure block an LLM would get for a message (the skills' instructions, at most --limit)."""
    catalog = _catalog(matching=True)
    disclosure = disclose(message, catalog, FOLDERS, limit=limit)
    if current().json:
        print_json(disclosure.model_dump(mode="json"))
        return 0
    _warn_about(catalog)
    print(f"(tier {disclosure.tier})", file=sys.stderr)
    if disclosure.text:
        print(disclosure.text)
    return 0


# --- show ---------------------------------------------------------------------------------


@click.command("show", short_help="One SKILL.md skill: frontmatter, body and resources.")
@click.argument("name")
@data_command
def show_skill(name: str) -> int:
    """One SKILL.md skill: frontmatter, body and resources."""
    # Enabled by name, so a skill with default_enabled: false can be shown too.
    catalog = _catalog(enable=[name])
    skill = catalog.get(name)
    if skill is None:
        return _not_found(name, catalog)
    try:
        body = FOLDERS.read_body(skill)
    except SkillFileError as exc:
        body = f"(body unavailable: {exc})"
    resources = FOLDERS.list_resources(skill)
    shadowed = [s for s in catalog.shadowed if s.name == skill.name]
    problems = [p for p in catalog.problems if p.path == skill.path]
    brings = with_dependencies([skill.name], catalog)[1:]
    parts = executable_parts(skill)
    trust = trust_line(skill, parts)
    if current().json:
        print_json({
            "name": skill.name, "source": skill.source, "path": str(skill.path),
            "modified": skill.mtime.isoformat(),
            "frontmatter": skill.manifest.model_dump(mode="json", by_alias=True, exclude_defaults=True),
            "body": body,
            "resources": [r.model_dump(mode="json") for r in resources],
            "depends": [{"name": dep, "source": catalog.skills[dep].source if dep in catalog.skills else None,
                         "path": str(catalog.skills[dep].path) if dep in catalog.skills else None}
                        for dep in skill.manifest.depends],
            "brings": brings,
            "executable": parts.model_dump(mode="json"),
            "trust": trust,
            "shadows": [{"path": str(s.path), "source": s.source} for s in shadowed],
            "problems": [p.model_dump(mode="json") for p in problems],
        })
        return 0
    rows = [*_summary(skill, catalog), ("trust", trust),
            *(("runs", line) for line in parts.lines()),
            *([("brings along", ", ".join(_brought(catalog.skills[name]) for name in brings))] if brings else []),
            *(("shadows", f"{s.path} ({s.source})") for s in shadowed),
            *(("problem", f"{p.severity}: {p.message}") for p in problems)]
    if not resources:
        rows.append(("resources", "-"))
    fields(rows)
    if resources:
        print("resources")
        for r in resources:
            print(f"  {r.path}  ({r.kind}, {r.size} bytes)")
    print("\n" + body)
    return 0


def _summary(skill: SkillFile, catalog: Catalog) -> list[tuple[str, str]]:
    m = skill.manifest
    meta = m.metadata
    rows = [("name", m.name), ("source", f"{skill.source}  {skill.path}"), ("description", m.description),
            ("brief", m.brief)]
    optional: list[tuple[str, Any]] = [
        ("version", m.version), ("license", m.license), ("compatibility", m.compatibility),
        ("allowed tools", ", ".join(m.allowed_tools)), ("keywords", ", ".join(m.keywords)),
        ("verbs", ", ".join(m.triggers.verbs)), ("patterns", "  ".join(p.pattern for p in m.triggers.patterns)),
        ("priority", meta.priority or None), ("depends", ", ".join(_dependency(dep, catalog) for dep in m.depends)),
        ("toolsets", ", ".join(f"{name} ({server.transport})" for name, server in m.toolsets.items())),
        ("scripts", ", ".join(_script_names(skill))),
        ("required tools", ", ".join(meta.required_tools)),
        ("schedule", json.dumps(meta.trigger_config) if meta.trigger_config else None),
        ("plan", "; ".join(f"{s.tool_name} {json.dumps(s.parameters, ensure_ascii=False)}"
                           for s in meta.execution_plan or [])),
        ("max steps", meta.max_steps), ("default enabled", None if m.default_enabled else "false"),
    ]
    return rows + [(key, str(value)) for key, value in optional if value]


def _script_names(skill: SkillFile) -> list[str]:
    return [script.name for script in declared_scripts(list(skill.manifest.scripts))[0]]


def _brought(skill: SkillFile) -> str:
    """A skill brought along, with the tools it brings to an Agent-tier run or chat turn."""
    parts = [f"{label}: {', '.join(names)}" for label, names in (
        ("toolsets", list(skill.manifest.toolsets)), ("scripts", _script_names(skill))) if names]
    return f"{skill.name} ({'; '.join(parts)})" if parts else skill.name


def _dependency(name: str, catalog: Catalog) -> str:
    found = catalog.get(name)
    return f"{name} ({found.source})" if found is not None else f"{name} (missing)"


def _not_found(name: str, catalog: Catalog) -> int:
    import difflib

    close = difflib.get_close_matches(name, [*catalog.skills, *catalog.disabled], n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return print_failure(current().json, "not found", [{"field": "name", "message": f"no skill named '{name}'{hint}"}])


# --- sync ---------------------------------------------------------------------------------


@click.command("sync", short_help="Sync the SKILL.md skills that carry a schedule, now.")
@click.option("--dry-run", is_flag=True, help="Only say what would change.")
@data_command
def sync(dry_run: bool) -> int:
    """Sync the skills of SKILL.md files that carry a schedule, now (on the worker, through Temporal).
    Exit 1 when a file was refused or a change failed."""
    # Imported here: the local commands above must not need (or wait for) a Temporal client.
    from temporalio.client import WorkflowFailureError

    from client import SkillsClient
    from client.files import sync_files
    from skills.errors import SkillsError

    options = current()
    prepare_process(options.settings())

    async def run() -> Any:
        skills = await SkillsClient.connect(task_queue=options.queue, address=options.address,
                                            namespace=options.namespace, by="sync")
        return await sync_files(skills, dry_run=dry_run)

    try:
        result = asyncio.run(run())
    except SkillsError as exc:
        return _sync_failed(str(exc))
    except WorkflowFailureError as exc:
        return _sync_failed(f"the sync did not finish ({exc.cause or exc}): is the worker running, "
                            "with SyncSkillFiles registered?")
    if options.json:
        print_json(result.model_dump(mode="json"))
        return int(bool(result.refused))
    rows: list[list[str]] = [[f"would {change.action}", change.name, change.reason] for change in result.planned]
    for verb, items in (("created", result.created), ("updated", result.updated), ("disabled", result.disabled)):
        for item in items:
            next_fire = f"; next fire {item.next_fire.astimezone().isoformat(timespec='seconds')}" \
                if item.next_fire else ""
            rows.append([verb, item.change.name, item.change.reason + next_fire])
    for refused in result.refused:
        rows.append(["refused", refused.path or refused.name, "; ".join(str(e) for e in refused.errors)])
    for note in result.shadowed:
        rows.append(["shadowed", "", note])
    rows.append(["unchanged", f"{len(result.unchanged)} file skill{'s' * (len(result.unchanged) != 1)}", ""])
    _table(["CHANGE", "SKILL", "WHY"], rows, styles={"CHANGE": {"refused": "red", "created": "green"}})
    return int(bool(result.refused))


def _sync_failed(message: str) -> int:
    return print_failure(current().json, "failed", [{"field": "", "message": message}])


# --- trust --------------------------------------------------------------------------------


@click.command("trust", short_help="Let a SKILL.md skill's toolsets and scripts run, as they are now.")
@click.argument("name")
@data_command
def trust_command(name: str) -> int:
    """Trust the executable parts of the skill NAME (its toolsets' commands and URLs, its scripts' bytes) as
    the worker's skill folders hold them now: they run from now on, until any of them changes. Review them
    first (`skills show NAME`). When this machine has the skill too, its copy must be the worker's."""
    return _change_trust(name, untrust=False)


@click.command("untrust", short_help="Forget the trust in a skill's toolsets and scripts.")
@click.argument("name")
@data_command
def untrust_command(name: str) -> int:
    """Forget the owner's trust in the skill NAME: its toolsets and scripts no longer run (its instructions
    still do)."""
    return _change_trust(name, untrust=True)


def _change_trust(name: str, *, untrust: bool) -> int:
    from client.trust import trust

    options = current()
    local = _catalog(enable=[name]).get(name)
    expected = executable_parts(local).digest if local is not None and not untrust else None
    state = with_worker(lambda skills: trust(skills, name, expected_digest=expected, untrust=untrust))
    if options.json:
        print_json({"ok": True, **state.model_dump(mode="json")})
        return 0
    if state.status == "not needed":
        print(f"{name} needs no trust: it runs nothing and reaches nothing by itself (no toolsets, no scripts, "
              "no schedule or event with something to call)")
    elif state.status == "bundled":
        print(f"{name} is a bundled skill: trusted without a record")
    elif untrust:
        print(f"untrusted {name}: its toolsets and scripts no longer run, nor its schedule "
              f"(`skills trust {name}` again to allow them)")
    else:
        print(f"trusted {name} ({state.parts.digest}):")
        for line in state.parts.lines():
            print(f"  {line}")
        print("  any change to these makes it untrusted again (its schedule paused)")
    return 0


def with_worker(work: Callable[[Any], Awaitable[T]], timeout: float | None = None) -> T:
    """``work(skills)`` with a client connected as the global options say, closed afterwards."""
    from client import SkillsClient

    options = current()
    prepare_process(options.settings())

    async def go() -> T:
        async with await SkillsClient.connect(task_queue=options.queue, address=options.address,
                                              namespace=options.namespace, by="cli") as skills:
            return await work(skills)

    return asyncio.run(asyncio.wait_for(go(), timeout))


TRUST_TIMEOUT = 10.0
"""How long a local command (show, list --files) waits for the worker's trust states before it says so."""


def worker_trust(names: list[str]) -> dict[str, TrustState] | str:
    """The worker's trust states of ``names``, or why they could not be read (no Temporal, no worker)."""
    from client.trust import trust_states
    from skills.errors import SkillsError

    if not names:
        return {}
    try:
        return with_worker(lambda skills: trust_states(skills, names), TRUST_TIMEOUT)
    except TimeoutError:
        return f"no worker answered within {TRUST_TIMEOUT:g} s"
    except (SkillsError, OSError, RuntimeError) as e:
        return str(e)


def trust_line(skill: SkillFile, parts: ExecutableParts, known: dict[str, TrustState] | str | None = None) -> str:
    """A skill's trust state as a person reads it; ``known``: the worker's states, if already read."""
    if not parts.executable:
        return "not needed (nothing to run)"
    if skill.source == "bundled":
        return "trusted (bundled)"
    states = known if known is not None else worker_trust([skill.name])
    if isinstance(states, str):
        return f"unknown: the worker's trust could not be read ({states})"
    state = states.get(skill.name)
    if state is None:
        return "unknown: the worker's folders have no skill of that name"
    line = state.describe()
    if state.runs and state.parts.digest != parts.digest:
        line += " (the worker's copy differs from this machine's)"
    return line if state.runs else f"{line}: `skills trust {skill.name}` lets it run"


# --- plumbing -----------------------------------------------------------------------------


def _catalog(enable: list[str] | None = None, *, matching: bool = False) -> Catalog:
    """The skills in the settings' folders; ``matching``: its index ranks by meaning too when
    ``SKILLS_MATCH_MEANING`` is on (the model is loaded only for the commands that match)."""
    settings = current().settings()
    semantic = catalog_meaning(settings) if matching else None
    return discover(**settings.skill_folders(), enable=enable or (), semantic=semantic)


def _warn_about(catalog: Catalog) -> None:
    """Loading problems, briefly, on stderr: the answer itself stays clean on stdout."""
    if catalog.problems:
        print(f"({len(catalog.problems)} loading problem(s): run `skills validate` on the skill folders)",
              file=sys.stderr)


COMMANDS = (validate, match, prompt, show_skill, sync, trust_command, untrust_command)
"""The file-skill commands, as ``skills`` adds them."""


@click.group(cls=OrderedGroup, context_settings=CONTEXT_SETTINGS)
@data_command
def files_cli() -> None:
    """The commands of SKILL.md skills: validate, match, prompt, show, sync, trust, untrust."""


for _command in COMMANDS:
    files_cli.add_command(_command)


def run(argv: list[str] | None = None) -> int:
    return run_command(files_cli, argv, "python -m starter.files_cli")


def main(argv: list[str] | None = None) -> None:
    exit_process(run(argv))


if __name__ == "__main__":
    main()
