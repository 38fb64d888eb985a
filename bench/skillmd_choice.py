"""The decision after the ranker: a real model chooses among the candidates, or none (issue 50, item 2).

For each message of the matching evaluation (tests/skills/skillmd/test_match_eval.py: the public collections'
names and descriptions, about 1,800 skills; its messages by part), the ranker's first five candidates; a sure
first (``SkillMatch.sure``: named, a declared trigger, or first on words and meaning alike) is used with no
model; otherwise the model is asked (``skills.skillmd.choice``: the names and descriptions, an enum of the
names and ``none``). Per part: the right skill decided (sure, or chosen), the model asked how often, wrong
choices, and everyday messages that ended with a skill (sure, or chosen) though none is for them.

The endpoint is the chat's: ``SKILLS_LLM_BASE_URL``, ``SKILLS_LLM_MODEL`` (bench/local_model.sh start prints
them). Read ``--parts unseen`` once per change to the ranker or the choice: it is the held-out figure.

    bench/local_model.sh start && eval "$(bench/local_model.sh env)"
    .venv/bin/python -m bench.skillmd_choice [--parts tuning,held_out] [--meaning] [--limit N] [--budget S]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from typing import Any

from bench.harness import percentile
from skills.skillmd.choice import Candidate, choice_request, read_choice
from starter import exit_process

PARTS = ("tuning", "held_out", "unseen")


def index(meaning: bool) -> tuple[Any, dict[str, str]]:
    """The evaluation's index (by words, or by words and meaning) and each skill's description, by name."""
    from tests.skills.skillmd.test_match_eval import catalog
    from tests.skills.skillmd.test_match_eval import index as evaluation_index

    skills = catalog()
    descriptions = {skill.name: skill.manifest.description for skill in skills}
    if not meaning:
        return evaluation_index(), descriptions
    from bench.skillmd import semantic_index

    return semantic_index(skills), descriptions


async def ask(client: Any, model: str, message: str, candidates: list[Candidate]) -> tuple[str | None, int, float]:
    messages, response_format = choice_request(message, candidates)
    began = time.perf_counter()
    answer = await client.chat.completions.create(model=model, messages=messages, response_format=response_format,
                                                  temperature=0, max_tokens=40)
    tokens = answer.usage.total_tokens if answer.usage else 0
    return read_choice(answer.choices[0].message.content or "", candidates), tokens, time.perf_counter() - began


def interleaved(positives: list[Any], negatives: list[Any]) -> list[tuple[Any, bool]]:
    """The part's messages in one order, everyday ones spread among the others (each kind in its own order),
    so a run cut short by ``--budget`` has figures for both kinds."""
    every = [(i / len(positives), 0, (m, True)) for i, m in enumerate(positives)]
    every += [((i + .5) / len(negatives), 1, (m, False)) for i, m in enumerate(negatives)]
    return [item for _, _, item in sorted(every, key=lambda entry: entry[:2])]


async def part_figures(client: Any, model: str, idx: Any, descriptions: dict[str, str], part: str,
                       limit: int | None, until: float | None = None, progress: bool = False) -> dict[str, Any]:
    """The part's figures; with ``until`` (a ``time.monotonic()``), no message is begun after it (the figures
    are of those done: ``messages`` and ``everyday`` say how many)."""
    from tests.skills.skillmd.test_match_eval import MESSAGES

    positives, negatives = MESSAGES[part]["positives"][:limit], MESSAGES[part]["negatives"][:limit]
    total = (len(positives), len(negatives))
    seconds: list[float] = []
    counts = {"right": 0, "sure": 0, "sure_right": 0, "asked": 0, "chosen_right": 0, "chose_none": 0,
              "within_reach": 0, "tokens": 0, "everyday_decided": 0, "everyday_asked": 0}
    wrong: list[tuple[str, str | None, list[str]]] = []

    async def decide(message: str) -> tuple[str | None, bool, list[str]]:
        found = idx.match(message, limit=5)
        names = [m.name for m in found]
        if not found:
            return None, False, names
        if found[0].sure:
            return found[0].name, False, names
        candidates = [Candidate(m.name, descriptions.get(m.name, "")) for m in found]
        chosen, tokens, took = await ask(client, model, message, candidates)
        counts["tokens"] += tokens
        seconds.append(took)
        return chosen, True, names

    done = [0, 0]
    for item, positive in interleaved(positives, negatives):
        if until is not None and time.monotonic() > until:
            break
        if positive:
            message, expected = item
            decided, asked, names = await decide(message)
            counts["asked"] += asked
            counts["within_reach"] += any(n in expected for n in names)
            if not asked and decided is not None:
                counts["sure"] += 1
                counts["sure_right"] += decided in expected
            if asked:
                counts["chosen_right"] += decided in expected
                counts["chose_none"] += decided is None
            counts["right"] += decided in expected
            if decided not in expected:
                wrong.append((message, decided, expected))
        else:
            decided, asked, _ = await decide(item)
            counts["everyday_asked"] += asked
            counts["everyday_decided"] += decided is not None
        done[not positive] += 1
        if progress:
            print(f"  {part}: {done[0]}/{total[0]} messages, {done[1]}/{total[1]} everyday; {len(seconds)} choices, "
                  f"p50 {percentile(seconds, .5):.1f} s", file=sys.stderr, flush=True)
    return {"messages": done[0], "everyday": done[1], "of": total, **counts, "wrong": wrong,
            "p50": percentile(seconds, .5), "p95": percentile(seconds, .95)}


async def main(parts: list[str], meaning: bool, limit: int | None, budget: float | None = None,
               progress: bool = False) -> None:
    import openai

    base, model = os.environ.get("SKILLS_LLM_BASE_URL"), os.environ.get("SKILLS_LLM_MODEL")
    if not base or not model:
        raise SystemExit("set SKILLS_LLM_BASE_URL and SKILLS_LLM_MODEL (bench/local_model.sh env)")
    client = openai.AsyncOpenAI(base_url=base, api_key=os.environ.get("SKILLS_LLM_API_KEY") or "none",
                                timeout=1800, max_retries=0)
    idx, descriptions = index(meaning)
    ranker = "words and meaning" if meaning else "words"
    until = time.monotonic() + budget if budget is not None else None
    for part in parts:
        f = await part_figures(client, model, idx, descriptions, part, limit, until, progress)
        n = f["messages"]
        if (n, f["everyday"]) != f["of"]:
            print(f"{part}: stopped by --budget after {n} of {f['of'][0]} messages and {f['everyday']} of "
                  f"{f['of'][1]} everyday ones (in the part's order, everyday ones spread among the others)")
        if not n:
            continue
        print(f"{part} ({ranker}, {model}): right skill decided {f['right']}/{n} = {f['right'] / n:.1%} "
              f"(sure {f['sure']}, {f['sure_right']} right; model asked {f['asked']}, chose right {f['chosen_right']}, "
              f"chose none {f['chose_none']}; right one among the 5 candidates {f['within_reach']}); everyday "
              f"ending with a skill {f['everyday_decided']}/{f['everyday']} (model asked {f['everyday_asked']}); "
              f"a choice p50 {f['p50']:.1f} s, p95 {f['p95']:.1f} s, {f['tokens']:,} tokens", flush=True)
        for message, decided, expected in f["wrong"]:
            print(f"  {message!r}: {decided or 'none'}; wanted {' or '.join(expected)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="tuning,held_out", help=f"comma-separated, of {', '.join(PARTS)}")
    parser.add_argument("--meaning", action="store_true", help="rank by words and meaning (the semantic extra)")
    parser.add_argument("--limit", type=int, default=None, help="the first N messages of each kind per part")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds: begin no message after them (the figures say how many were done)")
    parser.add_argument("--progress", action="store_true", help="a line on stderr after each message")
    args = parser.parse_args()
    chosen = args.parts.split(",")
    if set(chosen) - set(PARTS):
        parser.error(f"--parts: of {', '.join(PARTS)}")
    asyncio.run(main(chosen, args.meaning, args.limit, args.budget, args.progress))
    exit_process(0)
