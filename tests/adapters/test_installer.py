"""Installing skills from folders, archives and real git repositories; malicious sources write nothing."""

from __future__ import annotations

import gzip
import io
import json
import os
import struct
import subprocess
import tarfile
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

import pytest

from adapters.installer import InstallLimits, install, read_record, uninstall
from skills.errors import InstallRefusedError
from skills.spec.limits import MIB
from tests.skills.skillmd.skill_files import skill_text


@pytest.fixture
def folders(tmp_path: Path) -> dict[str, Path]:
    found = {kind: tmp_path / kind for kind in ("project", "user", "bundled")}
    found["bundled"].mkdir()
    return found


def write(root: Path, name: str, body: str = "Follow these steps.", folder: str | None = None, **fields: Any) -> Path:
    path = root / (folder or name) / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(skill_text({"name": name, "description": f"The {name} skill. It helps.", **fields}, body))
    return path.parent


def snapshot(root: Path) -> list[str]:
    """Every path under root (hidden ones too), to prove a refusal wrote nothing."""
    if not root.exists():
        return ["<absent>"]
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def refused(folders: dict[str, Path], source: str | Path, **options: Any) -> list[str]:
    before = snapshot(folders["user"])
    with pytest.raises(InstallRefusedError) as caught:
        install(str(source), folders=folders, **options)
    assert snapshot(folders["user"]) == before, "a refused install wrote something"
    return caught.value.reasons


# --- folders ------------------------------------------------------------------------------------


def test_a_folder_is_installed_with_its_resources_and_its_origin(tmp_path: Path, folders: dict[str, Path]) -> None:
    source = write(tmp_path / "src", "pdf-tools", body="Use references/forms.md.")
    (source / "references").mkdir()
    (source / "references" / "forms.md").write_text("Forms.")

    result = install(str(source), folders=folders)

    [skill] = result.installed
    target = folders["user"] / "pdf-tools"
    assert skill.path == target and not skill.replaced and not skill.scheduled
    assert (target / "references" / "forms.md").read_text() == "Forms."
    record = read_record(target)
    assert record is not None and record.kind == "folder" and record.source == str(source)
    assert [p.name for p in folders["user"].iterdir()] == ["pdf-tools"]  # no staging folder left behind


def test_a_folder_of_skills_installs_each_and_a_schedule_is_said(tmp_path: Path, folders: dict[str, Path]) -> None:
    write(tmp_path / "pack", "alpha", depends=["beta"])
    write(tmp_path / "pack", "beta", metadata={"trigger_config": {"schedule": "0 9 * * *"}})

    result = install(str(tmp_path / "pack"), folders=folders)

    assert {s.name: s.scheduled for s in result.installed} == {"alpha": False, "beta": True}
    assert sorted(p.name for p in folders["user"].iterdir()) == ["alpha", "beta"]


def test_a_collection_installs_what_passes_and_refuses_the_others_by_name(
        tmp_path: Path, folders: dict[str, Path]) -> None:
    write(tmp_path / "pack", "good")
    write(tmp_path / "pack", "Bad--Name", folder="bad", compatibility="x" * 501)
    write(tmp_path / "pack", "needy", depends=["ghost"])
    write(tmp_path / "pack", "leaning", depends=["needy"])  # valid, but what it needs is refused

    result = install(str(tmp_path / "pack"), folders=folders)

    assert [s.name for s in result.installed] == ["good"]
    assert sorted(p.name for p in folders["user"].iterdir()) == ["good"]
    refusals = {r.folder: (r.name, r.reasons) for r in result.refused}
    assert refusals["bad"] == ("Bad--Name", [
        "Skill name 'Bad--Name' must be lowercase",
        "Skill name cannot contain consecutive hyphens",
        "Directory name 'bad' must match skill name 'Bad--Name'",
        "Compatibility exceeds 500 character limit (501 chars)",
    ])
    assert refusals["needy"] == ("needy", ["Skill 'needy' depends on unknown skill 'ghost'"])
    assert refusals["leaning"] == ("leaning", ["it depends on 'needy', which is refused"])


