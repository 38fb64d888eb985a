"""Every install route writes only the skill: attacks on `skills install` by a malicious MCP Skills
server (tests/starter/hostile_skills_server.py) and by archives, folders and git repositories carrying
control files or a repository under an ordinary name."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

from adapters.folders import control_part, repositories
from adapters.installer import install
from skills.errors import InstallRefusedError
from tests.conftest import PYTHON, ROOT
from tests.skills.skillmd.skill_files import skill_text
from tests.starter.hostile_skills_server import bare_skill, git_skill


def hostile(tmp_path: Path, mode: str, mark: str) -> dict[str, Any]:
    """The MCP config, as the CLI reads it, with the hostile server as ``evil``."""
    from adapters.mcp.config import load_mcp_config

    entry = {"command": PYTHON, "args": ["-m", "tests.starter.hostile_skills_server", mode, mark], "cwd": str(ROOT)}
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"evil": entry}}))
    return load_mcp_config(tmp_path / "mcp.json", defaults={})


@pytest.fixture
def folders(tmp_path: Path) -> dict[str, Path]:
    found = {kind: tmp_path / "machine" / kind for kind in ("project", "user", "bundled")}
    found["bundled"].mkdir(parents=True)
    return found


def git_status(folder: Path) -> None:
    """What a shell prompt does on ``cd``: ``git status`` in ``folder``, no repository above its parent counting."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed: what `git status` would run in the installed folder cannot be shown")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_CEILING_DIRECTORIES"] = str(folder.parent)  # no repository above the user folder counts
    subprocess.run(["git", "status"], cwd=folder, env=env, capture_output=True, timeout=30, check=False)


def git_status_runs_nothing(folder: Path, mark: Path) -> None:
    """``git status`` in the installed folder; the mark proves a run."""
    git_status(folder)
    assert not mark.exists(), f"git status in {folder} ran the installed skill's command"


def control_files_left_out(folder: Path) -> None:
    present = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))
    assert present == [".install.json", "SKILL.md", "references", "references/guide.md"]


def test_an_mcp_install_never_writes_a_skills_git_folder_or_control_files(
        tmp_path: Path, folders: dict[str, Path]) -> None:
    mark = tmp_path / "FSMONITOR-RAN"

    result = install("mcp:evil", folders=folders, mcp_servers=hostile(tmp_path, "git", str(mark)))

    [skill] = result.installed
    git_status_runs_nothing(skill.path, mark)
    control_files_left_out(skill.path)


@pytest.mark.parametrize("kind", ["tar", "zip", "folder"])
def test_an_archive_or_folder_install_never_writes_a_git_folder_or_control_files(
        tmp_path: Path, folders: dict[str, Path], kind: str) -> None:
    mark = tmp_path / "FSMONITOR-RAN"
    files = git_skill(str(mark))["hooked"]
    if kind == "tar":
        source = tmp_path / "hooked.tar.gz"
        with tarfile.open(source, "w:gz") as tar:
            for relative, data in files.items():
                info = tarfile.TarInfo(f"hooked/{relative}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    elif kind == "zip":
        source = tmp_path / "hooked.zip"
        with zipfile.ZipFile(source, "w") as zipped:
            for relative, data in files.items():
                zipped.writestr(f"hooked/{relative}", data)
    else:
        source = tmp_path / "src"
        for relative, data in files.items():
            (source / "hooked" / relative).parent.mkdir(parents=True, exist_ok=True)
            (source / "hooked" / relative).write_bytes(data)

    [skill] = install(str(source), folders=folders).installed

    git_status_runs_nothing(skill.path, mark)
    control_files_left_out(skill.path)


def lay_out(root: Path, files: dict[str, bytes]) -> Path:
    for relative, data in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_bytes(data)
    return root


def source(tmp_path: Path, kind: str, skills: dict[str, dict[str, bytes]]) -> str:
    """``skills`` (name -> relative path -> bytes) as an install source of ``kind``: a folder, a ``.tar.gz``,
    a ``.zip``, or a real git repository (its ``file://`` URL), each skill in a folder of its name."""
    files = {f"{name}/{relative}": data for name, found in skills.items() for relative, data in found.items()}
    if kind == "tar":
        archive = tmp_path / "source.tar.gz"
        with tarfile.open(archive, "w:gz") as tar:
            for relative, data in files.items():
                info = tarfile.TarInfo(relative)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        return str(archive)
    if kind == "zip":
        archive = tmp_path / "source.zip"
        with zipfile.ZipFile(archive, "w") as zipped:
            for relative, data in files.items():
                zipped.writestr(relative, data)
        return str(archive)
    folder = lay_out(tmp_path / ("repo" if kind == "git" else "src"), files)
    if kind == "folder":
        return str(folder)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")}, "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for command in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "skills"]):
        subprocess.run(["git", *command], cwd=folder, env=env, check=True, capture_output=True)
    return folder.as_uri()


