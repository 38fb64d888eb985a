"""The chat against a real model: is what it proposes right, does it claim what did not happen, how long.

Thirty-four messages a new user sends (reminders, recurring tasks, Agent-tier tasks, tasks for a tool that
does not exist, a list, changes, a delete, "yes"), each with the answer expected of the engine, run as
`skills chat` turns through the real engine: a dev server, the worker in this process with the bundled
playbooks, and the OpenAI-compatible endpoint the environment names (``SKILLS_LLM_BASE_URL``,
``SKILLS_LLM_MODEL``, ``SKILLS_LLM_API_KEY``, ``SKILLS_LLM_TIMEOUT``: config/settings.py). Three skills
exist before the first turn (``stand up``, ``drink water``, ``morning inbox summary``), so the list,
change and delete turns have something to act on whatever came before.

Per message: whether the outcome is right (the proposal's or change's trigger, judged by its next fires
against the expected ones, and its tier; or nothing proposed where nothing should be), whether the reply
claims an act that had no effect (a false claim), the path (``no model`` for a plain reminder read
without one), tokens and seconds. Then the totals against the targets: at least 80 % right, no false
claim, every turn within 60 s.

    bench/local_model.sh start            # or any endpoint: export SKILLS_LLM_BASE_URL=... SKILLS_LLM_MODEL=...
    SKILLS_LLM_BASE_URL=http://127.0.0.1:18080/v1 SKILLS_LLM_MODEL=qwen .venv/bin/python -m bench.chat_real
    .venv/bin/python -m bench.chat_real --dry-run     # the plumbing, against a model that only says "ok"

``--set held-out`` runs 14 other messages, written before the engine's checks of a model's answers and never
tuned on. ``--set needs`` runs the tasks of ``bench/data/chat_needs.json`` (issue 52: tasks that need a tool the
catalog lacks, some partly doable, a few wholly; written by the lead before the needs check existed, never edited
or tuned on), judged on whether the engine declined or narrowed each and named what is missing. ``--no-plain`` turns off the no-model reading of plain reminders (SKILLS_CHAT_PLAIN_REMINDERS), to measure
the model alone; ``--only 1,2,5`` runs some messages (and what they depend on).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.harness import started
from config.settings import Settings
from skills.messages.chat import ChatReply
from skills.spec.models import SkillSpec, TriggerConfig
from skills.when.calendar import upcoming
from starter import exit_process

TURN_TARGET = 60.0
RIGHT_TARGET = 0.8
TURN_LIMIT = 300.0
"""A turn still going after this long is recorded as failed, and the bench goes on."""

PLAN = [{"id": "step1", "toolName": "outbox_send_message", "parameters": {"message": "Time to stand up!"}}]
EXISTING = [
    {"name": "stand up", "instructions": "Remind the user to stand up.", "trigger_config": {"schedule": "0 9 * * 1-5"},
     "execution_plan": PLAN},
    {"name": "drink water", "instructions": "Remind the user to drink water.", "trigger_config": {"schedule": "0 * * * *"},
     "execution_plan": [{"id": "step1", "toolName": "outbox_send_message", "parameters": {"message": "Drink water!"}}]},
    {"name": "morning inbox summary", "instructions": "List the last 20 messages with outbox_list_messages and send "
     "the user a summary of at most 5 bullets with outbox_send_message.", "trigger_config": {"schedule": "0 7 * * *"},
     "required_tools": ["outbox_list_messages", "outbox_send_message"], "max_steps": 6},
]


@dataclass(frozen=True)
class Expect:
    """The answer expected of a turn."""

    effect: str
    """``propose`` (a new skill), ``update`` (made or proposed), ``delete`` (proposed), ``created`` or ``deleted``
    (the yes made it), ``none`` (nothing proposed, nothing changed), ``needs`` (``--set needs``: :func:`judge_needs`)."""
    trigger: dict[str, Any] | None = None
    """The trigger meant: a cron ``schedule``, ``in_minutes``, ``at_local`` ("tomorrow 15:00"), or ``every``
    (minutes between fires, whatever the phase)."""
    tier: str | None = None
    skill: str | None = None
    """The existing skill an update or a delete is about."""
    enabled: bool | None = None


@dataclass(frozen=True)
class Message:
    text: str
    expect: Expect
    kind: str
    session: str = ""
    """Turns of one session follow each other ("yes" answers the turn before it)."""
    missing: tuple[str, ...] = ()
    """``--set needs``: what the data says is missing (reported beside the engine's words, not judged by them)."""


MESSAGES = [
    Message("remind me in 10 minutes to check the oven", Expect("propose", {"in_minutes": 10}, "direct"),
            "reminder", "oven"),
    Message("yes", Expect("created", {"in_minutes": 10}, "direct"), "yes", "oven"),
    Message("remind me in 2 hours to call the bank", Expect("propose", {"in_minutes": 120}, "direct"), "reminder"),
    Message("tomorrow at 3pm remind me to go to the dentist", Expect("propose", {"at_local": "tomorrow 15:00"},
                                                                     "direct"), "reminder"),
    Message("remind me in half an hour to take the pizza out", Expect("propose", {"in_minutes": 30}, "direct"),
            "reminder"),
    Message("tomorrow at 8am remind me to take out the bins", Expect("propose", {"at_local": "tomorrow 08:00"},
                                                                     "direct"), "reminder"),
    Message("every weekday at 9 remind me to stretch", Expect("propose", {"schedule": "0 9 * * 1-5"}, "direct"),
            "recurring"),
    Message("remind me every hour to rest my eyes", Expect("propose", {"every": 60}, "direct"), "recurring"),
    Message("every monday at 8am remind me to plan the week", Expect("propose", {"schedule": "0 8 * * 1"}, "direct"),
            "recurring"),
    Message("every 2 hours remind me to drink a glass of water", Expect("propose", {"every": 120}, "direct"),
            "recurring"),
    Message("on the first of every month at 9am remind me to pay the rent",
            Expect("propose", {"schedule": "0 9 1 * *"}, "direct"), "recurring"),
    Message("daily at 7:30pm remind me to water the plants", Expect("propose", {"schedule": "30 19 * * *"}, "direct"),
            "recurring"),
    Message("every sunday at 6pm remind me to call grandma", Expect("propose", {"schedule": "0 18 * * 0"}, "direct"),
            "recurring"),
    Message("every morning at 6 remind me to meditate", Expect("propose", {"schedule": "0 6 * * *"}, "direct"),
            "recurring"),
    Message("every evening at 10pm send me the message: time to wind down",
            Expect("propose", {"schedule": "0 22 * * *"}, "direct"), "recurring"),
    Message("every morning at 7 read my outbox messages and send me a summary of what is urgent",
            Expect("propose", {"schedule": "0 7 * * *"}, "agent"), "agent"),
    Message("every friday at 5pm look at the messages I got this week and send me a short digest",
            Expect("propose", {"schedule": "0 17 * * 5"}, "agent"), "agent"),
    Message("every day at 6pm check my messages and tell me only if something needs an answer",
            Expect("propose", {"schedule": "0 18 * * *"}, "agent"), "agent"),
    Message("every monday at 8am send me a summary of my open github issues", Expect("none"), "missing tool"),
    Message("every day at 8am tell me the weather in Berlin", Expect("none"), "missing tool"),
    Message("post a tweet for me every day at noon saying good afternoon", Expect("none"), "missing tool"),
    # Issue 52: the two tasks the 1.5B model promised, and ones written beside them (the needs check's tuning set).
    Message("every morning at 7 email my boss the sales figures", Expect("none"), "missing tool"),
    Message("check the train delays every weekday at 7am and warn me if my line is late", Expect("none"),
            "missing tool"),
    Message("every evening at 8 text my sister good night", Expect("none"), "missing tool"),
    Message("every saturday at 10 order my groceries from the supermarket", Expect("none"), "missing tool"),
    # Ordinary English the service list misread as services (Outlook, Asana): reminders.
    Message("every monday at 9 send me the message: write the weekly outlook", Expect("propose", {"schedule": "0 9 * * 1"},
                                                                                     "direct"), "recurring"),
    Message("every day at 7am remind me to do my yoga asana", Expect("propose", {"schedule": "0 7 * * *"}, "direct"),
            "recurring"),
    Message("what skills do I have?", Expect("none"), "list"),
    Message("when does the stand up reminder fire next?", Expect("none"), "list"),
    Message("move the stand up reminder to 9:30", Expect("update", {"schedule": "30 9 * * 1-5"}, skill="stand up"),
            "change"),
    Message("pause the morning inbox summary", Expect("update", skill="morning inbox summary", enabled=False), "change"),
    Message("change the drink water reminder to every 30 minutes", Expect("update", {"every": 30}, skill="drink water"),
            "change"),
    Message("delete the drink water reminder", Expect("delete", skill="drink water"), "delete", "bye"),
    Message("yes", Expect("deleted", skill="drink water"), "yes", "bye"),
]

HELD_OUT = [
    Message("every morning at 9 post my standup notes in the team slack channel", Expect("none"), "missing tool"),
    Message("send me the bitcoin price every hour", Expect("none"), "missing tool"),
    Message("turn off the living room lights every night at 11", Expect("none"), "missing tool"),
    Message("every friday at 4pm check my google calendar for next week and send me a summary", Expect("none"),
            "missing tool"),
    Message("which reminders are set up?", Expect("none"), "list"),
    Message("show me my skills", Expect("none"), "list"),
    Message("every weekday at 5pm send me the message: time to go home",
            Expect("propose", {"schedule": "0 17 * * 1-5"}, "direct"), "recurring"),
    Message("every sunday evening at 8 look through this week's messages and send me the three most important ones",
            Expect("propose", {"schedule": "0 20 * * 0"}, "agent"), "agent"),
    Message("every 15 minutes check my messages and tell me if someone asked for me by name",
            Expect("propose", {"every": 15}, "agent"), "agent"),
    Message("make the stand up reminder fire at 10 instead", Expect("update", {"schedule": "0 10 * * 1-5"},
                                                                     skill="stand up"), "change"),
    Message("disable the drink water reminder", Expect("update", skill="drink water", enabled=False), "change"),
    Message("change the morning inbox summary to 8am", Expect("update", {"schedule": "0 8 * * *"},
                                                             skill="morning inbox summary"), "change"),
    Message("remove the stand up reminder", Expect("delete", skill="stand up"), "delete", "rm"),
    Message("yes", Expect("deleted", skill="stand up"), "yes", "rm"),
]
"""Messages written before the engine's checks of a small model's answers (which were tuned on MESSAGES), kept
apart to measure them on what they were not tuned on (``--set held-out``)."""

CLAIM = re.compile(
    r"\b(?:i(?:'ve| have| just)?\s+(?:now\s+)?(?:stored|created|scheduled|set up|set|added|saved|deleted|removed|"
    r"updated|changed|moved|paused|registered)\b|(?:has|have) been (?:stored|created|scheduled|set up|set|added|"
    r"saved|deleted|removed|updated|changed|moved|paused|registered)\b|\bstored\b|\ball set\b|\bis (?:now )?set\b|"
    r"\bdone\b|\bi will remind you\b|\bi'll remind you\b|\bsuccessfully\b|\breminder (?:is )?set\b)",
    re.IGNORECASE)
"""Words that say an act happened: stored, created, scheduled, done, "I'll remind you"."""


NEEDS_DATA = Path(__file__).parent / "data" / "chat_needs.json"
DECLINED = ("No tool here can ", "Only part of this can be done")
"""How the engine's answer to a task with unmet needs begins (``skills.chat.needs.unmet_reply``)."""
NEEDS_TARGET = 0.9


def needs_messages() -> list[Message]:
    """The held-out tasks of :data:`NEEDS_DATA`, as messages: ``doable`` ``none`` or ``part`` expect the engine to
    decline or narrow, naming what is missing; ``all`` expects no decline (and its trigger, when one is given)."""
    items = json.loads(NEEDS_DATA.read_text())
    return [Message(item["text"], Expect("needs", item.get("expect_trigger")), f"needs {item['doable']}",
                    missing=tuple(item.get("missing") or ())) for item in items]


@dataclass
class Outcome:
    number: int
    message: Message
    right: bool = False
    why: str = ""
    false_claim: bool = False
    path: str = "model"
    tokens: int = 0
    seconds: float = 0.0
    reply: str = ""
    effects: list[str] = field(default_factory=list)


def expected_fires(trigger: dict[str, Any], now: datetime, zone: str) -> TriggerConfig:
    if "in_minutes" in trigger:
        return TriggerConfig(at=now + timedelta(minutes=trigger["in_minutes"]))
    if "at_local" in trigger:
        day, clock = trigger["at_local"].split()
        from zoneinfo import ZoneInfo

        local = now.astimezone(ZoneInfo(zone))
        date = local.date() + timedelta(days=1 if day == "tomorrow" else 0)
        hour, minute = (int(x) for x in clock.split(":"))
        return TriggerConfig(at=datetime(date.year, date.month, date.day, hour, minute, tzinfo=ZoneInfo(zone)))
    return TriggerConfig(schedule=trigger["schedule"], timezone=zone)


def fires_of(spec: SkillSpec, now: datetime, count: int = 12) -> list[datetime]:
    return [f.at.astimezone(UTC) for f in upcoming(spec, anchor=now, now=now, count=count) if not f.skipped]


def judge_trigger(data: dict[str, Any], expect: Expect, now: datetime, zone: str) -> tuple[bool, str]:
    """Whether a proposed or changed skill (``data``: its fields as stored) fires as expected, and its tier."""
    try:
        spec = SkillSpec.model_validate({"agent_id": "x", "name": "x", "instructions": "x", "trigger_type": "cron",
                                         **{k: v for k, v in data.items() if k in SkillSpec.model_fields}})
    except ValueError as e:
        return False, f"unreadable skill: {e}"
    if expect.tier is not None and spec.tier != expect.tier:
        return False, f"tier {spec.tier}, expected {expect.tier}"
    if expect.enabled is not None and spec.enabled != expect.enabled:
        return False, f"enabled {spec.enabled}, expected {expect.enabled}"
    if expect.trigger is None:
        return True, ""
    described = spec.trigger_config.describe() if spec.trigger_config else "no trigger"
    got = fires_of(spec.model_copy(update={"enabled": True}), now)
    if not got:
        return False, f"{described}: no fire"
    if "every" in expect.trigger:
        gaps = {round((b - a).total_seconds() / 60) for a, b in zip(got, got[1:], strict=False)}
        return gaps == {expect.trigger["every"]}, f"{described}: every {sorted(gaps)} min"
    want_spec = spec.model_copy(update={"trigger_config": expected_fires(expect.trigger, now, zone), "enabled": True,
                                        "business_days_only": False, "skip_holidays": None, "max_runs": None})
    want = fires_of(want_spec, now)
    if "in_minutes" in expect.trigger:
        return len(got) == 1 and abs((got[0] - want[0]).total_seconds()) <= 180, f"{described}"
    return [f.replace(second=0, microsecond=0) for f in got] == want[:len(got)] and len(got) == len(want), described


def judge(outcome: Outcome, reply: ChatReply, now: datetime, zone: str, skills_before: dict[str, Any]) -> None:
    expect = outcome.message.expect
    changes = reply.changes
    proposals = reply.proposals
    outcome.effects = ([f"{c.get('action')} {c.get('name')!r}" for c in changes]
                       + [f"proposed #{p.id} {p.tool}" for p in proposals])
    effect = bool(changes or proposals)
    outcome.false_claim = bool(CLAIM.search(reply.reply)) and not effect
    if not reply.ok:
        outcome.why = f"turn failed: {reply.reply[:160]}"
        return
    if expect.effect == "none":
        outcome.right, outcome.why = not effect, "nothing proposed" if not effect else "something was proposed"
        return
    if expect.effect == "needs":
        judge_needs(outcome, reply, now, zone)
        return
    if expect.effect == "propose":
        new = [p for p in proposals if p.tool == "memory_store_skill"]
        if len(new) != 1:
            outcome.why = f"{len(new)} new skills proposed"
            return
        outcome.right, outcome.why = judge_trigger(new[0].arguments.get("data") or {}, expect, now, zone)
        return
    if expect.effect in ("created", "deleted"):
        made = [c for c in changes if c.get("action") == expect.effect]
        if len(made) != 1:
            outcome.why = f"{len(made)} skills {expect.effect}"
            return
        if expect.effect == "deleted":
            outcome.right, outcome.why = made[0].get("name") == expect.skill, str(made[0].get("name"))
            return
        data = {"trigger_config": made[0].get("trigger"), "execution_plan": PLAN if made[0].get("tier") == "direct"
                else None, "required_tools": [] if made[0].get("tier") == "direct" else ["x"]}
        outcome.right, outcome.why = judge_trigger(data, expect, now, zone)
        return
    target = skills_before.get(expect.skill or "")
    if expect.effect == "delete":
        deletes = [p for p in proposals if p.tool == "memory_delete_skill"]
        outcome.right = len(deletes) == 1 and target is not None and deletes[0].skill_id == target["id"]
        outcome.why = f"{len(deletes)} deletes proposed"
        return
    # update: made at once (a narrowing change) or proposed (a widening one)
    updated = [c for c in changes if c.get("action") == "updated" and c.get("name") == expect.skill]
    patched = [p for p in proposals if p.tool == "memory_update_skill"]
    if updated:
        data = {**(target or {}).get("spec", {}), "trigger_config": updated[-1].get("trigger"),
                "enabled": updated[-1].get("enabled")}
    elif patched:
        data = patched[-1].arguments.get("patch") or {}
    else:
        outcome.why = f"{expect.skill!r} not changed"
        return
    outcome.right, outcome.why = judge_trigger(data, expect, now, zone)


def judge_needs(outcome: Outcome, reply: ChatReply, now: datetime, zone: str) -> None:
    """A task of ``--set needs``: one not wholly doable is right when the engine declined it (nothing proposed) or
    narrowed it (a proposal, and the engine's reply says the part left out), naming what is missing; a doable one
    when it was not declined (and, with a trigger expected, proposed with it)."""
    declined = reply.said_by == "engine" and reply.reply.startswith(DECLINED[0]) and not reply.proposals
    narrowed = DECLINED[1] in reply.reply and "Left out: no tool here can" in reply.reply and bool(reply.proposals)
    if outcome.message.kind != "needs all":
        outcome.right = declined or narrowed
        outcome.why = ("declined" if declined else "narrowed" if narrowed else
                       "proposed with nothing said missing" if reply.proposals or reply.changes else
                       "not declined by the engine (the model's reply)")
        outcome.why += f"; missing per the data: {'; '.join(outcome.message.missing)}"
        return
    if declined or narrowed:
        outcome.why = "declined, though doable"
        return
    trigger = outcome.message.expect.trigger
    new = [p for p in reply.proposals if p.tool == "memory_store_skill"]
    if trigger is None:
        outcome.right, outcome.why = True, "not declined"
    elif len(new) != 1:
        outcome.why = f"{len(new)} new skills proposed"
    else:
        outcome.right, outcome.why = judge_trigger(new[0].arguments.get("data") or {}, outcome.message.expect, now,
                                                   zone)


async def run(args: argparse.Namespace) -> list[Outcome]:
    messages = {"held-out": HELD_OUT, "needs": needs_messages()}.get(args.set, MESSAGES)
    chosen = messages
    if args.only:
        wanted = {int(n) for n in args.only.split(",")}
        sessions = {messages[n - 1].session for n in wanted if messages[n - 1].session}
        chosen = [m for i, m in enumerate(messages, 1) if i in wanted or (m.session and m.session in sessions)]
    overrides: dict[str, Any] = {"run_token_cap": 10_000_000, "daily_tokens": 10**9}
    if args.no_plain:
        overrides["chat_plain_reminders"] = False
    scripted = None
    if args.dry_run:
        from tests.fakes.llm_server import ScriptedLLM, say

        scripted = ScriptedLLM().start()
        scripted.script("chat", [say("ok")] * 200)
        overrides.update(llm_base_url=scripted.base_url, llm_api_key="dry", llm_model="chat")
    else:
        # The harness builds its settings from arguments alone: the endpoint is read here, as the CLI reads it.
        env = Settings.from_env()
        if not env.llm_configured:
            sys.exit("set SKILLS_LLM_BASE_URL (and SKILLS_LLM_MODEL) to the endpoint to measure, or --dry-run")
        overrides.update({name: getattr(env, name) for name in Settings.model_fields if name.startswith("llm_")})
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="chat-real-") as tmp:
        overrides.update(user_skills_dir=Path(tmp) / "user", project_skills_dir=Path(tmp) / "project")
        async with started("bench-chat-real", **overrides) as h:
            zone = h.settings.timezone
            print(f"model {h.settings.llm_model} at {h.settings.llm_base_url or 'the OpenAI API'}; zone {zone}; "
                  f"plain reminders without the model: {'on' if h.settings.chat_plain_reminders else 'off'}",
                  flush=True)
            for data in EXISTING:
                await h.skills.register(data)
            print(f"{'#':>2} {'kind':<12} {'right':<5} {'claim':<5} {'path':<8} {'tokens':>7} {'s':>6}  message / why",
                  flush=True)
            opened: dict[str, datetime] = {}
            for number, message in enumerate(chosen, start=1):
                before = {s.name: {"id": s.id, "spec": s.model_dump(mode="json")} for s in await h.skills.list()}
                session = message.session or f"m{number}"
                outcome = Outcome(number, message)
                now = datetime.now(UTC)
                # A yes is judged from when its session's request was made: "in 10 minutes" counts from then.
                asked = opened.setdefault(session, now)
                started_at = time.monotonic()
                try:
                    reply = await asyncio.wait_for(h.skills.chat(message.text, session_id=session), TURN_LIMIT)
                except Exception as e:  # a turn that failed or ran out of time: wrong, and the bench goes on
                    outcome.seconds = time.monotonic() - started_at
                    outcome.why = f"turn failed: {type(e).__name__}: {str(e)[:120]}"
                    outcomes.append(outcome)
                    _print(outcome)
                    continue
                outcome.seconds = time.monotonic() - started_at
                outcome.tokens = reply.prompt_tokens + reply.completion_tokens
                outcome.reply = reply.reply
                if reply.reply.startswith("Read without the model"):
                    outcome.path = "no model"
                elif message.expect.effect in ("created", "deleted") and not outcome.tokens:
                    outcome.path = "yes"  # the engine's to read: no model turn
                judge(outcome, reply, asked, zone, before)
                outcomes.append(outcome)
                _print(outcome)
    if scripted is not None:
        scripted.stop()
    _totals(outcomes)
    return outcomes


