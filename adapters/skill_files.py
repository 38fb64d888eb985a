"""The reads of a SKILL.md folder: a skill file's frontmatter, headings and text, the folders of a
source, a skill's resource files and scripts. ``adapters.skill_folders`` builds discovery, validation
and its ``SkillReader`` on them, so ``skills.skillmd`` works on what was read and can be tested without
folders. Reads are capped; resource and script paths are checked before they are opened.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import NamedTuple

from skills.errors import ResourceError, SkillFileError, TooLargeError
from skills.skillmd.parsing import is_boundary
from skills.skillmd.scripts import SCRIPTS_FOLDER, DeclaredScript

# utf-8-sig drops a byte-order mark that some editors write at the start of the file.
ENCODING = "utf-8-sig"


def read_frontmatter_block(path: Path, max_bytes: int) -> str:
    """The file's text up to the line that closes its frontmatter; the body is never read.

    If the file does not open with ``---`` or never closes it, what was read is
    returned as is, and parsing reports the problem.
    """
    lines: list[str] = []
    size = 0
    try:
        # Binary, line by line: a text reader decodes ahead in chunks, and would read (and
        # choke on) the body.
        with path.open("rb") as f:
            while raw := f.readline(max_bytes + 1):
                size += len(raw)
                if size > max_bytes:
                    raise TooLargeError(f"{path}: frontmatter exceeds {max_bytes} bytes")
                line = raw.decode(ENCODING if not lines else "utf-8")
                lines.append(line)
                if len(lines) == 1:
                    if not is_boundary(line):
                        break  # no frontmatter at all: parsing will say so
                elif is_boundary(line):
                    break  # the closing ---
    except UnicodeDecodeError as exc:
        raise SkillFileError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise SkillFileError(f"{path}: {exc.strerror or exc}") from None
    return "".join(lines)


MAX_HEADINGS = 40
"""Headings kept per SKILL.md for matching: enough for any real skill's outline."""

HEADINGS_BYTES = 64 * 1024
"""How much of a body is scanned for headings: a skill's outline is near its top."""


def read_headings(path: Path, max_bytes: int = HEADINGS_BYTES) -> tuple[str, ...]:
    """The Markdown headings (``#`` to ``######``) of the body after the frontmatter, without the
    marks, outside fenced code (a shell comment is not a heading); at most :data:`MAX_HEADINGS`, from
    the first ``max_bytes``. The body's text is not kept. A file that cannot be read has none."""
    found: list[str] = []
    fence = ""
    size = 0
    try:
        with path.open("rb") as f:
            boundaries = 0
            while (raw := f.readline(max_bytes)) and size < max_bytes and len(found) < MAX_HEADINGS:
                size += len(raw)
                line = raw.decode("utf-8", "replace").rstrip()
                if boundaries < 2:  # the frontmatter, up to its closing ---
                    if is_boundary(raw.decode("utf-8", "replace")):
                        boundaries += 1
                    elif size == len(raw):
                        return ()  # no frontmatter: not a skill file that loads
                    continue
                stripped = line.lstrip()
                if stripped.startswith(("```", "~~~")):
                    mark = stripped[:3]
                    fence = "" if fence == mark else (fence or mark)
                    continue
                if fence or not stripped.startswith("#"):
                    continue
                level = len(stripped) - len(stripped.lstrip("#"))
                text = stripped[level:].strip().strip("#").strip()
                if 1 <= level <= 6 and text and stripped[level:level + 1] in (" ", "\t"):
                    found.append(text[:200])
    except OSError:
        return ()
    return tuple(found)


