"""Whose words decide: the engine's pure readers of a chat message, on messages written blind (issue 52).

``bench/data/chat_words.json`` holds 39 messages (negations, quoted results, unusual phrasings, questions), each
with the effect its writer expects, written by someone who never saw the code; they are never edited. The
owner's skills are the ones the messages speak of: "stand up" (weekdays at 9), "drink water" (every hour) and
"morning inbox summary" (every day at 7). No model is asked: what is measured is what the engine decides
whatever a model answers.

- offered: the change actions the words allow (``skills.chat.intent.allowed_actions``) beyond the one expected
  (an act the owner did not ask for that a model may then choose), and the expected one left out;
- fields: what the engine's readers set in the model's place (a pause or resume, ``enabled_said``; a time alone,
  ``moved_to``; a schedule read for sure, ``skills.when.phrasing``) against what is expected: set and wrong, or
  set where the owner asked for none;
- slip: a model that pauses the skill the message is about (the 1.5B model did, on "don't pause..."), or
  changes the skill the words exclude: whether the engine's change still carries it.

    .venv/bin/python -m bench.chat_words [--show] [--part tuned|held-out]

``--part`` splits the file as ``bench/phrasings.py`` does: a change is set on the tuned part (even-numbered
cases) and the held-out part (odd-numbered) is read once after it.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.phrasings import NOW, cron, part, same
from skills.chat import intent
from skills.chat.intent import allowed_actions, enabled_said, moved_to
from skills.llm.structured import structured_calls
from skills.spec.models import Skill, TriggerConfig
from skills.when.phrasing import plain_reminder, read_schedule

DATA = Path(__file__).parent / "data" / "chat_words.json"
ZONE = "Europe/Berlin"
ALL = ["create", "update", "delete", "list", "reply"]
OFFERED = ["memory_store_skill", "memory_update_skill", "memory_delete_skill", "memory_list_skills"]
EFFECT = {"update": "update", "delete": "delete", "propose": "create", "none": None}


def _skill(skill_id: int, name: str, schedule: str) -> Skill:
    moment = datetime(2027, 3, 1, tzinfo=UTC)
    return Skill(id=skill_id, agent_id="main", name=name, instructions="x", trigger_type="cron",
                 trigger_config=TriggerConfig(schedule=schedule, timezone=ZONE), created_at=moment, updated_at=moment)


SKILLS = [_skill(1, "stand up", "0 9 * * 1-5"), _skill(2, "drink water", "0 * * * *"),
          _skill(3, "morning inbox summary", "0 7 * * *")]
NAMES = [skill.name for skill in SKILLS]
CRONS = {skill.name: skill.trigger_config.schedule for skill in SKILLS if skill.trigger_config}


def own(text: str) -> str:
    """The words the engine reads as the owner's (all of them, before ``own_words`` existed)."""
    reader = getattr(intent, "own_words", None)
    return reader(text) if reader is not None else text


def trigger_right(trigger: dict[str, Any], want: dict[str, Any]) -> bool:
    """A trigger the engine set, against the one expected (by its first three fires from the pinned now)."""
    if want.get("schedule") is None and len(want) == 1 and "schedule" in want:
        return False  # the writer expects doubt: any sure reading is wrong
    if "schedule" in want:
        got = trigger.get("schedule")
        return got is not None and same(cron(got), cron(want["schedule"]))
    if "every" in want:
        return trigger.get("interval_minutes") == want["every"] or (
            trigger.get("schedule") is not None and want["every"] % 60 == 0
            and same(cron(trigger["schedule"]), cron(f"0 */{want['every'] // 60} * * *")))
    if "in_minutes" in want:
        return trigger.get("in_minutes") == want["in_minutes"]
    if "at_local" in want:
        day, clock = want["at_local"].split()
        hour, minute = map(int, clock.split(":"))
        wanted = NOW.replace(day=NOW.day + (1 if day == "tomorrow" else 0), hour=hour, minute=minute)
        return "at" in trigger and same([datetime.fromisoformat(trigger["at"])], [wanted])
    return False