def test_all_or_nothing_refuses_the_whole_source_with_every_reason(tmp_path: Path, folders: dict[str, Path]) -> None:
    write(tmp_path / "pack", "good")
    write(tmp_path / "pack", "Bad--Name", folder="bad", compatibility="x" * 501)
    write(tmp_path / "pack", "needy", depends=["ghost"])

    reasons = refused(folders, tmp_path / "pack", all_or_nothing=True)

    assert "bad: Skill name 'Bad--Name' must be lowercase" in reasons
    assert "bad: Compatibility exceeds 500 character limit (501 chars)" in reasons
    assert "bad: Directory name 'bad' must match skill name 'Bad--Name'" in reasons
    assert "needy: Skill 'needy' depends on unknown skill 'ghost'" in reasons
    assert not folders["user"].exists()  # not even the user folder was created


def test_a_source_none_of_whose_skills_pass_is_refused_whole(tmp_path: Path, folders: dict[str, Path]) -> None:
    write(tmp_path / "pack", "Bad--Name", folder="bad")
    write(tmp_path / "pack", "needy", depends=["ghost"])

    assert refused(folders, tmp_path / "pack") == [
        "bad: Skill name 'Bad--Name' must be lowercase",
        "bad: Skill name cannot contain consecutive hyphens",
        "bad: Directory name 'bad' must match skill name 'Bad--Name'",
        "needy: Skill 'needy' depends on unknown skill 'ghost'",
    ]


def test_a_cycle_is_refused_and_a_name_clash_needs_force(tmp_path: Path, folders: dict[str, Path]) -> None:
    write(tmp_path / "cycle", "ping", depends=["pong"])
    write(tmp_path / "cycle", "pong", depends=["ping"])
    assert "ping: Skill dependencies form a cycle: ping → pong → ping" in refused(folders, tmp_path / "cycle")
    write(tmp_path / "cycle", "steady")
    result = install(str(tmp_path / "cycle"), folders=folders)
    assert [s.name for s in result.installed] == ["steady"]
    assert {r.name: r.reasons for r in result.refused} == {
        "ping": ["Skill dependencies form a cycle: ping → pong → ping"],
        "pong": ["Skill dependencies form a cycle: pong → ping → pong"],
    }
    uninstall("steady", folders=folders)

    install(str(write(tmp_path / "v1", "notes", body="Version one.")), folders=folders)
    v2 = write(tmp_path / "v2", "notes", body="Version two.")
    [reason] = refused(folders, v2)
    assert reason.startswith("notes: a skill of that name is already installed") and "--force" in reason

    [skill] = install(str(v2), folders=folders, force=True).installed
    assert skill.replaced
    assert "Version two." in (folders["user"] / "notes" / "SKILL.md").read_text()
    assert sorted(p.name for p in folders["user"].iterdir()) == ["notes"]


def test_a_folder_with_a_link_out_or_a_fifo_is_refused(tmp_path: Path, folders: dict[str, Path]) -> None:
    (tmp_path / "secret.txt").write_text("s3cret")
    source = write(tmp_path / "src", "linky")
    (source / "leak.md").symlink_to(tmp_path / "secret.txt")
    os.mkfifo(source / "pipe")

    reasons = refused(folders, source)

    assert any(r.startswith("leak.md is a link that points outside the skill") for r in reasons)
    assert "pipe is a FIFO, not a file or a folder" in reasons


# --- archives -----------------------------------------------------------------------------------


def skill_bytes(name: str, **fields: Any) -> bytes:
    return skill_text({"name": name, "description": f"The {name} skill. It helps.", **fields}).encode()


