"""`skills validate|match|prompt|show|sync`: the command line of SKILL.md skills.

    skills validate PATH... [--strict] [--json]   check skill folders, SKILL.md files or folders of skills
    skills match "message" [--json] [--limit N]   which skills a message brings in, and why
    skills prompt "message" [--json]              the disclosure block an LLM would get for it
    skills show NAME [--json]                     a skill's frontmatter, body and resources
    skills sync [--json] [--dry-run]              sync file skills now (on the worker, through Temporal)

validate, match, prompt and show work on this machine's folders, like a linter: the
bundled folder, the user folder and the project folder (`.agents/skills` under the
working directory), from the same `SKILLS_*` settings the worker reads. sync runs
the `SyncSkillFiles` workflow, which reads the worker's folders.

Exit status: 0 when all is well, 1 on an error (a refused file, an unknown skill, a
failed sync), 2 on a usage error. `python -m starter.files_cli` runs these commands alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from config.settings import Settings
from skills.skillmd import (
    Catalog,
    Problem,
    SkillFile,
    SkillFileError,
    disclose,
    discover,
    has_errors,
    list_resources,
    read_body,
    validate_path,
)
from starter import exit_process, print_failure

Handler = Callable[[argparse.Namespace], int]


# --- validate -----------------------------------------------------------------------------


def validate(args: argparse.Namespace) -> int:
    """Every problem of every file; non-zero on an error, or on a warning with --strict."""
    checked = [(path, validate_path(path)) for given in args.paths for path in _skill_paths(Path(given))]
    failed = any(has_errors(problems, strict=args.strict) for _, problems in checked)
    if args.json:
        _print_json({
            "ok": not failed,
            "files": [{"path": str(path), "ok": not has_errors(problems, strict=args.strict),
                       "problems": [p.model_dump(mode="json") for p in problems]} for path, problems in checked],
            "errors": _count(checked, "error"),
            "warnings": _count(checked, "warning"),
        })
        return int(failed)
    for path, problems in checked:
        if not problems:
            print(f"ok       {path}")
        for problem in problems:
            where = f" [{problem.field}]" if problem.field else ""
            print(f"{problem.severity:<8} {problem.path or path}: {problem.message}{where}")
    errors, warnings = _count(checked, "error"), _count(checked, "warning")
    print(f"\n{len(checked)} checked, {errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}")
    return int(failed)


def _skill_paths(path: Path) -> list[Path]:
    """The path itself, or each skill folder in it when it is a folder of skills (a source folder)."""
    if path.is_dir() and not (path / "SKILL.md").exists():
        children = sorted(child for child in path.iterdir() if (child / "SKILL.md").is_file())
        if children:
            return children
    return [path]


def _count(checked: list[tuple[Path, list[Problem]]], severity: str) -> int:
    return sum(1 for _, problems in checked for p in problems if p.severity == severity)


# --- match, prompt ------------------------------------------------------------------------


def match(args: argparse.Namespace) -> int:
    catalog = _catalog()
    matches = catalog.index.match(args.message, limit=args.limit)
    if args.json:
        _print_json([{**m.model_dump(mode="json"), "source": catalog.skills[m.name].source,
                      "path": str(catalog.skills[m.name].path)} for m in matches])
        return 0
    _warn_about(catalog)
    if not matches:
        print(f"no skill matches (of {len(catalog.skills)})")
    for rank, found in enumerate(matches, 1):
        skill = catalog.skills[found.name]
        print(f"{rank}. {found.name}  ({skill.source}, priority {found.priority})")
        for reason in found.reasons:
            print(f"     {reason}")
    return 0


def prompt(args: argparse.Namespace) -> int:
    catalog = _catalog()
    disclosure = disclose(args.message, catalog, limit=args.limit)
    if args.json:
        _print_json(disclosure.model_dump(mode="json"))
        return 0
    _warn_about(catalog)
    print(f"(tier {disclosure.tier})", file=sys.stderr)
    if disclosure.text:
        print(disclosure.text)
    return 0


# --- show ---------------------------------------------------------------------------------


def show(args: argparse.Namespace) -> int:
    # Enabled by name, so a skill with default_enabled: false can be shown too.
    catalog = _catalog(enable=[args.name])
    skill = catalog.get(args.name)
    if skill is None:
        return _not_found(args, catalog)
    try:
        body = read_body(skill)
    except SkillFileError as exc:
        body = f"(body unavailable: {exc})"
    resources = list_resources(skill)
    shadowed = [s for s in catalog.shadowed if s.name == skill.name]
    problems = [p for p in catalog.problems if p.path == skill.path]
    if args.json:
        _print_json({
            "name": skill.name, "source": skill.source, "path": str(skill.path),
            "modified": skill.mtime.isoformat(),
            "frontmatter": skill.manifest.model_dump(mode="json", by_alias=True, exclude_defaults=True),
            "body": body,
            "resources": [r.model_dump(mode="json") for r in resources],
            "shadows": [{"path": str(s.path), "source": s.source} for s in shadowed],
            "problems": [p.model_dump(mode="json") for p in problems],
        })
        return 0
    for key, value in _summary(skill):
        print(f"{key:<15} {value}")
    for s in shadowed:
        print(f"{'shadows':<15} {s.path} ({s.source})")
    for p in problems:
        print(f"{'problem':<15} {p.severity}: {p.message}")
    print("resources" if resources else "resources      -")
    for r in resources:
        print(f"  {r.path}  ({r.kind}, {r.size} bytes)")
    print("\n" + body)
    return 0


def _summary(skill: SkillFile) -> list[tuple[str, str]]:
    m = skill.manifest
    meta = m.metadata
    rows = [("name", m.name), ("source", f"{skill.source}  {skill.path}"), ("description", m.description),
            ("brief", m.brief)]
    optional: list[tuple[str, Any]] = [
        ("version", m.version), ("license", m.license), ("compatibility", m.compatibility),
        ("allowed tools", ", ".join(m.allowed_tools)), ("keywords", ", ".join(m.keywords)),
        ("verbs", ", ".join(m.triggers.verbs)), ("patterns", "  ".join(p.pattern for p in m.triggers.patterns)),
        ("priority", meta.priority or None), ("depends", ", ".join(m.depends)),
        ("required tools", ", ".join(meta.required_tools)),
        ("schedule", json.dumps(meta.trigger_config) if meta.trigger_config else None),
        ("plan", "; ".join(f"{s.tool_name} {json.dumps(s.parameters, ensure_ascii=False)}"
                           for s in meta.execution_plan or [])),
        ("max steps", meta.max_steps), ("default enabled", None if m.default_enabled else "false"),
    ]
    return rows + [(key, str(value)) for key, value in optional if value]


def _not_found(args: argparse.Namespace, catalog: Catalog) -> int:
    import difflib

    close = difflib.get_close_matches(args.name, [*catalog.skills, *catalog.disabled], n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return print_failure(args.json, "not found", [{"field": "name", "message": f"no skill named '{args.name}'{hint}"}])


# --- sync ---------------------------------------------------------------------------------


def sync(args: argparse.Namespace) -> int:
    """Run the sync workflow now; non-zero when a file was refused or a change failed."""
    # Imported here: the local commands above must not need (or wait for) a Temporal client.
    from temporalio.client import WorkflowFailureError

    from client import SkillsClient
    from client.files import sync_files
    from skills.errors import SkillsError

    async def run() -> Any:
        skills = await SkillsClient.connect(task_queue=_task_queue(args), address=getattr(args, "address", None),
                                            namespace=getattr(args, "namespace", None))
        return await sync_files(skills, dry_run=args.dry_run)

    try:
        result = asyncio.run(run())
    except SkillsError as exc:
        return _sync_failed(args, str(exc))
    except WorkflowFailureError as exc:
        return _sync_failed(args, f"the sync did not finish ({exc.cause or exc}): is the worker running, "
                                  "with SyncSkillFiles registered?")
    if args.json:
        _print_json(result.model_dump(mode="json"))
        return int(bool(result.refused))
    for change in result.planned:
        print(f"would {change.action:<8} {change.name:<28} {change.reason}")
    for verb, items in (("created", result.created), ("updated", result.updated), ("disabled", result.disabled)):
        for item in items:
            when = f"  next fire {item.next_fire.astimezone().isoformat(timespec='seconds')}" if item.next_fire else ""
            print(f"{verb:<9} {item.change.name:<28} {item.change.reason}{when}")
    for refused in result.refused:
        print(f"{'refused':<9} {refused.path or refused.name}")
        for error in refused.errors:
            print(f"            {error}")
    for note in result.shadowed:
        print(f"{'shadowed':<9} {note}")
    print(f"{'unchanged':<9} {len(result.unchanged)} file skill{'s' * (len(result.unchanged) != 1)}")
    return int(bool(result.refused))


def _sync_failed(args: argparse.Namespace, message: str) -> int:
    return print_failure(args.json, "failed", [{"field": "", "message": message}])


def _task_queue(args: argparse.Namespace) -> str:
    from config.settings import Settings

    return getattr(args, "task_queue", None) or Settings.from_env().task_queue


# --- plumbing -----------------------------------------------------------------------------


def _catalog(enable: list[str] | None = None) -> Catalog:
    return discover(**Settings.from_env().skill_folders(), enable=enable or ())


def _warn_about(catalog: Catalog) -> None:
    """Loading problems, briefly, on stderr: the answer itself stays clean on stdout."""
    if catalog.problems:
        print(f"({len(catalog.problems)} loading problem(s): run `skills validate` on the skill folders)",
              file=sys.stderr)


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


HANDLERS: dict[str, Handler] = {"validate": validate, "match": match, "prompt": prompt, "show": show, "sync": sync}


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Add the file-skill commands to the `skills` command's subparsers."""
    p = sub.add_parser("validate", help="check SKILL.md files against the Agent Skills specification")
    p.add_argument("paths", nargs="+", metavar="PATH", help="a skill folder, a SKILL.md, or a folder of skills")
    p.add_argument("--strict", action="store_true", help="fail on warnings too")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("match", help="which skills a message brings in, ranked, with the reasons")
    p.add_argument("message")
    p.add_argument("--limit", type=int, default=3, help="at most this many (default 3)")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("prompt", help="the skills block an LLM would get for a message")
    p.add_argument("message")
    p.add_argument("--limit", type=int, default=3, help="at most this many skills' instructions (default 3)")
    p.add_argument("--json", action="store_true", help="print JSON (tier, matches, text)")

    p = sub.add_parser("show", help="one skill file: frontmatter, body and resources")
    p.add_argument("name")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("sync", help="sync the skills of SKILL.md files that carry a schedule, now")
    p.add_argument("--dry-run", action="store_true", help="only say what would change")
    p.add_argument("--json", action="store_true", help="print JSON")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m starter.files_cli", description=__doc__.splitlines()[0])
    parser.add_argument("--address", help="Temporal address (default: TEMPORAL_ADDRESS or localhost:7233)")
    parser.add_argument("--namespace", help="Temporal namespace (default: TEMPORAL_NAMESPACE or default)")
    parser.add_argument("--task-queue", default=None, help="the worker's task queue (default: SKILLS_TASK_QUEUE)")
    add_parsers(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    return parser


def run(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return HANDLERS[args.command](args)


def main(argv: list[str] | None = None) -> None:
    exit_process(run(argv))


if __name__ == "__main__":
    main()