ROUTES = ["folder", "tar", "zip", "git", "mcp"]


def test_the_planted_repository_is_one_git_runs_the_config_of(tmp_path: Path) -> None:
    # The attack is real: laid out as it would be installed, `git status` in examples/ (a shell prompt on
    # `cd`) takes the folder for a repository and runs its core.fsmonitor command.
    mark = tmp_path / "FSMONITOR-RAN"
    laid_out = Path(source(tmp_path, "folder", bare_skill(str(mark))))

    git_status(laid_out / "embedded" / "examples")

    assert mark.exists()


@pytest.mark.parametrize("route", ROUTES)
def test_a_bare_repository_under_an_ordinary_name_is_refused_on_every_route(
        tmp_path: Path, folders: dict[str, Path], route: str) -> None:
    mark = tmp_path / "FSMONITOR-RAN"
    if route == "git" and shutil.which("git") is None:
        pytest.skip("git is not installed: the git route needs it")
    if route == "mcp":
        chosen, options = "mcp:evil", {"mcp_servers": hostile(tmp_path, "bare", str(mark))}
    else:
        chosen, options = source(tmp_path, route, bare_skill(str(mark))), {}

    try:
        result = install(chosen, folders=folders, **options)
    except InstallRefusedError as refused:
        reasons = refused.reasons
    else:
        # Installed as it came (the name filter saw no `.git`): a shell prompt entering examples/ runs
        # what its config says.
        [skill] = result.installed
        git_status_runs_nothing(skill.path / "examples", mark)
        reasons = []

    assert reasons == [
        "embedded/examples/ holds HEAD, objects and refs: git takes it for a repository and runs what its "
        "config says (core.fsmonitor on `git status`); a skill may not carry a repository"]
    assert not folders["user"].exists() and not mark.exists()


def test_a_repository_is_known_by_what_it_holds_whatever_its_name(tmp_path: Path) -> None:
    found = repositories(lay_out(tmp_path / "skill", {
        "SKILL.md": b"---\n",
        # git's own test: HEAD, objects and refs; names as a case-insensitive file system opens them.
        "examples/HEAD": b"ref: refs/heads/main\n", "examples/objects/x": b"", "examples/refs/x": b"",
        "data/Head.": b"0" * 40, "data/OBJECTS": b"", "data/refs/x": b"",
        # A linked worktree's folder: HEAD, and a commondir saying where the objects and refs are.
        "linked/HEAD": b"ref: refs/heads/main\n", "linked/commondir": b"../store\n",
        # A .git file's pointer, under any name.
        "notes/checkout": b"gitdir: /elsewhere/.git/modules/x\n", "notes/bom.txt": b"\xef\xbb\xbfGITDIR: ../x\n",
        # Mercurial's store, and Subversion's working copy, under ordinary names.
        "vendored/requires": b"store\n", "vendored/store/00changelog.i": b"",
        "wc/wc.db": b"", "wc/pristine/00/x": b"",
    }))

    assert found == [
        "data/ holds Head., OBJECTS and refs: git takes it for a repository and runs what its config says "
        "(core.fsmonitor on `git status`); a skill may not carry a repository",
        "examples/ holds HEAD, objects and refs: git takes it for a repository and runs what its config says "
        "(core.fsmonitor on `git status`); a skill may not carry a repository",
        "linked/ holds HEAD and commondir: git takes it for a repository and runs what its config says "
        "(core.fsmonitor on `git status`); a skill may not carry a repository",
        "notes/bom.txt starts with 'gitdir:', a pointer to a git repository (as a .git file is); a skill may not "
        "carry one",
        "notes/checkout starts with 'gitdir:', a pointer to a git repository (as a .git file is); a skill may not "
        "carry one",
        "vendored/ holds requires and store: hg takes it for a repository and runs the hooks its hgrc names; a "
        "skill may not carry a repository",
        "wc/ holds wc.db and pristine: svn takes it for a repository; a skill may not carry a repository",
    ]


def test_what_only_looks_like_a_repository_installs(tmp_path: Path, folders: dict[str, Path]) -> None:
    # Two of git's three names in one folder, the third beside it, a file that mentions gitdir: later on.
    src = lay_out(tmp_path / "src", {
        "plain/SKILL.md": skill_text({"name": "plain", "description": "The plain skill."}).encode(),
        "plain/references/HEAD": b"ref: refs/heads/main\n", "plain/references/objects/x.md": b"",
        "plain/refs/x.md": b"", "plain/notes.md": b"Set gitdir: in a .git file to point elsewhere.\n",
    })

    [skill] = install(str(src), folders=folders).installed

    assert (skill.path / "references" / "HEAD").is_file() and repositories(skill.path) == []