def make_tar(path: Path, members: list[tarfile.TarInfo | tuple[str, bytes]]) -> Path:
    with tarfile.open(path, "w:gz" if path.name.endswith("gz") else "w") as tar:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                tar.addfile(member)
            else:
                name, data = member
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return path


def special(name: str, kind: bytes, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info


def test_a_tar_gz_with_a_wrapping_folder_installs(tmp_path: Path, folders: dict[str, Path]) -> None:
    archive = make_tar(tmp_path / "skills.tar.gz", [
        ("pack-1.0/report/SKILL.md", skill_bytes("report")),
        ("pack-1.0/report/assets/logo.txt", b"LOGO"),
        special("pack-1.0/report/assets/alias.txt", tarfile.SYMTYPE, "logo.txt"),
    ])

    [skill] = install(str(archive), folders=folders, path="pack-1.0").installed

    assert (skill.path / "assets" / "logo.txt").read_bytes() == b"LOGO"
    alias = skill.path / "assets" / "alias.txt"
    assert not alias.is_symlink() and alias.read_bytes() == b"LOGO"  # a link inside becomes a copy
    record = read_record(skill.path)
    assert record is not None and record.kind == "archive" and record.path == "pack-1.0"


def test_malicious_tars_are_refused_before_anything_is_written(tmp_path: Path, folders: dict[str, Path]) -> None:
    evil = make_tar(tmp_path / "evil.tar", [
        ("evil/SKILL.md", skill_bytes("evil")),
        ("../escaped.txt", b"x"),
        ("/tmp/absolute.txt", b"x"),
        special("evil/passwd", tarfile.SYMTYPE, "../../../../etc/passwd"),
        special("evil/hard", tarfile.LNKTYPE, "/etc/shadow"),
        special("evil/null", tarfile.CHRTYPE),
        special("evil/pipe", tarfile.FIFOTYPE),
    ])

    reasons = refused(folders, evil)

    assert "../escaped.txt contains '..' (it would be written outside the skill)" in reasons
    assert "/tmp/absolute.txt has an absolute path" in reasons
    assert "evil/passwd is a link that points outside the skill (to ../../../../etc/passwd)" in reasons
    assert "evil/hard is a link that points outside the skill (to /etc/shadow)" in reasons
    assert "evil/null is a device file, not a file or a folder" in reasons
    assert "evil/pipe is a FIFO, not a file or a folder" in reasons
    assert not (tmp_path / "escaped.txt").exists()


def test_an_oversize_archive_is_refused(tmp_path: Path, folders: dict[str, Path]) -> None:
    big = make_tar(tmp_path / "big.tar.gz", [("big/SKILL.md", skill_bytes("big")), ("big/blob.bin", b"\0" * 3000)])
    limits = InstallLimits(max_file_bytes=2000, max_total_bytes=10_000, max_files=10)
    [reason] = refused(folders, big, limits=limits)
    assert reason == "big/blob.bin is 3,000 bytes; the limit for one file is 1.95 KiB (2,000 bytes)"

    many = make_tar(tmp_path / "many.tar", [("many/SKILL.md", skill_bytes("many")),
                                            *((f"many/f{i}", b"12345") for i in range(12))])
    assert refused(folders, many, limits=limits) == ["the source holds more than 10 entries, the limit"]


def test_a_zip_bomb_that_lies_about_its_size_is_stopped(tmp_path: Path, folders: dict[str, Path]) -> None:
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("bomb/SKILL.md", skill_bytes("bomb"))
        zipped.writestr("bomb/zeros.bin", b"\0" * 50_000)
    # Rewrite the index to claim a tiny size: unpacking must not believe it and write 50 kB.
    data = archive.read_bytes()
    size = (50_000).to_bytes(4, "little")
    data = data.replace(size, (10).to_bytes(4, "little"))
    archive.write_bytes(data)

    reasons = refused(folders, archive, limits=InstallLimits(max_file_bytes=1000))

    # zipfile reads no more than the index claims, so the lie ends as a bad checksum: refused all the same.
    [reason] = reasons
    assert reason.endswith("not a readable zip archive (Bad CRC-32 for file 'bomb/zeros.bin')")


def test_links_count_the_bytes_they_copy(tmp_path: Path, folders: dict[str, Path]) -> None:
    # One 1 MiB file and 40 links to it: each link is installed as a copy, so 42 MiB would be written.
    members: list[tarfile.TarInfo | tuple[str, bytes]] = [("links/SKILL.md", skill_bytes("links")),
                                                          ("links/big.bin", b"\0" * MIB)]
    members += [special(f"links/hard{i}", tarfile.LNKTYPE, "links/big.bin") for i in range(20)]
    members += [special(f"links/soft{i}", tarfile.SYMTYPE, "big.bin") for i in range(20)]
    archive = make_tar(tmp_path / "links.tar", members)
    assert archive.stat().st_size < 1.1 * MIB

    reasons = refused(folders, archive, limits=InstallLimits(max_total_bytes=4 * MIB))

    assert reasons == ["the source unpacks to more than 4 MiB (4,194,304 bytes), the limit"]
    assert not any(tmp_path.rglob("hard*"))


def test_a_link_is_counted_as_the_file_it_copies_and_a_link_to_nothing_is_refused(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    good = make_tar(tmp_path / "good.tar", [
        ("chain/SKILL.md", skill_bytes("chain")),
        special("chain/a", tarfile.SYMTYPE, "b"),  # a link to a link that comes later in the archive
        special("chain/b", tarfile.LNKTYPE, "chain/assets/data.txt"),
        ("chain/assets/data.txt", b"DATA"),
    ])
    [skill] = install(str(good), folders=folders).installed
    assert (skill.path / "a").read_bytes() == (skill.path / "b").read_bytes() == b"DATA"
    assert not (skill.path / "a").is_symlink()

    over = InstallLimits(max_file_bytes=3)
    assert "chain/a is a link to a file of 4 bytes; the limit for one file is 3 bytes" in refused(
        folders, good, limits=over, force=True)

    bad = make_tar(tmp_path / "bad.tar", [
        ("dangling/SKILL.md", skill_bytes("dangling")),
        ("dangling/assets/x.txt", b"x"),
        special("dangling/ghost", tarfile.SYMTYPE, "nowhere.txt"),
        special("dangling/loop1", tarfile.SYMTYPE, "loop2"),
        special("dangling/loop2", tarfile.SYMTYPE, "loop1"),
        special("dangling/folder", tarfile.SYMTYPE, "assets"),
    ])
    assert refused(folders, bad) == [
        "dangling/ghost is a link to dangling/nowhere.txt, which is not a file in the source",
        "dangling/loop1 is a link in a loop of links",
        "dangling/loop2 is a link in a loop of links",
        "dangling/folder is a link to a folder; copy the folder instead",
    ]


def refused_with_peak(folders: dict[str, Path], archive: Path, **options: Any) -> tuple[list[str], int]:
    """The install's refusals of ``archive``, and the most memory Python held while it read it."""
    tracemalloc.start()
    try:
        reasons = refused(folders, archive, **options)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return reasons, peak


def test_a_tar_is_read_entry_by_entry_and_stops_at_the_count_limit(tmp_path: Path, folders: dict[str, Path]) -> None:
    archive = hostile_entries(tmp_path / "many.tar.gz", lambda i: tarfile.TarInfo(f"many/f{i}"))

    reasons, peak = refused_with_peak(folders, archive, limits=FEW_ENTRIES)

    assert reasons == ["the source holds more than 200 entries, the limit"]
    # Reading the whole index first took 57 MiB for 100,000 entries (7 MiB for these); one entry at a
    # time, up to the limit, 0.2 MiB.
    assert peak < MIB, f"peak {peak / MIB:.1f} MiB"


FEW_ENTRIES = InstallLimits(max_files=200)
"""A count limit far below what the archives of the tests below hold (10,000 entries): reading them
whole, as the installer once did, holds 4 to 7 MiB; stopping at the limit, under 0.2 MiB."""


def hostile_entries(path: Path, member: Any) -> Path:
    """10,000 entries made by ``member(i)``, headers only, in well under 1 MB of .tar.gz."""
    headers = b"".join(member(i).tobuf(tarfile.USTAR_FORMAT) for i in range(10_000))
    path.write_bytes(gzip.compress(headers + b"\0" * 1024, compresslevel=6))
    return path


HOSTILE = {
    "dot-dot names": (lambda i: tarfile.TarInfo(f"../f{i}"), "../f0 contains '..' (it would be written outside the skill)"),
    "absolute names": (lambda i: tarfile.TarInfo(f"/tmp/f{i}"), "/tmp/f0 has an absolute path"),
    "links out": (lambda i: special(f"many/l{i}", tarfile.SYMTYPE, "/etc/passwd"),
                  "many/l0 is a link that points outside the skill (to /etc/passwd)"),
    "hard links out": (lambda i: special(f"many/h{i}", tarfile.LNKTYPE, "../../etc/shadow"),
                       "many/h0 is a link that points outside the skill (to ../../etc/shadow)"),
    "FIFOs": (lambda i: special(f"many/p{i}", tarfile.FIFOTYPE), "many/p0 is a FIFO, not a file or a folder"),
    "devices": (lambda i: special(f"many/d{i}", tarfile.CHRTYPE), "many/d0 is a device file, not a file or a folder"),
    "root entries": (lambda i: special("./", tarfile.DIRTYPE), None),
    "folders": (lambda i: special(f"many/d{i}", tarfile.DIRTYPE), None),
}


@pytest.mark.parametrize("kind", HOSTILE)
def test_every_tar_entry_counts_toward_the_limit_whatever_becomes_of_it(
    kind: str, tmp_path: Path, folders: dict[str, Path]
) -> None:
    # Refused or skipped entries used to cost nothing: 100,000 FIFOs, `../` names or links to
    # /etc/passwd were all read (60-77 MiB) and each added its reason (a 5-7 MB error message).
    member, first_problem = HOSTILE[kind]
    archive = hostile_entries(tmp_path / "hostile.tar.gz", member)
    assert archive.stat().st_size < MIB

    tracemalloc.start()
    try:
        with pytest.raises(InstallRefusedError) as caught:
            install(str(archive), folders=folders, limits=FEW_ENTRIES)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    reasons = caught.value.reasons
    assert reasons[0] == "the source holds more than 200 entries, the limit"
    if first_problem is None:
        assert reasons == reasons[:1]
    else:
        # The first few problems by name, then how many more: not one line per entry.
        assert reasons[1] == first_problem
        assert 3 <= len(reasons) <= 12
        assert reasons[-1].startswith("and ") and reasons[-1].endswith(" more problems"), reasons[-1]
    assert len(str(caught.value)) < 4096, f"{len(str(caught.value)):,} characters"
    # tracemalloc counts the whole process: a worker of the suite's other threads (servers, loops) may
    # allocate during the install. Reading every entry holds 4 to 7 MiB; this bound still tells it apart.
    assert peak < 2 * MIB, f"peak {peak / MIB:.1f} MiB"
    assert snapshot(folders["user"]) in (["<absent>"], [])


def test_a_zip_of_refused_entries_names_a_few_and_counts_the_rest(tmp_path: Path, folders: dict[str, Path]) -> None:
    archive = tmp_path / "escape.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for i in range(2000):  # within the count its index may claim: every entry is refused
            zipped.writestr(f"../f{i}", b"")

    reasons = refused(folders, archive)

    assert reasons[0] == "../f0 contains '..' (it would be written outside the skill)"
    assert reasons[-1] == f"and {2000 - len(reasons) + 1:,} more problems"
    assert len("; ".join(reasons)) < 4096


def test_a_long_name_is_shortened_in_a_refusal(tmp_path: Path, folders: dict[str, Path]) -> None:
    # A pax name has no length limit of its own: the reason keeps its start and its end.
    long = "../" + "x" * 100_000
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(tarfile.TarInfo(long))
    archive = tmp_path / "long.tar"
    archive.write_bytes(raw.getvalue())

    [reason] = refused(folders, archive)

    assert len(reason) < 400
    assert reason.startswith("../xxx") and reason.endswith("contains '..' (it would be written outside the skill)")


def test_a_folder_counts_its_refused_entries_too(tmp_path: Path, folders: dict[str, Path]) -> None:
    source = write(tmp_path / "src", "pipes")
    for i in range(50):
        os.mkfifo(source / f"pipe{i:02}")

    reasons = refused(folders, source, limits=InstallLimits(max_files=20))

    assert reasons[0] == "the source holds more than 20 entries, the limit"
    assert reasons[1] == "pipe00 is a FIFO, not a file or a folder"
    assert reasons[-1].startswith("and ") and reasons[-1].endswith(" more problems")
    assert len(reasons) <= 12


def test_a_zip_is_refused_from_its_central_directory_count(tmp_path: Path, folders: dict[str, Path]) -> None:
    archive = tmp_path / "many.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for i in range(30_000):
            zipped.writestr(f"many/f{i}", b"")

    reasons, peak = refused_with_peak(folders, archive)

    assert reasons == ["the source holds 30,000 entries (its index says); the limit is 2,000"]
    assert peak < 4 * MIB, f"peak {peak / MIB:.1f} MiB"  # the index is not read into memory


def test_a_zip_whose_end_record_lies_about_its_count_is_refused_from_its_index(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    # The end record says 1 entry; ZipFile reads every entry the central directory holds, whatever
    # the count (100,000 here, 78 MiB), so the entries are counted in the index itself, up to the limit.
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w") as zipped:
        for i in range(100_000):
            zipped.writestr(f"{i:x}", b"")
    data = bytearray(raw.getvalue())
    del raw
    end = data.rfind(b"PK\x05\x06")
    struct.pack_into("<HH", data, end + 8, 1, 1)
    struct.pack_into("<QQ", data, data.rfind(b"PK\x06\x06") + 24, 1, 1)  # zip64: past 65,535 entries
    archive = tmp_path / "liar.zip"
    archive.write_bytes(data)
    del data

    reasons, peak = refused_with_peak(folders, archive)

    assert reasons == ["the source holds more than 2,000 entries, the limit"]
    assert peak < 4 * MIB, f"peak {peak / MIB:.1f} MiB"


def test_a_header_larger_than_the_limits_is_not_read(tmp_path: Path, folders: dict[str, Path]) -> None:
    # A pax header (here a 32 MiB comment) is read into memory whole by tarfile; gzip makes it 32 KB.
    info = tarfile.TarInfo("huge/SKILL.md")
    data = skill_bytes("huge")
    info.size = len(data)
    info.pax_headers = {"comment": "x" * (32 * MIB)}
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(info, io.BytesIO(data))
    archive = tmp_path / "huge.tar.gz"
    archive.write_bytes(gzip.compress(raw.getvalue()))
    del raw, info
    assert archive.stat().st_size < MIB

    tracemalloc.start()
    try:
        reasons = refused(folders, archive, limits=InstallLimits(max_total_bytes=MIB, max_files=10))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert reasons == ["the archive unpacks to more than 1.05 MiB (1,103,872 bytes) of headers and data, more "
                       "than any source within the limits needs"]
    assert peak < 8 * MIB, f"peak {peak / MIB:.1f} MiB"


def test_a_zip_installs_and_an_invalid_skill_md_in_it_is_refused(tmp_path: Path, folders: dict[str, Path]) -> None:
    good = tmp_path / "good.zip"
    with zipfile.ZipFile(good, "w") as zipped:
        zipped.writestr("zipped/SKILL.md", skill_bytes("zipped"))
    assert [s.name for s in install(str(good), folders=folders).installed] == ["zipped"]

    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as zipped:
        zipped.writestr("broken/SKILL.md", b"---\nname: broken\n---\nno description\n")
    assert refused(folders, bad) == ["broken: Missing required field in frontmatter: description"]


# --- git ----------------------------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo / "skills", "changelog", body="Version one.")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "one")
    git(repo, "tag", "v1")
    write(repo / "skills", "changelog", body="Version two.")
    # A hook in the source must never run: it would leave a file behind.
    hook = repo / "skills" / "changelog" / "scripts" / "post-checkout"
    hook.parent.mkdir()
    hook.write_text(f"#!/bin/sh\ntouch {tmp_path / 'HOOK-RAN'}\n")
    hook.chmod(0o755)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "two")
    return repo


def test_a_git_repository_installs_at_a_path_and_a_ref(repo: Path, tmp_path: Path, folders: dict[str, Path]) -> None:
    url = repo.as_uri()

    [latest] = install(url, folders=folders, path="skills/changelog").installed
    assert "Version two." in (latest.path / "SKILL.md").read_text()
    record = read_record(latest.path)
    assert record is not None and record.kind == "git" and record.source == url
    assert record.commit == git(repo, "rev-parse", "HEAD")

    first_commit = git(repo, "rev-parse", "v1")
    for ref in ("v1", first_commit):
        [old] = install(url, folders=folders, path="skills/changelog", ref=ref, force=True).installed
        assert "Version one." in (old.path / "SKILL.md").read_text()
        assert read_record(old.path).commit == first_commit  # type: ignore[union-attr]
    assert not (tmp_path / "HOOK-RAN").exists()


def test_git_refusals_say_why_and_write_nothing(repo: Path, tmp_path: Path, folders: dict[str, Path]) -> None:
    url = repo.as_uri()
    assert any("no-such-ref" in r for r in refused(folders, url, ref="no-such-ref"))
    assert any("git clone failed" in r for r in refused(folders, (tmp_path / "nowhere.git").as_uri()))
    assert refused(folders, url, path="../outside") == ["--path '../outside' must not contain '..'"]
    # A repository whose tree links out is checked as any archive is.
    (repo / "skills" / "changelog" / "leak").symlink_to("/etc/passwd")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "leak")
    assert refused(folders, url, path="skills/changelog") == [
        "skills/changelog/leak is a link that points outside the skill (to /etc/passwd)"
    ]


# --- real collections: their names and descriptions, in their layouts -----------------------------

COLLECTIONS = {c["repository"]: c["skills"] for c in json.loads(
    (Path(__file__).parents[1] / "skills" / "skillmd" / "data" / "skill_collections.json").read_text())["collections"]}


def lay_out(root: Path, folder: str, skills: list[dict[str, str]]) -> None:
    for skill in skills:
        path = root / folder / skill["name"] / "SKILL.md"
        path.parent.mkdir(parents=True)
        path.write_text(skill_text({"name": skill["name"], "description": skill["description"]}, "Steps."))


def test_anthropics_skills_from_git_installs_all_but_the_one_with_an_over_long_description(
        tmp_path: Path, folders: dict[str, Path]) -> None:
    # The layout of anthropics/skills: skills/<name>/, a template at the top, the spec beside it.
    repo = tmp_path / "anthropics-skills"
    skills = COLLECTIONS["anthropics/skills"]
    lay_out(repo, "skills", [s for s in skills if s["name"] != "template-skill"])
    [template] = [s for s in skills if s["name"] == "template-skill"]
    (repo / "template").mkdir()
    (repo / "template" / "SKILL.md").write_text(skill_text(template, "Steps."))
    (repo / "spec").mkdir()
    (repo / "spec" / "agent-skills-spec.md").write_text("See agentskills.io.")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "skills")

    # At the repository's top only the template is found, and it is not valid where it stands: the
    # refusal says where the skills are.
    reasons = refused(folders, repo.as_uri())
    assert "template: Directory name 'template' must match skill name 'template-skill'" in reasons
    assert "left out skills/: no SKILL.md (17 skills inside); to install them, give --path skills" in reasons
    assert "left out spec/: no SKILL.md" in reasons

    result = install(repo.as_uri(), folders=folders, path="skills")

    assert len(result.installed) == 16
    [claude_api] = result.refused
    assert claude_api.name == "claude-api" and claude_api.folder == "claude-api"
    assert claude_api.reasons == ["Description exceeds 1024 character limit (1068 chars)"]
    assert not (folders["user"] / "claude-api").exists()
    assert sorted(p.name for p in folders["user"].iterdir()) == sorted(s.name for s in result.installed)


