"""SKILL.md skills at scale: discovery, its memory, the trigger index and matching.

Generates N skill folders in a temporary directory, like a large shared skills
repository: frontmatter with a description, 3 keywords, a two-word phrase and a verb
each; one skill in 20 with a regular expression pattern, one in 10 with a
``references/`` file; bodies of about 40 lines. Then measures:

- discovery (``discover``: frontmatter only, bodies never read), wall time;
- discovery's memory with tracemalloc, in a separate run since tracing slows it:
  the peak while scanning, and what the catalog keeps afterwards;
- index build (``SkillIndex`` over every skill);
- matching: per message, median and p95, over messages that name triggers and
  messages that name none;
- disclosure (``disclose``: matching, plus reading the bodies of the matches), per message;
- the worst case for patterns: one message of the longest length matched (and longer) against
  N skills that each have their own pattern, written to backtrack (``(\\w+\\s?)+word$``...);
  RE2 runs each in linear time, so this is N searches of 2,000 characters;
- full validation of every file (what ``skills validate`` on the folder costs).

The files are in the page cache (just written): figures are for a warm cache.

Then matching's quality, on public collections' names and descriptions
(tests/skills/skillmd/test_match_eval.py): top-1 and top-3 on the collections the ranker was
tuned on and on those held out from tuning, the everyday messages that matched a skill, and how
often the model gets the choice (close matches) with the right skill among the candidates. With
the ``semantic`` extra installed, the same with the semantic ranker, and its cost as the engine
wires it (``SKILLS_MATCH_MEANING``) against the N skills after a restart: the vector file read, the
catalog's index built from it, one message (encoded for real; the N skills' vectors are stand-ins,
as encoding 10,000 descriptions takes minutes), and the resident memory it adds.

The machine may be shared: each timing is a median of repetitions, and the load average is printed.

    .venv/bin/python -m bench.skillmd [--skills 10000] [--messages 200] [--seed 7] [--json] [--no-semantic]
    .venv/bin/python -m bench.skillmd --patterns-only     # the worst case for patterns alone (~10 s)
    .venv/bin/python -m bench.skillmd --quality-only      # the evaluation alone
    .venv/bin/python -m bench.skillmd --quality-only --parts tuning,held_out   # deciding a change: unseen unread
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from adapters import skill_folders
from adapters.skill_folders import FOLDERS, discover, validate_path
from skills.skillmd import Catalog, SkillFile, SkillIndex, SkillManifest, disclose
from skills.skillmd.matching import unsure
from skills.skillmd.patterns import MAX_MATCH_CHARS

LEXICAL_BUDGET_MS = 10.0
"""Lexical matching of one message against 10,000 skills."""
SEMANTIC_BUDGET_MS = 25.0
SEMANTIC_RSS_BUDGET_MIB = 100.0
VECTORS = Path(".cache/bench-skillmd-vectors.npz")
"""The evaluation skills' vectors, kept between runs (encoding 1,570 descriptions takes a minute of CPU)."""

VERBS = ["review", "deploy", "triage", "summarize", "translate", "schedule", "audit", "draft", "classify",
         "archive", "refactor", "benchmark", "index", "search", "format", "migrate", "monitor", "notify"]
FILLER = ("please could you help me with the thing from yesterday and also check what we said about "
          "the plan for next week before the meeting starts because I am not sure it is right").split()


def vocabulary(rng: random.Random, size: int) -> list[str]:
    """Distinct pronounceable words, so keywords collide the way real ones rarely do."""
    consonants, vowels = "bcdfghklmnprstvz", "aeiou"
    words: set[str] = set()
    while len(words) < size:
        length = rng.randint(2, 4)
        words.add("".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(length)))
    return sorted(words)


