"""The commands of the skills themselves: register, update, history, revert, get, next, list, delete, pause,
resume, hook."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click

from starter.command import AGENT, REF, answer, current, data_command, with_client
from starter.output import table, when
from starter.skill_text import describe, last_run_text, registered, state_text, trigger_text

if TYPE_CHECKING:
    from client import SkillsClient
    from config.settings import Settings
    from skills.spec.models import RunRecord, Skill
    from skills.when.outlook import Outlook


@click.command(short_help="Register a skill from a JSON or YAML file (- for stdin), or many from a list or folder.")
@click.argument("file", metavar="FILE|FOLDER|-")
@data_command
def register(file: str) -> int:
    """Register a skill from a JSON or YAML file (- for stdin): what an LLM sends to memory_store_skill.

    A file holding a list, or a folder of such files, registers every skill in it at once: each is
    refused on its own (by its position) and a refused one leaves nothing stored; the exit status is
    1 when any was refused."""
    from starter.inputs import load_skills_input

    data = load_skills_input(file)
    if isinstance(data, list):
        return _register_many(data)

    async def work(skills: SkillsClient) -> None:
        result = await skills.register(data)
        answer(result, lambda: registered(result.skill, result.notes, result.next_fire, "registered"))

    return with_client(work)


def _register_many(items: list[Any]) -> int:
    refused = 0

    async def work(skills: SkillsClient) -> None:
        nonlocal refused
        result = await skills.register_many(items)
        refused = len(result.refused)

        def human() -> None:
            for item in result.items:
                if item.ok:
                    print(f"registered #{item.index} skill {item.skill_id} '{item.name}' (next fire "
                          f"{when(item.next_fire)})")
                else:
                    problems = "; ".join(f"{e.field}: {e.message}" for e in item.errors)
                    print(f"refused #{item.index} '{item.name}': {problems}")
            print(f"{len(result.registered)} registered, {refused} refused")

        answer(result, human)

    with_client(work)
    return 1 if refused else 0


@click.command(short_help="Change some fields of a skill.")
@REF
@click.argument("file", metavar="FILE|-")
@AGENT
@data_command
def update(ref: str, file: str, agent: str | None) -> int:
    """Change some fields of a skill; the merged skill is validated again."""
    from starter.inputs import load_input

    patch = load_input(file)

    async def work(skills: SkillsClient) -> None:
        result = await skills.update(ref, patch, agent)
        answer(result, lambda: registered(result.skill, result.notes, result.next_fire, "updated"))

    return with_client(work)


@click.command(short_help="A skill's revisions: who changed what, when.")
@REF
@click.option("--limit", type=click.IntRange(min=1, max=1000), default=50, show_default=True,
              help="At most this many revisions.")
@AGENT
@data_command
def history(ref: str, limit: int, agent: str | None) -> int:
    """A skill's revisions, newest first: each change (who made it: cli, mcp, chat:<session>, sync...;
    when; the fields it changed). A deleted skill's too, by its name or id. `skills revert REF REV`
    restores one."""

    async def work(skills: SkillsClient) -> None:
        found = await skills.history(ref, agent, limit=limit)
        answer(found, lambda: _history_table(found))

    return with_client(work)


def _history_table(found: list[Any]) -> None:
    from skills.spec.revisions import changed_fields

    if not found:
        print("no revision recorded yet (the next change is the first)")
        return
    table(["REV", "WHEN", "BY", "ACTION", "CHANGED"],
          [[r.rev, r.at.isoformat(timespec="seconds"), r.by, r.action, ", ".join(changed_fields(r)) or "-"]
           for r in found], cut={"CHANGED": 70})


@click.command(short_help="Restore a revision of a skill (its definition and schedule).")
@REF
@click.argument("rev", type=click.IntRange(min=1))
@AGENT
@data_command
def revert(ref: str, rev: int, agent: str | None) -> int:
    """Restore revision REV of a skill (`skills history REF` lists them): its definition, and with it
    its schedule, validated again like any update and recorded as a revision of its own. A deleted
    skill is registered again (under a new id)."""

    async def work(skills: SkillsClient) -> None:
        result = await skills.revert(ref, rev, agent)
        answer(result, lambda: registered(result.skill, result.notes, result.next_fire, f"reverted to {rev}:"))

    return with_client(work)


@click.command()
@REF
@AGENT
@data_command
def get(ref: str, agent: str | None) -> int:
    """One skill, with its state, disabled reason and next fire."""

    async def work(skills: SkillsClient) -> None:
        import asyncio

        settings = current().settings()  # the process's: its environment's notifier, model and price
        skill = await skills.get(ref, agent)
        # What follows needs only the skill: asked at once, each a round trip to Temporal or the worker.
        next_fire, waiting, recent = await asyncio.gather(
            skills.next_fire(skill), skills.approvals(skill_id=skill.id), skills.runs(skill.id, limit=20))
        skipped = _skipped_days(skill)
        # Where the last result went, destination by destination (deliver_to).
        delivered = next((r.deliveries for r in recent if r.deliveries), [])
        ahead = await _outlook(skills, skill, recent, settings)
        data = {**skill.model_dump(mode="json", by_alias=True), "tier": skill.tier,
                "next_fire": next_fire.isoformat() if next_fire else None,
                "skipped_days": [{"date": day.isoformat(), "why": why} for day, why in skipped],
                "waiting_for_approval": [a.model_dump(mode="json") for a in waiting],
                "last_deliveries": [d.model_dump(mode="json") for d in delivered],
                "next_30_days": ahead.model_dump(mode="json")}
        answer(data, lambda: describe(skill, next_fire, skipped, waiting, delivered, ahead))

    return with_client(work)


def _skipped_days(skill: Skill) -> list[tuple[Any, str]]:
    from skills.when.calendar import next_skipped

    return next_skipped(skill, now=datetime.now(UTC))


async def _outlook(skills: SkillsClient, skill: Skill, recent: list[RunRecord], settings: Settings) -> Outlook:
    """The skill's next 30 days (skills.when.outlook), its tokens from its own recorded runs, else from other
    skills' runs on its model."""
    from skills.when.outlook import outlook

    def tokens(runs: list[RunRecord]) -> list[int]:
        return [r.prompt_tokens + r.completion_tokens for r in runs if r.tier == "agent" and r.status == "success"]

    own = tokens(recent)
    similar: list[int] = []
    if not own and not skill.execution_plan:
        model = skill.model or settings.llm_model
        similar = tokens([r for r in await skills.runs(limit=200) if r.model == model])
    return outlook(skill, datetime.now(UTC), anchor=skill.created_at, done=skill.scheduled_runs,
                   notifier_tool=settings.notifier_tool, own_tokens=own, similar_tokens=similar,
                   price=settings.llm_price)