def _print(o: Outcome) -> None:
    print(f"{o.number:>2} {o.message.kind:<12} {'yes' if o.right else 'NO':<5} {'FALSE' if o.false_claim else '-':<5} "
          f"{o.path:<8} {o.tokens:>7,} {o.seconds:>6.1f}  {o.message.text}", flush=True)
    detail = f"{o.why}" + (f"; effects: {', '.join(o.effects)}" if o.effects else "; no effect")
    print(f"{'':>45}{detail}", flush=True)
    if o.reply and (not o.right or o.false_claim or o.message.kind.startswith("needs")):
        print(f"{'':>45}reply: {o.reply[:200]!r}", flush=True)


def _totals(outcomes: list[Outcome]) -> None:
    if not outcomes:
        return
    right = sum(o.right for o in outcomes)
    claims = sum(o.false_claim for o in outcomes)
    slow = [o for o in outcomes if o.seconds > TURN_TARGET]
    no_model = sum(o.path == "no model" for o in outcomes)
    tokens = sum(o.tokens for o in outcomes)
    seconds = [o.seconds for o in outcomes]
    print(f"\nright {right}/{len(outcomes)} ({right / len(outcomes):.0%}; target >= {RIGHT_TARGET:.0%}: "
          f"{'met' if right / len(outcomes) >= RIGHT_TARGET else 'NOT met'})")
    print(f"false claims {claims} (target 0: {'met' if claims == 0 else 'NOT met'})")
    print(f"turns over {TURN_TARGET:.0f} s: {len(slow)} (target 0: {'met' if not slow else 'NOT met'}); "
          f"longest {max(seconds):.1f} s, median {sorted(seconds)[len(seconds) // 2]:.1f} s, total {sum(seconds):.0f} s")
    print(f"tokens {tokens:,}; turns read without the model: {no_model}")
    needs = [o for o in outcomes if o.message.kind in ("needs none", "needs part")]
    if needs:
        met = sum(o.right for o in needs)
        print(f"needs: declined or narrowed, naming what is missing, {met}/{len(needs)} ({met / len(needs):.0%}; "
              f"target >= {NEEDS_TARGET:.0%}: {'met' if met / len(needs) >= NEEDS_TARGET else 'NOT met'}); "
              f"doable tasks not declined: {sum(o.right for o in outcomes if o.message.kind == 'needs all')}/"
              f"{sum(o.message.kind == 'needs all' for o in outcomes)}")
    by_kind: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_kind.setdefault(o.message.kind, []).append(o)
    print("by kind: " + ", ".join(f"{kind} {sum(o.right for o in group)}/{len(group)}"
                                  for kind, group in by_kind.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="a scripted model that only says 'ok'")
    parser.add_argument("--no-plain", action="store_true", help="every message to the model")
    parser.add_argument("--only", help="message numbers, comma-separated")
    parser.add_argument("--set", choices=("main", "held-out", "needs"), default="main",
                        help="the main messages, the 14 held out from tuning, or the held-out needs tasks "
                             "(bench/data/chat_needs.json)")
    parser.add_argument("--json", help="write the outcomes to this file")
    args = parser.parse_args()
    outcomes = asyncio.run(run(args))
    if args.json:
        Path(args.json).write_text(json.dumps([{
            "number": o.number, "message": o.message.text, "kind": o.message.kind, "right": o.right, "why": o.why,
            "false_claim": o.false_claim, "path": o.path, "tokens": o.tokens, "seconds": round(o.seconds, 1),
            "effects": o.effects, "reply": o.reply} for o in outcomes], indent=2))
    exit_process(0)  # temporalio/sdk-python#300: skip teardown once the figures are out (flushed)


if __name__ == "__main__":
    main()
