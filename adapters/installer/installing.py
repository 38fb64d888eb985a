"""``install`` and ``uninstall``: a source read into a staging folder, checked, and renamed into place (the
package's docstring says each step).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from adapters.folders import (
    Budget,
    FolderRefused,
    copy_folder,
    repositories,
)
from adapters.installer.archives import extract_archive
from adapters.installer.checks import all_skills, check_skills, place, user_skill
from adapters.installer.from_mcp import Fetched, fetch_from_server, mcp_source
from adapters.installer.git import export_git
from adapters.installer.records import (
    InstallLimits,
    InstallRecord,
    InstallResult,
    SourceKind,
    UninstallResult,
)
from adapters.installer.staging import clean_up, make_dirs, remove_tree
from adapters.skill_folders import load_skill_file
from skills.errors import InstallRefusedError
from skills.skillmd.manifest import SourceName
from skills.spec.mcpservers import McpServerConfig

ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip")


def install(
    source: str,
    *,
    folders: dict[SourceName, Path],
    path: str | None = None,
    ref: str | None = None,
    force: bool = False,
    all_or_nothing: bool = False,
    limits: InstallLimits = InstallLimits(),  # noqa: B008 - frozen
    mcp_servers: Mapping[str, McpServerConfig] | None = None,
    mcp_timeout: float = 60.0,
) -> InstallResult:
    """Install the skill (or skills) of ``source`` into ``folders["user"]``; see the module's docstring.
    ``mcp_servers`` (the MCP config) is where an ``mcp:SERVER[/PATH]`` source finds its server."""
    user_dir = Path(folders["user"]).expanduser().absolute()
    kind = source_kind(source, ref)
    reasons: list[str] = []
    if kind == "mcp":
        server, path = mcp_source(source, path, ref, mcp_servers or {})
    if path is not None:
        reasons += _subpath_problems(path)
    if reasons:
        raise InstallRefusedError(reasons)
    created = make_dirs(user_dir)
    stage = user_dir / f".install-{uuid.uuid4().hex[:12]}"
    try:
        stage.mkdir()
        unpacked = stage / "source"
        fetched = Fetched()
        if kind == "mcp":
            fetched = fetch_from_server(server, (mcp_servers or {})[server], path, unpacked, limits, mcp_timeout)
            commit, root = None, unpacked
        else:
            commit = _unpack(kind, source, unpacked, path=path, ref=ref, limits=limits)
            root = unpacked / path if path else unpacked
        if not root.is_dir():
            raise InstallRefusedError([f"'{path}' is not a folder in {source}"])
        _refuse_repositories(root, limits)
        record = InstallRecord(source=f"mcp:{server}" if kind == "mcp" else _display_source(kind, source), kind=kind,
                               path=path, ref=ref, commit=commit, installed_at=datetime.now(UTC))
        if fetched.refused and not any(root.iterdir()):
            raise InstallRefusedError([f"{r.label}: {reason}" for r in fetched.refused for reason in r.reasons])
        plans, refused, skipped = check_skills(root, unpacked, user_dir, folders, force=force,
                                                from_server=kind == "mcp")
        refused = [*fetched.refused, *refused]
        if refused and (all_or_nothing or not plans):
            raise InstallRefusedError([*(f"{r.label}: {reason}" for r in refused for reason in r.reasons),
                                       *(f"left out {line}" for line in skipped)])
        installed = [place(plan, stage, user_dir, record.model_copy(update={"uri": fetched.uris.get(plan.name)}))
                     for plan in plans]
    except FolderRefused as refused:
        clean_up(stage, created)
        raise InstallRefusedError(refused.reasons) from None
    except OSError as exc:
        clean_up(stage, created)
        raise InstallRefusedError([f"could not install from {source}: {exc}"]) from exc
    except BaseException:
        clean_up(stage, created)
        raise
    remove_tree(stage)
    return InstallResult(installed=installed, record=record, refused=refused, skipped=skipped)


def uninstall(name: str, *, folders: dict[SourceName, Path]) -> UninstallResult:
    """Remove the user-folder skill ``name``; a bundled or project skill is refused with the reason."""
    catalog = all_skills(folders)
    user_dir = Path(folders["user"]).expanduser().absolute()
    found = user_skill(name, user_dir)
    if found is None:
        owner = catalog.get(name)
        if owner is not None:
            where = {"bundled": "it ships with the engine (disable it with default_enabled, or shadow it)",
                     "project": "it belongs to the project: remove it from the project's folder"}
            raise InstallRefusedError([f"'{name}' is a {owner.source} skill ({owner.folder}), not one in the user "
                                       f"folder {user_dir}: {where.get(owner.source, '')}"])
        raise InstallRefusedError([f"no skill named '{name}' in the user folder {user_dir}"])
    skill, _ = load_skill_file(found / "SKILL.md", "user")
    scheduled = bool(skill and skill.manifest.metadata.trigger_config)
    # Renamed away first, then removed: a half-removed folder never looks like a skill.
    trash = user_dir / f".uninstall-{uuid.uuid4().hex[:12]}"
    os.rename(found, trash)
    remove_tree(trash)
    after = all_skills(folders).get(name)
    revealed = f"{after.source} {after.folder}" if after is not None else None
    return UninstallResult(name=name, path=found, scheduled=scheduled, revealed=revealed)


def source_kind(source: str, ref: str | None = None) -> SourceKind:
    """What ``source`` is: a git URL (or a local repository with ``ref``), an archive, or a folder."""
    lowered = source.lower()
    if lowered.startswith("mcp:"):
        return "mcp"
    if lowered.startswith(("file://", "http://", "https://", "ssh://", "git://", "git@")) or lowered.endswith(".git"):
        if lowered.startswith(("http://", "https://")) and lowered.endswith(ARCHIVE_SUFFIXES):
            raise InstallRefusedError([f"{source}: archives are installed from a local file; download it first"])
        return "git"
    local = Path(source).expanduser()
    if local.is_dir():
        return "git" if ref is not None else "folder"
    if local.is_file() and lowered.endswith(ARCHIVE_SUFFIXES):
        return "archive"
    if local.exists():
        raise InstallRefusedError([f"{source}: not a folder, a .tar/.tar.gz/.tgz/.zip archive or a git URL"])
    raise InstallRefusedError([f"{source}: no such folder or archive (and not a git URL)"])


def _refuse_repositories(root: Path, limits: InstallLimits) -> None:
    """The whole source refused when what it staged holds a repository under any name (git's discovery
    asks every folder whether it is one, and runs what its config says): by what the staged files are,
    the same for every route, before any of it is placed."""
    budget = Budget(limits)
    for reason in repositories(root):
        budget.refuse(reason)
    budget.refuse_if_any()


def _unpack(kind: SourceKind, source: str, target: Path, *, path: str | None, ref: str | None,
            limits: InstallLimits) -> str | None:
    if kind == "folder":
        copy_folder(Path(source).expanduser(), target, limits)
        return None
    if kind == "archive":
        extract_archive(Path(source).expanduser(), target, limits)
        return None
    return export_git(source, target, path=path, ref=ref, limits=limits)


def _subpath_problems(path: str) -> list[str]:
    posix = PurePosixPath(path.replace("\\", "/"))
    if posix.is_absolute():
        return [f"--path '{path}' must be relative to the source"]
    if ".." in posix.parts:
        return [f"--path '{path}' must not contain '..'"]
    return []


def _display_source(kind: SourceKind, source: str) -> str:
    if kind == "git" and ("://" in source or source.startswith("git@")):
        return source
    return str(Path(source).expanduser().absolute())