def test_openai_skills_in_hidden_folders_are_named_and_installed_when_pointed_at(
        tmp_path: Path, folders: dict[str, Path]) -> None:
    # openai/skills keeps its skills under skills/.curated/, skills/.experimental/ and skills/.system/.
    source = tmp_path / "openai-skills"
    skills = COLLECTIONS["openai/skills"]
    lay_out(source / "skills", ".curated", skills[:7])
    lay_out(source / "skills", ".experimental", skills[7:8])
    lay_out(source / "skills", ".system", skills[8:])
    (source / "skills" / ".github").mkdir()  # hidden and holding no skill: not worth a word

    assert refused(folders, source, path="skills") == [
        "no SKILL.md found: give a skill folder, or a folder of skill folders",
        "left out skills/.curated/: a hidden folder of 7 skills; to install them, give --path skills/.curated",
        "left out skills/.experimental/: a hidden folder of 1 skill; to install it, give --path skills/.experimental",
        "left out skills/.system/: a hidden folder of 2 skills; to install them, give --path skills/.system",
    ]

    result = install(str(source), folders=folders, path="skills/.curated")

    assert [s.name for s in result.installed] == sorted(s["name"] for s in skills[:7])
    assert result.refused == [] and result.skipped == []


def test_a_collection_says_which_folders_it_left_out(tmp_path: Path, folders: dict[str, Path]) -> None:
    write(tmp_path / "pack", "kept")
    write(tmp_path / "pack" / ".drafts", "draft")
    (tmp_path / "pack" / "docs").mkdir()

    result = install(str(tmp_path / "pack"), folders=folders)

    assert [s.name for s in result.installed] == ["kept"]
    assert result.skipped == [
        ".drafts/: a hidden folder of 1 skill; to install it, give --path .drafts",
        "docs/: no SKILL.md",
    ]


# --- uninstall ----------------------------------------------------------------------------------


def test_uninstall_removes_a_user_skill_and_refuses_the_others(tmp_path: Path, folders: dict[str, Path]) -> None:
    write(folders["bundled"], "shipped")
    write(folders["project"], "local")
    write(folders["bundled"], "notes")
    install(str(write(tmp_path / "src", "notes", metadata={"trigger_config": {"in_minutes": 5}})), folders=folders)

    result = uninstall("notes", folders=folders)
    assert result.scheduled and result.revealed == f"bundled {folders['bundled'] / 'notes'}"
    assert not (folders["user"] / "notes").exists()

    with pytest.raises(InstallRefusedError, match="'shipped' is a bundled skill"):
        uninstall("shipped", folders=folders)
    with pytest.raises(InstallRefusedError, match="'local' is a project skill .* remove it from the project"):
        uninstall("local", folders=folders)
    with pytest.raises(InstallRefusedError, match="no skill named 'ghost'"):
        uninstall("ghost", folders=folders)
    assert (folders["project"] / "local" / "SKILL.md").exists()