def check(case: dict[str, Any]) -> dict[str, list[str]]:
    """What the engine's readers do with one message: each finding under its kind."""
    text, want = case["text"], case["expect"]
    effect, skill = EFFECT[want["effect"]], want.get("skill")
    found: dict[str, list[str]] = {"unasked offered": [], "left out": [], "field wrong": [], "field unasked": [],
                                   "slip kept": []}
    allowed = [a for a in allowed_actions([text], ALL, NAMES) if a in ("create", "update", "delete")]
    found["unasked offered"] += [a for a in allowed if a != effect]
    if effect is not None and effect not in allowed:
        found["left out"].append(effect)
    # A pause or resume, and a time alone: set by the engine on a model's update, where one is allowed.
    enabled = enabled_said(text) if "update" in allowed else None
    if enabled is not None:
        if effect != "update" or want.get("enabled") is None:
            found["field unasked"].append(f"enabled={enabled}")
        elif enabled != want["enabled"]:
            found["field wrong"].append(f"enabled={enabled}")
    for name, stored in CRONS.items():
        moved = moved_to(text, stored) if "update" in allowed else None
        if moved is None or (effect == "update" and name != skill):
            continue  # the engine moves only the skill the update names
        target = want.get("trigger") or {}
        if effect != "update" or "schedule" not in target:
            found["field unasked"].append(f"{name} moved to {moved}")
        elif not same(cron(moved), cron(target["schedule"])):
            found["field wrong"].append(f"{name} moved to {moved}")
    # A schedule read for sure: a plain reminder proposed with no model, or a rhythm with its time put in the
    # place of a model's new skill's (``activities.phrase_check.read_instead``).
    reminder = plain_reminder(text, NOW, ZONE)
    reading = reminder.reading if reminder is not None else read_schedule(own(text), NOW, ZONE)
    if reading is not None and not reading.ambiguous and (reminder is not None or "create" in allowed and (
            reading.repeats and reading.time_given)):
        if effect != "create" or not want.get("trigger"):
            found["field unasked"].append(f"read {reading.trigger}")
        elif not trigger_right(reading.trigger, want["trigger"]):
            found["field wrong"].append(f"read {reading.trigger}")
    # A slip of the model's: it pauses the skill the message is about, or changes one the words exclude.
    if "update" in allowed and want.get("enabled") is None:
        for target in SKILLS if skill is None else [s for s in SKILLS if s.name == skill]:
            answer = {"action": "update", "skill_id": target.name, "change": {"enabled": False}, "reply": "Paused."}
            read = structured_calls(json.dumps(answer), OFFERED, allowed_actions([text], ALL, NAMES), SKILLS, text)
            if read and read[0] and json.loads(read[0][0].arguments).get("enabled") is False:
                found["slip kept"].append(f"paused {target.name}")
    if effect == "update" and skill is not None:
        for other in (s for s in SKILLS if s.name != skill and s.name.split()[-1] in own(text).lower()):
            answer = {"action": "update", "skill_id": other.name, "change": {"enabled": False}, "reply": "Done."}
            read = structured_calls(json.dumps(answer), OFFERED, allowed_actions([text], ALL, NAMES), SKILLS, text)
            if read and read[0]:
                found["slip kept"].append(f"changed {other.name}, which the words exclude")
    return found


def main() -> None:
    cases, name = part(json.loads(DATA.read_text()), sys.argv)
    show = "--show" in sys.argv
    totals: dict[str, int] = {}
    clean = 0
    for case in cases:
        found = check(case)
        for kind, items in found.items():
            totals[kind] = totals.get(kind, 0) + bool(items)
        clean += not any(found.values())
        if show and any(found.values()):
            print(f"  [{case['kind']}] {case['text'][:70]!r}: "
                  + "; ".join(f"{kind}: {', '.join(items)}" for kind, items in found.items() if items))
    print(f"{len(cases)} messages (bench/data/chat_words.json, written blind; part: {name}), now {NOW:%a %Y-%m-%d %H:%M %Z}")
    print(f"clean {clean}  " + "  ".join(f"{kind} {count}" for kind, count in totals.items()))


if __name__ == "__main__":
    main()