@pytest.mark.parametrize("route", ["folder", "zip"])
def test_a_gitdir_pointer_or_an_hg_store_under_another_name_is_refused(
        tmp_path: Path, folders: dict[str, Path], route: str) -> None:
    chosen = source(tmp_path, route, {"pointed": {
        "SKILL.md": skill_text({"name": "pointed", "description": "The pointed skill."}).encode(),
        "vendor/link": b"gitdir: ../../elsewhere\n",
        "cache/requires": b"store\n", "cache/store/data/x.i": b"",
    }})

    with pytest.raises(InstallRefusedError) as refused:
        install(chosen, folders=folders)

    assert refused.value.reasons == [
        "pointed/cache/ holds requires and store: hg takes it for a repository and runs the hooks its hgrc "
        "names; a skill may not carry a repository",
        "pointed/vendor/link starts with 'gitdir:', a pointer to a git repository (as a .git file is); a skill "
        "may not carry one"]
    assert not folders["user"].exists()


def test_the_control_names_are_matched_as_a_case_insensitive_file_system_would() -> None:
    # macOS and Windows open `.GIT`, `.git.` (NTFS drops trailing dots) and `.g\u200cit` (HFS+ ignores
    # it) as `.git`; git itself refuses them in a tree for that reason.
    for name in (".git", ".GIT", ".Git.", ".git ", ".g\u200cit", "git~1", ".hg", ".svn", ".envrc", ".ENV",
                 ".vscode", ".install.json", ".gitmodules", ".gitattributes", ".lfsconfig"):
        assert control_part(f"skill/{name}/config") == name, name
        assert control_part(name) == name, name
    for name in ("SKILL.md", "references/git.md", ".github/workflows/ci.yml", "docs/.gitkeep", "gitignore"):
        assert control_part(name) is None, name


def test_an_mcp_install_of_ten_thousand_files_is_refused_whole_before_a_file_is_read(
        tmp_path: Path, folders: dict[str, Path]) -> None:
    with pytest.raises(InstallRefusedError) as refused:
        install("mcp:evil", folders=folders, mcp_servers=hostile(tmp_path, "many", "-"))

    assert refused.value.reasons == [
        "mcp:evil: the chosen skills hold 10,542 entries (10,500 files and 42 folders); one install may "
        "write at most 2,000: install fewer at a time (mcp:evil/PATH)"]
    assert not folders["user"].exists()


MEASURE = """
import json, resource, sys
from pathlib import Path
from adapters.installer import install
from adapters.mcp.config import load_mcp_config
config = load_mcp_config(Path(sys.argv[1]), defaults={})
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result = install("mcp:evil", folders={"user": sys.argv[2], "project": sys.argv[3], "bundled": sys.argv[3]},
                 mcp_servers=config)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"grew_kib": after - before, "installed": [s.name for s in result.installed],
                  "refused": [[r.name, r.reasons] for r in result.refused]}))
"""


def test_a_file_declared_as_5_bytes_that_answers_50_mb_is_read_no_further_than_its_declared_size(
        tmp_path: Path, folders: dict[str, Path]) -> None:
    hostile(tmp_path, "liar", "50")
    # In a process of its own, so that its peak memory is the install's alone.
    done = subprocess.run([PYTHON, "-c", MEASURE, str(tmp_path / "mcp.json"), str(folders["user"]),
                           str(folders["bundled"])], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    measured = json.loads(done.stdout.splitlines()[-1])

    assert measured["installed"] == ["honest"]
    [[name, [reason]]] = measured["refused"]
    assert name == "liar" and reason == ("notes.txt: the server's answer is over 4,258 bytes, more than a file "
                                         "declared as 5 bytes can take: it was not read further")
    # The 50 MiB answer (67 MiB as JSON) was never held: the peak grew by less than 16 MiB (it grew by
    # 280 MiB, in 264 s, when the answer was read whole).
    assert measured["grew_kib"] < 16 * 1024, measured


def test_a_malformed_skill_is_refused_by_name_and_the_others_install(
        tmp_path: Path, folders: dict[str, Path]) -> None:
    result = install("mcp:evil", folders=folders, mcp_servers=hostile(tmp_path, "malformed", "-"))

    assert [s.name for s in result.installed] == ["honest"]
    [broken] = result.refused
    assert broken.name == "broken" and broken.reasons == [
        "SKILL.md is listed as a file and as a folder (SKILL.md/x)"]
    assert sorted(p.name for p in folders["user"].iterdir()) == ["honest"]