def read_text(path: Path, max_bytes: int) -> str:
    """A whole text file, refused before reading if it is bigger than ``max_bytes``."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise TooLargeError(f"{path} is {size} bytes; the limit is {max_bytes} bytes")
        with path.open("rb") as f:
            # Read one byte past the cap in case the file grew since stat().
            data = f.read(max_bytes + 1)
    except OSError as exc:
        raise SkillFileError(f"{path}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise TooLargeError(f"{path} is over {max_bytes} bytes; the limit is {max_bytes} bytes")
    try:
        return data.decode(ENCODING)
    except UnicodeDecodeError as exc:
        raise SkillFileError(f"{path}: not UTF-8 text ({exc.reason})") from None


def modified_at(path: Path, stat: os.stat_result | None = None) -> datetime:
    """When the file was last written, time-zone aware (UTC); ``stat`` if the caller has it already."""
    try:
        return datetime.fromtimestamp((stat or path.stat()).st_mtime, tz=UTC)
    except OSError as exc:
        raise SkillFileError(f"{path}: {exc.strerror or exc}") from None


FileStamp = tuple[int, int, int]
"""What tells a file changed without reading it: (modification time in ns, size, inode)."""


def skill_files(
    root: Path, filename: str = "SKILL.md", hidden: list[Path] | None = None,
) -> list[tuple[Path, os.stat_result | None]]:
    """Each sub-folder of ``root`` by name (hidden and dunder ones left out, as ``child_dirs``), with the
    stat of its ``filename``, or None when it has no such regular file. One directory read and one stat a
    folder (``os.scandir``): discovery of thousands of skills costs no more file-system calls than that.
    The hidden sub-folders passed over are appended to ``hidden`` when it is given."""
    folders: list[tuple[str, Path]] = []
    with os.scandir(root) as entries:
        for entry in entries:
            if entry.name.startswith("__"):
                continue
            try:
                if entry.name.startswith("."):
                    if hidden is not None and entry.is_dir(follow_symlinks=False):
                        hidden.append(Path(entry.path))
                elif entry.is_dir():
                    folders.append((entry.name, Path(entry.path)))
            except OSError:
                continue
    found: list[tuple[Path, os.stat_result | None]] = []
    for _name, folder in sorted(folders):
        path = folder / filename
        try:
            stat = os.stat(path)
        except OSError:
            found.append((path, None))
            continue
        found.append((path, stat if _is_regular(stat) else None))
    return found


def _is_regular(stat: os.stat_result) -> bool:
    import stat as stat_module

    return stat_module.S_ISREG(stat.st_mode)


def stamp(stat: os.stat_result) -> FileStamp:
    return (stat.st_mtime_ns, stat.st_size, stat.st_ino)


class Collection(NamedTuple):
    """What a folder given as a source holds: its skill folders, and the folders left out with why."""

    skills: list[Path]
    """The folder itself when it holds a SKILL.md, else each sub-folder that does (hidden ones left out)."""
    skipped: list[Skipped]


class Skipped(NamedTuple):
    folder: Path
    why: str
    """``no SKILL.md``, ``a hidden folder``, each with how many skill folders it holds when any."""
    holds: int
    """Skill folders directly inside it: pointing at it would find them."""


def collection(root: Path) -> Collection:
    """The skills of a folder a user points at (``skills validate``, ``skills install``).

    A folder with a SKILL.md is one skill. Otherwise each sub-folder with a SKILL.md is one, except
    hidden ones (``.curated/``, as openai/skills keeps its skills): those are left out as discovery
    leaves them out, and named with what they hold, so pointing at ``.curated`` itself is one step
    away. A sub-folder without a SKILL.md is named too; hidden ones that hold no skill (``.git``,
    ``.github``) and dunder ones are not.
    """
    if (root / "SKILL.md").is_file():
        return Collection([root], [])
    skills: list[Path] = []
    skipped: list[Skipped] = []
    for child in sorted(root.iterdir()):
        if not child.is_dir() or child.name.startswith("__"):
            continue
        hidden = child.name.startswith(".")
        is_skill = (child / "SKILL.md").is_file()
        if is_skill and not hidden:
            skills.append(child)
            continue
        holds = 1 if is_skill else _skill_folders_in(child)
        if hidden and holds:
            what = "a hidden skill folder" if is_skill else f"a hidden folder of {_skills(holds)}"
            skipped.append(Skipped(child, what, holds))
        elif not hidden:
            skipped.append(Skipped(child, f"no SKILL.md ({_skills(holds)} inside)" if holds else "no SKILL.md", holds))
    return Collection(skills, skipped)


def _skill_folders_in(folder: Path) -> int:
    try:
        return sum(1 for child in folder.iterdir() if child.is_dir() and (child / "SKILL.md").is_file())
    except OSError:
        return 0


def _skills(count: int) -> str:
    return f"{count} skill{'s' * (count != 1)}"


def hidden_collections(root: Path, hidden: list[Path]) -> list[Skipped]:
    """Of the hidden sub-folders discovery passed over in ``root``, those that hold skill folders
    (the staging folders of an install, ``.install-*``, are not reported)."""
    found = []
    for folder in hidden:
        if folder.name.startswith(".install-"):
            continue
        holds = _skill_folders_in(folder)
        if holds:
            found.append(Skipped(folder, f"a hidden folder of {_skills(holds)}", holds))
    return found


def child_dirs(root: Path) -> list[Path]:
    """Sub-folders of ``root`` by name, leaving out hidden (``.x``) and dunder (``__pycache__``) ones."""
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "__")))


def resolve_inside(root: Path, relative: str) -> Path:
    """The file ``relative`` names inside ``root``; refused if it could leave ``root``."""
    if not relative or PurePosixPath(relative).is_absolute() or PureWindowsPath(relative).is_absolute():
        raise ResourceError(f"Resource path '{relative}' must be relative to the skill folder")
    parts = PureWindowsPath(relative).parts  # splits on both / and \
    if ".." in parts:
        raise ResourceError(
            f"Resource path '{relative}' must not contain '..' (it would leave the skill folder)"
        )
    try:
        real_root = root.resolve()
        target = (root / relative).resolve()
        if not target.is_relative_to(real_root):
            raise ResourceError(f"Resource path '{relative}' resolves outside the skill folder (to {target})")
        if not target.is_file():
            raise ResourceError(f"Resource '{relative}' not found in {root}")
    except OSError as e:  # a name too long for the file system, a folder that cannot be read
        raise ResourceError(f"Resource '{relative[:200]}' cannot be read in {root}: {e.strerror or e}") from None
    return target


def files_under(root: Path, folder: str) -> Iterator[tuple[str, int]]:
    """``(path relative to root, size)`` of each file under ``root/folder`` that stays inside ``root``.

    Symlinked folders are not followed, and a symlinked file that points out of
    ``root`` is left out, since reading it would be refused anyway.
    """
    real_root = root.resolve()
    start = root / folder
    if not start.is_dir() or not start.resolve().is_relative_to(real_root):
        return
    for dirpath, dirnames, filenames in os.walk(start):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath, name)
            real = path.resolve()
            if real.is_relative_to(real_root) and real.is_file():
                yield path.relative_to(root).as_posix(), real.stat().st_size


def locate(folder: Path, script: DeclaredScript) -> Path:
    """The script's file in ``folder``; ``ResourceError`` if it is missing, not a file, or leaves ``scripts/``."""
    target = resolve_inside(folder, script.relative_path)
    if not target.is_relative_to((folder / SCRIPTS_FOLDER).resolve()):
        raise ResourceError(f"script '{script.name}' resolves outside the scripts folder (to {target})")
    return target