@click.command("next", short_help="A skill's next fire times, in its zone, skipped days marked.")
@REF
@click.option("-n", "count", type=click.IntRange(1, 100), default=10, show_default=True,
              help="How many fires to list (skipped days are listed beside them).")
@AGENT
@data_command
def next_(ref: str, count: int, agent: str | None) -> int:
    """A skill's next fire times in its time zone, with the days its schedule skips (business days,
    holidays) marked where a fire would have been."""

    async def work(skills: SkillsClient) -> None:
        found = await skills.next(ref, agent, count)

        def show() -> None:
            print(f"skill {found.skill_id} '{found.name}': {found.trigger}"
                  + (f"; {found.paused}: no fire until it is enabled" if found.paused else ""))
            for line in found.lines() or ["(no fire to come)"]:
                print(f"  {line}")

        answer(found, show)

    return with_client(work)


@click.command("list")
@AGENT
@click.option("--files", "file_skills", is_flag=True,
              help="The SKILL.md skills of this machine's folders instead, with where each came from.")
@data_command
def list_(agent: str | None, file_skills: bool) -> int:
    """Every skill: trigger, state and last run (with --files: every SKILL.md skill, its source and origin)."""
    if file_skills:
        from starter import install_cli

        return install_cli.list_files()

    async def work(skills: SkillsClient) -> None:
        found = await skills.list(agent_id=agent)
        answer(found, lambda: table(
            ["ID", "AGENT", "NAME", "TIER", "TRIGGER", "STATE", "LAST RUN"],
            [[s.id, s.agent_id, s.name, s.tier, trigger_text(s), state_text(s), last_run_text(s)] for s in found],
            cut={"NAME": 40, "TRIGGER": 50, "STATE": 50, "LAST RUN": 40},
        ))

    return with_client(work)


@click.command()
@REF
@AGENT
@data_command
def delete(ref: str, agent: str | None) -> int:
    """Delete a skill, its schedule and its runs."""

    async def work(skills: SkillsClient) -> None:
        skill = await skills.delete(ref, agent)
        answer(skill, lambda: print(f"deleted skill {skill.id} '{skill.name}' and its schedule"))

    return with_client(work)


@click.command()
@REF
@AGENT
@data_command
def pause(ref: str, agent: str | None) -> int:
    """Disable a skill: its schedule is paused, with the reason."""

    async def work(skills: SkillsClient) -> None:
        skill = await skills.pause(ref, agent)
        answer(skill, lambda: print(f"paused skill {skill.id} '{skill.name}' ({skill.disabled_reason})"))

    return with_client(work)


@click.command()
@REF
@AGENT
@data_command
def resume(ref: str, agent: str | None) -> int:
    """Enable a skill again."""

    async def work(skills: SkillsClient) -> None:
        skill = await skills.resume(ref, agent)
        next_fire = await skills.next_fire(skill)
        answer(skill, lambda: print(f"resumed skill {skill.id} '{skill.name}'; next fire {when(next_fire)}"))

    return with_client(work)


@click.command(short_help="Give a skill a hook token (POST /hooks/<id>), or --revoke it.")
@REF
@click.option("--revoke", is_flag=True, help="Remove the skill's hook: its token stops working.")
@AGENT
@data_command
def hook(ref: str, revoke: bool, agent: str | None) -> int:
    """Give the skill a new token for POST /hooks/<id> on the worker's health port (SKILLS_HOOKS=on),
    replacing any earlier one; the token is printed once, and only its digest is kept. --revoke removes it."""

    async def work(skills: SkillsClient) -> None:
        skill, token = await skills.hook(ref, agent, revoke=revoke)
        if token is None:
            answer(skill, lambda: print(f"skill {skill.id} '{skill.name}' has no hook now"))
            return

        def show() -> None:
            print(f"hook of skill {skill.id} '{skill.name}' (any earlier token no longer works):")
            print(f"  token  {token}")
            print("  (shown once: only its digest is stored)")
            print(f"  curl -X POST http://<worker>:{current().settings().health_port or 8080}/hooks/{skill.id} "
                  f"-H 'Authorization: Bearer {token}' -H 'Idempotency-Key: <id>' -d '{{\"any\": \"json\"}}'")
            print("  the worker serves hooks when SKILLS_HOOKS=on")

        answer({"skill_id": skill.id, "name": skill.name, "path": f"/hooks/{skill.id}", "token": token}, show)

    return with_client(work)


COMMANDS = [register, update, history, revert, get, next_, list_, delete, pause, resume, hook]
"""In the order `skills --help` lists them."""
