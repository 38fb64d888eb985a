"""The commands of what waits for the owner's yes: approvals, approve, deny, and the standing grants (grant,
grants, revoke)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import click

from starter.command import answer, data_command, with_client
from starter.output import table, when

if TYPE_CHECKING:
    from client import SkillsClient
    from skills.chat.proposals import ChangeDecided


@click.command()
@click.option("--all", "everything", is_flag=True, help="Answered ones too, newest first.")
@click.option("--limit", type=click.IntRange(min=1, max=500), default=50, show_default=True,
              help="At most this many approvals.")
@data_command
def approvals(everything: bool, limit: int) -> int:
    """What waits for your yes: runs' calls of tools that need approval, and proposed changes."""

    async def work(skills: SkillsClient) -> None:
        found = await skills.approvals(status=None if everything else "pending", limit=limit)
        answer(found, lambda: table(
            ["ID", "KIND", "SKILL", "STATUS", "ASKED", "EXPIRES", "WHAT"],
            [[a.id, a.kind, a.skill_name, a.status + (f" ({a.decided_by})" if a.decided_by else ""),
              when(a.requested_at), when(a.expires_at), a.summary] for a in found],
            cut={"SKILL": 30, "WHAT": 80}))

    return with_client(work)


@click.command()
@click.argument("approval_id", metavar="ID", type=click.IntRange(min=1))
@data_command
def approve(approval_id: int) -> int:
    """Approve: the waiting call is made, once (or the proposed change is made)."""

    async def work(skills: SkillsClient) -> None:
        _answered(await skills.answer(approval_id, True, by="cli"), approval_id)

    return with_client(work)


@click.command()
@click.argument("approval_id", metavar="ID", type=click.IntRange(min=1))
@click.option("--reason", default="", help="Why (the run's model reads it; the run's record keeps it).")
@data_command
def deny(approval_id: int, reason: str) -> int:
    """Deny: the call is not made (an Agent run is told and goes on; a Direct run ends as denied)."""

    async def work(skills: SkillsClient) -> None:
        _answered(await skills.answer(approval_id, False, reason=reason, by="cli"), approval_id)

    return with_client(work)


def _answered(said: str | ChangeDecided, approval_id: int) -> None:
    """What came of an answer: a sentence (``Approved #2: stored skill 4 '...' (direct tier), first fire Mon
    ...``); --json gives the record, a proposed change's approval and the skill it made."""
    from skills.chat.proposals import ChangeDecided, decided_sentence

    if not isinstance(said, ChangeDecided):
        answer({"ok": True, "approval_id": approval_id, "result": said}, lambda: print(said))
        return
    sentence = decided_sentence(said)
    assert said.approval is not None  # the client raises when there is none
    answer({"ok": True, "approval_id": approval_id, "result": sentence,
            "approval": said.approval.model_dump(mode="json"), "change": said.change}, lambda: print(sentence))


@click.command()
@click.argument("tool")
@click.option("--skill", "skill_ref", metavar="REF", help="Only this skill's calls (default: any skill's).")
@click.option("--where", "where_items", metavar="ARG=VALUE", multiple=True,
              help="Only calls whose argument ARG is exactly VALUE (repeatable; non-strings compared as JSON).")
@click.option("--for", "duration", metavar="30d|12h|90m", help="Expires after this long (default: until revoked).")
@data_command
def grant(tool: str, skill_ref: str | None, where_items: tuple[str, ...], duration: str | None) -> int:
    """A standing grant: calls of TOOL that need approval and match are approved without asking."""
    from skills.owner.grants import describe_grant, parse_duration, parse_where

    try:
        where = parse_where(list(where_items))
    except ValueError as e:
        raise click.BadParameter(str(e).removeprefix("where: "), param_hint="--where") from None
    try:
        minutes = parse_duration(duration) if duration is not None else None
    except ValueError as e:
        raise click.BadParameter(str(e).removeprefix("for: "), param_hint="--for") from None

    async def work(skills: SkillsClient) -> None:
        made = await skills.grant(tool, skill=skill_ref, where=where, minutes=minutes, by="cli")
        answer(made, lambda: print(f"{describe_grant(made)}; "
                                   + (f"expires {when(made.expires_at)}" if made.expires_at else "until revoked")))

    return with_client(work)


@click.command()
@click.option("--all", "everything", is_flag=True, help="Revoked and expired ones too.")
@data_command
def grants(everything: bool) -> int:
    """The standing grants: what is approved without asking."""

    async def work(skills: SkillsClient) -> None:
        now = datetime.now(UTC)
        found = await skills.grants(everything=everything)
        answer(found, lambda: table(
            ["ID", "TOOL", "SKILL", "WHERE", "STATE", "EXPIRES", "BY"],
            [[g.id, g.tool, g.skill_name or "(any)", " ".join(f"{k}={v}" for k, v in g.where.items()) or "-",
              g.state(now), when(g.expires_at), g.created_by] for g in found],
            cut={"WHERE": 60}))

    return with_client(work)


@click.command()
@click.argument("grant_id", metavar="GRANT_ID", type=click.IntRange(min=1))
@data_command
def revoke(grant_id: int) -> int:
    """Revoke a standing grant: its calls wait for your answer again."""

    async def work(skills: SkillsClient) -> None:
        revoked = await skills.revoke_grant(grant_id)
        answer({"ok": True, "grant_id": revoked.id}, lambda: print(f"grant {revoked.id} revoked"))

    return with_client(work)


COMMANDS = [approvals, approve, deny, grant, grants, revoke]
"""In the order `skills --help` lists them."""