def generate(root: Path, count: int, rng: random.Random) -> list[list[str]]:
    """Write ``count`` skills under ``root``; return each skill's keywords (for building messages)."""
    words = vocabulary(rng, max(2000, count // 2))
    body = "\n".join(f"{i}. Step {i}: do the {rng.choice(FILLER)} part carefully and report back." for i in range(40))
    triggers: list[list[str]] = []
    for i in range(count):
        name = f"skill-{i:05d}"
        keywords = rng.sample(words, 3)
        phrase = " ".join(rng.sample(words, 2))
        lines = [
            "---",
            f"name: {name}",
            f"description: Handles {keywords[0]} and {keywords[1]} requests. Use it when the user mentions {phrase}.",
            "triggers:",
            f"  keywords: [{', '.join(keywords)}, '{phrase}']",
            f"  verbs: [{rng.choice(VERBS)}]",
        ]
        if i % 20 == 0:
            lines.append(f"  patterns: ['\\b{keywords[2]}-\\d{{3,}}\\b']")
        lines += ["metadata:", f"  priority: {rng.randint(0, 5)}", "---", f"# {name}", body, ""]
        folder = root / name
        folder.mkdir()
        (folder / "SKILL.md").write_text("\n".join(lines))
        if i % 10 == 0:
            (folder / "references").mkdir()
            (folder / "references" / "guide.md").write_text("More detail.\n" * 20)
        triggers.append([*keywords, phrase])
    return triggers


def messages(triggers: list[list[str]], count: int, rng: random.Random) -> list[str]:
    """Half name one or two triggers in an ordinary sentence, half name none."""
    made = []
    for i in range(count):
        sentence = rng.sample(FILLER, rng.randint(8, 25))
        if i % 2 == 0:
            for _ in range(rng.randint(1, 2)):
                sentence.insert(rng.randrange(len(sentence)), rng.choice(rng.choice(triggers)))
        made.append(" ".join(sentence).capitalize() + "?")
    return made


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def per_call(action: Callable[[str], Any], inputs: list[str], repeats: int) -> dict[str, float]:
    """Median and p95 of one call, in milliseconds."""
    samples, cpu = [], []
    for _ in range(repeats):
        for item in inputs:
            started, on_cpu = time.perf_counter_ns(), time.process_time_ns()
            action(item)
            samples.append((time.perf_counter_ns() - started) / 1e6)
            cpu.append((time.process_time_ns() - on_cpu) / 1e6)
    samples.sort()
    # CPU time: what the call costs when it has a core, which wall time on a busy machine hides.
    return {"median_ms": statistics.median(samples), "p95_ms": samples[int(0.95 * (len(samples) - 1))],
            "max_ms": samples[-1], "calls": len(samples), "cpu_median_ms": statistics.median(cpu)}


def forget_discoveries() -> None:
    """Empty discovery's cache of unchanged files, so the next discovery reads and parses every file."""
    skill_folders.forget_scans()


HOSTILE = [r"(\w+\s?)+{w}$", r"(a|aa)+{w}", r"(.*{w}){{8}}x", r"\b{w}-\d{{3,}}\b", r"^(\s*\w+)*{w}\b"]
"""Patterns that backtrack for ever in Python's ``re`` on a sentence that almost matches."""


def patterned_skills(count: int, rng: random.Random) -> list[SkillFile]:
    """``count`` skills built in memory, each with its own pattern (none shared, so none is searched once for two)."""
    words = vocabulary(rng, count)
    made = []
    for i, word in enumerate(words[:count]):
        manifest = SkillManifest.model_validate({
            "name": f"pattern-{i:05d}", "description": "A skill with one hostile pattern.",
            "triggers": {"patterns": [HOSTILE[i % len(HOSTILE)].format(w=word)]},
        })
        made.append(SkillFile(manifest=manifest, path=Path(f"/bench/pattern-{i:05d}/SKILL.md"), source="user",
                              mtime=datetime(2025, 1, 1, tzinfo=UTC)))
    return made


def worst_case_match(count: int, rng: random.Random) -> dict[str, Any]:
    """One message as long as matching reads, and one 100 times longer, against ``count`` patterns."""
    compile_s, skills = timed(lambda: patterned_skills(count, rng))
    index = SkillIndex(skills)
    sentence = "remind me in five minutes to drink water please now! aaaaaaaaaaaaaaaaaaaaaaaa! "
    longest = (sentence * (MAX_MATCH_CHARS // len(sentence) + 1))[:MAX_MATCH_CHARS]
    index.match(longest)  # RE2 builds each pattern's DFA lazily, at its first search
    figures = {"patterns": count, "compile_s": compile_s, "message_chars": len(longest)}
    for label, message in (("at_cap", longest), ("over_cap", longest * 100)):
        figures[label] = per_call(lambda m: index.match(m), [message], repeats=5)
    return figures


def traced_discovery(root: Path) -> dict[str, float]:
    forget_discoveries()
    gc.collect()
    tracemalloc.start()
    catalog = discover(project=root)
    retained, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert catalog.skills
    return {"peak_mib": peak / 2**20, "retained_mib": retained / 2**20}


def run(count: int, message_count: int, seed: int, semantic: bool = True) -> dict[str, Any]:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="bench-skillmd-") as tmp:
        root = Path(tmp)
        generate_s, triggers = timed(lambda: generate(root, count, rng))
        sample = messages(triggers, message_count, rng)

        discover(project=root)  # one untimed pass, so every run reads from the page cache
        forget_discoveries()
        discover_s, catalog = timed(lambda: discover(project=root))
        cached_s, _ = timed(lambda: discover(project=root))
        catalog_: Catalog = catalog
        assert len(catalog_.skills) == count and not catalog_.problems, catalog_.problems[:3]
        memory = traced_discovery(root)
        index_s, index = timed(lambda: SkillIndex(catalog_.skills.values()))
        hits = sum(1 for m in sample if index.match(m))
        match = per_call(lambda m: index.match(m), sample, repeats=5)
        # A fresh catalog per disclosure would measure discovery again; its index is built once, like a server's.
        catalog_.index  # noqa: B018 - build the cached index before timing
        prompt = per_call(lambda m: disclose(m, catalog_, FOLDERS), sample, repeats=1)
        validate_s, _ = timed(lambda: [validate_path(p) for p in sorted(root.iterdir())])
        meaning = semantic_cost(root, [keywords[0] for keywords in triggers]) if semantic else None
    worst = worst_case_match(count, rng)
    return {
        "skills": count,
        "messages": message_count,
        "messages_with_a_match": hits,
        "generate_s": generate_s,
        "discover_s": discover_s,
        "discover_per_skill_us": discover_s / count * 1e6,
        "discover_again_s": cached_s,
        **{f"discover_{k}": v for k, v in memory.items()},
        "index_build_s": index_s,
        "match": match,
        "disclose": prompt,
        "validate_all_s": validate_s,
        "worst_case_patterns": worst,
        "semantic_cost": meaning,
        "python": platform.python_version(),
        "machine": f"{platform.system()} {platform.machine()}",
        "load": " ".join(f"{x:.1f}" for x in os.getloadavg()),
    }


def report(figures: dict[str, Any]) -> None:
    m, d = figures["match"], figures["disclose"]
    rows = [
        ("skills generated", f"{figures['skills']:,}", f"{figures['generate_s']:.2f} s to write"),
        ("discovery (frontmatter only)", f"{figures['discover_s']:.2f} s",
         f"{figures['discover_per_skill_us']:.0f} µs per skill, every file parsed, warm page cache; "
         f"target 1 s for 10,000"),
        ("discovery again, nothing changed", f"{figures['discover_again_s']:.2f} s",
         "one stat a file; unchanged files not read again (cached by mtime, size, inode)"),
        ("discovery memory, peak", f"{figures['discover_peak_mib']:.1f} MiB", "tracemalloc"),
        ("catalog kept in memory", f"{figures['discover_retained_mib']:.1f} MiB", "tracemalloc, after discovery"),
        ("index build", f"{figures['index_build_s'] * 1000:.0f} ms", "keywords, verbs, names; patterns compiled at load"),
        ("match one message, median", f"{m['median_ms']:.3f} ms",
         f"p95 {m['p95_ms']:.3f} ms, max {m['max_ms']:.3f} ms, {m['calls']} calls, CPU median "
         f"{m['cpu_median_ms']:.3f} ms; budget {LEXICAL_BUDGET_MS:.0f} ms at 10,000 skills"),
        ("disclose one message, median", f"{d['median_ms']:.3f} ms",
         f"p95 {d['p95_ms']:.3f} ms (match + read the matched bodies)"),
        ("validate every file", f"{figures['validate_all_s']:.2f} s", "whole files, every rule"),
    ]
    semantic = figures.get("semantic_cost")
    if semantic:
        sm = semantic["match"]
        rows += [
            ("with meaning: vector file read", f"{semantic['load_s'] * 1000:.0f} ms",
             f"{semantic['vectors_loaded']:,} vectors, {semantic['file_mib']:.1f} MiB, checked; the model loaded "
             f"before it in {semantic['model_s'] * 1000:.0f} ms (SKILLS_MATCH_MEANING, a restart; stand-ins for "
             f"the skills' vectors, see semantic_cost's doc)"),
            ("with meaning: index build", f"{semantic['index_build_s'] * 1000:.0f} ms",
             f"Catalog.index, every vector from the file ({semantic['encoded']} encoded); on words alone "
             f"{semantic['index_build_words_s'] * 1000:.0f} ms"),
            ("with meaning: match, median", f"{sm['median_ms']:.1f} ms",
             f"p95 {sm['p95_ms']:.1f} ms, {sm['calls']} calls, CPU median {sm['cpu_median_ms']:.1f} ms; through "
             f"Catalog.index, the message encoded each time; budget "
             f"{SEMANTIC_BUDGET_MS:.0f} ms (the same messages on words alone: "
             f"{semantic['words_only']['median_ms']:.2f} ms, CPU {semantic['words_only']['cpu_median_ms']:.2f} ms)"),
            ("with meaning: memory added", f"{semantic['rss_added_mib']:.0f} MiB",
             f"resident: the model, {semantic['skills']:,} vectors in the cache and the index; budget "
             f"{SEMANTIC_RSS_BUDGET_MIB:.0f} MiB"),
        ]
    print(f"SKILL.md figures: {figures['skills']:,} skills, {figures['messages']} messages "
          f"({figures['messages_with_a_match']} matched), Python {figures['python']}, {figures['machine']}, "
          f"load average {figures['load']}")
    for what, value, note in rows:
        print(f"  {what:<32} {value:>12}   {note}")
    report_worst_case(figures["worst_case_patterns"])
    report_quality(figures["quality"])


PARTS = ("tuning", "held_out", "unseen")


def quality(index: Any, parts: tuple[str, ...] = PARTS) -> dict[str, Any]:
    """Matching judged on public skills' names and descriptions (tests/skills/skillmd/data), per part: the
    right skill first, among the three candidates handed to a model, and among the candidates when the
    first is not sure; the first sure (used with no one asked) and right; everyday messages that bring a
    skill in (a sure first candidate) and that are offered candidates (a model would say none)."""
    from tests.skills.skillmd.test_match_eval import COLLECTIONS, MESSAGES

    figures: dict[str, Any] = {}
    for part in parts:
        positives, negatives = MESSAGES[part]["positives"], MESSAGES[part]["negatives"]
        first = top3 = chosen = offered = sure = sure_right = 0
        wrong = []
        for message, expected in positives:
            found = index.match(message, limit=3)
            names = [m.name for m in found]
            first += bool(names) and names[0] in expected
            top3 += any(name in expected for name in names)
            close = [m.name for m in unsure(found)]
            offered += bool(close)
            if found and found[0].sure:
                sure += 1
                sure_right += names[0] in expected
            # The model picks among the candidates; it can be right only if the right one is there.
            chosen += (any(n in expected for n in close) if close else bool(names) and names[0] in expected)
            if not any(name in expected for name in names):
                wrong.append((message, names, expected))
        everyday = {m: index.match(m) for m in negatives}
        figures[part] = {
            "collections": [c["repository"] for c in COLLECTIONS if c["part"] == part],
            "skills": sum(len(c["skills"]) for c in COLLECTIONS if c["part"] == part),
            "messages": len(positives), "top1": first / len(positives), "top3": top3 / len(positives),
            "sure": sure, "sure_right": sure_right,
            "model_chooses": offered, "right_within_reach": chosen / len(positives),
            "everyday": len(negatives),
            "everyday_matched": {m: [x.name for x in f] for m, f in everyday.items() if f and f[0].sure},
            "everyday_offered": sum(bool(f) for f in everyday.values()),
            "wrong": wrong,
        }
    return figures


def report_evaluation(figures: dict[str, Any], label: str, catalog: int) -> None:
    for part, f in figures.items():
        print(f"evaluation, {label}, {part.replace('_', '-')} ({len(f['collections'])} collections, {f['skills']:,} "
              f"skills; all {catalog:,} searched): top-1 {f['top1']:.1%} of {f['messages']}, top-3 {f['top3']:.1%}; "
              f"sure {f['sure']} ({f['sure_right']} right); candidates left to the model {f['model_chooses']}, "
              f"right skill sure or among them {f['right_within_reach']:.1%}; everyday messages brought in "
              f"{len(f['everyday_matched'])} of {f['everyday']}, offered candidates {f['everyday_offered']}")
        for message, found, expected in f["wrong"]:
            print(f"  not in the top 3: {message!r}: {', '.join(found) or 'nothing'}; wanted {' or '.join(expected)}")
        for message, names in f["everyday_matched"].items():
            print(f"  everyday brought in: {message!r}: {', '.join(names)}")


def semantic_cost(root: Path, words: list[str], repeats: int = 5) -> dict[str, Any] | None:
    """Matching by meaning as the engine wires it (``SKILLS_MATCH_MEANING``, ``catalog_meaning``),
    against the skills generated under ``root``, as a worker finds them after a restart: the model
    loaded, the vector file read, the catalog discovered with it and its index built with no skill
    encoded, one message matched; and the resident memory the ranker adds (the model, the vectors in
    the cache and in the index, an encoding's work), measured around it alone: discovery and the
    lexical index cost the same without it. None without the ``semantic`` extra.

    The skills' vectors in the file are stand-ins (random unit vectors, keyed by the digest of each
    skill's name and description and sealed with the key beside the file, as the engine's are): encoding
    10,000 descriptions takes minutes, once, and does not change what a message or a restart costs."""
    from bench.harness import rss_mib

    try:
        import numpy as np

        from adapters.semantic import Encoder, VectorCache, digest, model_identity
        from adapters.vector_file import vectors_key, write_vectors
    except ImportError:
        return None

    with tempfile.TemporaryDirectory(prefix="bench-skillmd-data-") as data:
        path = Path(data) / "skill-vectors.npz"
        words_only = discover(project=root)
        texts = [f"{skill.name.replace('-', ' ')}: {skill.manifest.description}"
                 for skill in words_only.skills.values()]
        # 384: all-MiniLM-L6-v2's width (a file of another would be refused, and the figures show the skills encoded).
        stand_ins = np.random.default_rng(7).standard_normal((len(texts), 384))
        stand_ins /= np.linalg.norm(stand_ins, axis=1, keepdims=True)
        write_vectors(path, model_identity(), [digest(text) for text in texts], stand_ins, key=vectors_key(path))
        del stand_ins
        lexical_s, _ = timed(lambda: words_only.index)
        gc.collect()
        before = rss_mib(os.getpid())
        model_s, encoder = timed(Encoder)
        load_s, cache = timed(lambda: VectorCache(encoder, path=path))
        vectors = cache.vectors(texts)  # what the index keeps beside the cache
        encoder.encode(["one message, encoded once so the model's pages are read"])
        added = rss_mib(os.getpid()) - before
        del vectors
        catalog = discover(project=root, semantic=cache)
        index_s, _ = timed(lambda: catalog.index)
        # Every message names words some skills carry, so each is encoded and compared.
        sample = [f"please help me with the {words[n]} and the {words[n * 3]} before the meeting" for n in range(1, 9)]
        catalog.index.match(sample[0])
        match = per_call(lambda m: catalog.index.match(m), sample, repeats=repeats)
        lexical = per_call(lambda m: words_only.index.match(m), sample, repeats=repeats)
        return {"skills": len(catalog.skills), "vectors_loaded": len(cache), "encoded": cache.encoded,
                "model_s": model_s, "load_s": load_s, "file_mib": path.stat().st_size / 2**20,
                "index_build_s": index_s, "index_build_words_s": lexical_s, "match": match,
                "words_only": lexical, "rss_added_mib": added}


def semantic_index(index_skills: list[SkillFile]) -> Any:
    """The evaluation's index with the semantic ranker, its vectors kept in :data:`VECTORS`."""
    from adapters.semantic import Encoder, VectorCache

    return SkillIndex(index_skills, semantic=VectorCache(Encoder(), path=VECTORS))


def run_quality(semantic: bool, parts: tuple[str, ...] = PARTS) -> dict[str, Any]:
    """The evaluation of ``parts``: while a change is decided, the tuning and held-out parts alone (``--parts``);
    the unseen part is read once, with the change made."""
    from tests.skills.skillmd.test_match_eval import catalog, index

    figures: dict[str, Any] = {"catalog": len(index()), "lexical": quality(index(), parts)}
    if semantic:
        try:
            figures["semantic"] = quality(semantic_index(catalog()), parts)
        except ImportError:
            figures["semantic"] = None
    return figures


def report_quality(figures: dict[str, Any]) -> None:
    report_evaluation(figures["lexical"], "words", figures["catalog"])
    if figures.get("semantic"):
        report_evaluation(figures["semantic"], "words and meaning", figures["catalog"])
    elif "semantic" in figures:
        print("evaluation with meaning: the 'semantic' extra is not installed")


def report_worst_case(w: dict[str, Any]) -> None:
    print(f"match 1 message against {w['patterns']:,} skills: {w['at_cap']['median_ms']:.0f} ms "
          f"(median of {w['at_cap']['calls']}, max {w['at_cap']['max_ms']:.0f} ms; every skill with its own "
          f"backtracking pattern, message of {w['message_chars']:,} characters, the most matching reads)")
    print(f"  the same message 100 times longer: {w['over_cap']['median_ms']:.0f} ms (only the first "
          f"{w['message_chars']:,} characters are matched); compiling the {w['patterns']:,} patterns: "
          f"{w['compile_s']:.2f} s")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.skillmd", description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--patterns-only", action="store_true",
                        help="only the worst case for patterns: no skill files written, no discovery")
    parser.add_argument("--quality-only", action="store_true", help="only the evaluation on public collections")
    parser.add_argument("--no-semantic", action="store_true", help="leave the semantic ranker out")
    parser.add_argument("--parts", default=",".join(PARTS),
                        help=f"the evaluation's parts, comma-separated, of {', '.join(PARTS)}: decide a change on "
                             f"tuning,held_out, then read unseen once")
    args = parser.parse_args(argv)
    parts = tuple(args.parts.split(","))
    if not parts or any(part not in PARTS for part in parts):
        parser.error(f"--parts: comma-separated, of {', '.join(PARTS)}")
    if args.quality_only:
        found = run_quality(not args.no_semantic, parts)
        if args.json:
            json.dump(found, sys.stdout, indent=2)
            print()
        else:
            report_quality(found)
        return
    if args.patterns_only:
        worst = worst_case_match(args.skills, random.Random(args.seed))
        if args.json:
            json.dump(worst, sys.stdout, indent=2)
            print()
        else:
            report_worst_case(worst)
        return
    figures = run(args.skills, args.messages, args.seed, semantic=not args.no_semantic)
    figures["quality"] = run_quality(not args.no_semantic, parts)
    if args.json:
        json.dump(figures, sys.stdout, indent=2)
        print()
    else:
        report(figures)


if __name__ == "__main__":
    # numpy's BLAS would start a thread a core for products of a few hundred numbers: on a shared
    # machine that costs more than it saves (set before numpy is first imported).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    main()
