"""The commands of messages: `skills outbox` (what the outbox server holds) and `skills chat` (a message to
the assistant)."""

from __future__ import annotations

import sys
from datetime import datetime
from typing import TYPE_CHECKING

import click

from starter.command import answer, current, data_command, with_client
from starter.output import table, when

if TYPE_CHECKING:
    from client import SkillsClient
    from skills.messages.chat import ChatReply


@click.command()
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True,
              help="At most this many messages.")
@click.option("--chat", metavar="ID", help="Only the messages to this chat id.")
@data_command
def outbox(limit: int, chat: str | None) -> int:
    """The messages the outbox MCP server holds, newest first."""

    async def work(skills: SkillsClient) -> None:
        messages = await skills.outbox(limit=limit, chat_id=chat)
        answer(messages, lambda: table(
            ["AT", "CHAT", "MESSAGE"],
            [[when(datetime.fromisoformat(m["at"])), m.get("chat_id") or "-", m["message"]] for m in messages],
            cut={"CHAT": 24, "MESSAGE": 100},
        ))

    return with_client(work)


@click.command(short_help="One message to the assistant: it can schedule skills for you.")
@click.argument("message", nargs=-1, required=True)
@click.option("--session", metavar="S", help="Go on with this conversation (the reply says its session id).")
@click.option("--new", "new", is_flag=True,
              help="Start a new conversation, even while your last one has a proposal waiting for your yes.")
@click.option("--reply-to", "reply_to", metavar="RUN_ID",
              help="Reply to this run's result (`skills runs` shows RUN, its first characters): the turn "
                   "opens with the result and the skill it came from.")
@data_command
def chat(message: tuple[str, ...], session: str | None, new: bool, reply_to: str | None) -> int:
    """One message to the assistant, e.g. "remind me in 5 minutes to drink water": it can create,
    change and delete skills. While your last conversation has a proposal waiting, the message goes on
    with it (`skills chat yes` makes it); --new starts afresh. With --reply-to RUN_ID the message replies
    to that run's result ("why did it fail?", "send that to me every Monday too"). Exit 1 if the turn did
    not finish."""
    from skills.errors import SkillsError

    if new and session is not None:
        raise click.UsageError("--new starts a new conversation, --session goes on with one: give one of them")

    def waiting(line: str) -> None:  # on stderr: stdout stays the reply (and --json the JSON)
        print(f"  ... {line}", file=sys.stderr, flush=True)

    async def work(skills: SkillsClient) -> None:
        from starter.chat_session import going_on, remember

        data_dir = current().settings().data_dir
        chosen = session
        if chosen is None and reply_to is None and not new:
            chosen, note = await going_on(skills, data_dir)
            if note:
                print(f"  ({note})", file=sys.stderr, flush=True)
        reply = await skills.chat(" ".join(message), session_id=chosen, reply_to=reply_to, waiting=waiting)
        remember(data_dir, reply.session_id)
        answer(reply, lambda: _chatted(reply))
        if not reply.ok:
            raise SkillsError(reply.reply)

    return with_client(work)


def _chatted(reply: ChatReply) -> None:
    from skills.display import shown, shown_lines

    # The model's words may carry what a mail it read said: a terminal code in them (ESC[8m hides what
    # follows) must not hide or fake the proposal lines printed after them.
    print(shown_lines(reply.reply.split("\n")))
    from starter.chat_session import CLI_ANSWER

    for line in reply.account_lines(CLI_ANSWER):  # the engine's account, whatever the model said
        print(f"  {shown(line)}")
    for reason in reply.unavailable:
        print(f"  (not available this turn: {shown(reason)})")
    if reply.left_out:
        print(f"  (left out to fit the model's context, SKILLS_LLM_CONTEXT: {shown('; '.join(reply.left_out))})")
    print(f"  (session {reply.session_id}; {reply.prompt_tokens + reply.completion_tokens} tokens)")


COMMANDS = [outbox, chat]
"""In the order `skills --help` lists them."""
