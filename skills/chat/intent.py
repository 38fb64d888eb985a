"""What the user's own words allow a structured chat turn to do, read with no model.

A 1.5B model held to a JSON grammar always answers with *some* action, and under doubt it picks one the user
never asked for: asked "what skills do I have?", it proposed a delete; asked to move a reminder, it proposed
deleting it. The engine does not let a model's guess choose an act the words do not ask for:

- :func:`allowed_actions` narrows the answer's ``action`` enum (the grammar, not the prompt: the prompt stays
  the same from turn to turn, so the endpoint's prompt cache holds): ``delete`` only when the user's words
  say delete, remove, cancel...; ``update`` only with a verb of change (move, change, pause...); ``create``
  only when they say when (a time, a day, a rhythm: every skill has one). A question ("what skills do I
  have?", "when does it fire?") asks for none of the three. ``reply`` and ``list`` stay.
- :func:`enabled_said` and :func:`moved_to` read what a change plainly says: a pause or a resume, and a time
  alone ("move it to 9:30") that moves a skill's one time of day and keeps its days. The structured answer's
  change is made to say the same (``skills.llm.structured.structured_calls``).

The actions allowed read the user's last two messages (a "yes, do that" or "the first one" answers the one
before); the rest reads the last. A word missed is a turn the model answers as it would have, never an act
the user did not ask for. Pure code, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from skills import linear

MESSAGE_CHARS = 2_000
"""Characters of a user's message read (by RE2, ``skills.linear``: linear in them whatever they are)."""

# The words, each spelt once: the patterns below are alternations of them (fixed, with no nested repetition).
_PAUSES = r"pause|disable|mute|suspend"
_RESUMES = r"resume|unpause|enable|re-?enable|unmute|restart"
_TURN = r"turn\s+(?:[\w'-]+\s+){0,5}?"
"""'turn' and up to five words before 'on' or 'off' ("turn the water reminder back on")."""
_RHYTHMS = (r"every|each|daily|weekly|monthly|yearly|hourly|weekdays?|weekends?|tomorrow|tonight|today|"
            r"(?:mon|tues|wednes|thurs|fri|satur|sun)days?|minutes?|hours?")
"""A day or a rhythm: words that say when a skill fires, and more than a time of day."""

_DELETE = linear.compile(r"\b(?:delete|remove|cancel|drop|erase|forget|discard|scrap|get\s+rid\s+of|stop|"
                         r"no\s+longer|(?:don't|do\s+not)\s+(?:need|want))\b", linear.IGNORECASE)
_CHANGE = linear.compile(rf"\b(?:change|move|make|set|switch|update|edit|modify|rename|{_PAUSES}|{_RESUMES}|"
                         rf"{_TURN}(?:back\s+)?(?:on|off)|reschedule|shift|instead|stop|skip|snooze|postpone|push|"
                         r"earlier|later)\b", linear.IGNORECASE)
_WHEN = linear.compile(
    rf"\b(?:{_RHYTHMS}|noon|midnight|(?:in\s+the|this|at|by|on)\s+(?:morning|evening|night|afternoon)|mornings|"
    r"evenings|nights|afternoons|o'clock|at\s+\d|in\s+\d|in\s+(?:an?|half\s+an)\s+(?:hour|minute)|"
    r"\d{1,2}(?::\d\d)?\s*(?:am|pm)|\d{1,2}:\d\d)\b", linear.IGNORECASE)
_QUESTION = linear.compile(r"^\s*(?:what|which|when|where|who|why|how|is|are|am|do|does|did|have|has|was|were)\b"
                           r"[^?]*\?", linear.IGNORECASE)
"""A question about what is ("what skills do I have?", "when does it fire next?"), not a request put as one
("can you remind me...?", "could you move it?")."""

CHANGES = ("create", "update", "delete")


def allowed_actions(messages: Sequence[str], offered: Iterable[str]) -> list[str]:
    """The actions of ``offered`` (``skills.llm.structured.actions``) the user's last messages allow, newest
    last; the others (``list``, ``reply``) always."""
    said = [m[:MESSAGE_CHARS] for m in messages[-2:]]
    asked = {action for text in said if not _QUESTION.match(text) for action in _asks(text)}
    return [action for action in offered if action not in CHANGES or action in asked]


def _asks(text: str) -> set[str]:
    asks = set()
    if _DELETE.search(text):
        asks.add("delete")
    if _CHANGE.search(text):
        asks.add("update")
    if _WHEN.search(text):
        asks.add("create")
    return asks


_PAUSE = linear.compile(rf"\b(?:{_PAUSES}|{_TURN}off)\b", linear.IGNORECASE)
_RESUME = linear.compile(rf"\b(?:{_RESUMES}|{_TURN}(?:back\s+)?on)\b", linear.IGNORECASE)


def enabled_said(message: str) -> bool | None:
    """Whether the user's words pause a skill (False) or resume one (True); None when they say neither, or both."""
    text = message[:MESSAGE_CHARS]
    pause, resume = _PAUSE.search(text) is not None, _RESUME.search(text) is not None
    return None if pause == resume else resume


# Not followed by a letter, digit or colon: the character after is read too (RE2 has no lookahead). findall
# finds what re's (?![\w:]) found: RE2 prefers the same reading of the time, and the character read, never a
# letter, cannot start the next match, which starts with a word.
_CLOCK = linear.compile(r"\b(?:to|at|for)\s+(\d{1,2})(?::([0-5]\d))?\s*(am|pm|a\.m\.|p\.m\.)?(?:[^\w:]|$)",
                        linear.IGNORECASE)
_DAYS = linear.compile(rf"\b(?:{_RHYTHMS}|month|week|once)\b", linear.IGNORECASE)
_CRON_TIME = linear.compile(r"^([0-5]?\d) ([01]?\d|2[0-3]) (\S+ \S+ \S+)$")


def moved_to(message: str, cron: str) -> str | None:
    """The cron ``cron`` at the time the user's words give alone ("move it to 9:30", "make it fire at 10
    instead", "change it to 8pm"), its days kept; None when the words say more than a time (a day, a rhythm),
    no time or two, an hour of 1 to 5 without am or pm, or ``cron`` is not one fixed time of day. A bare hour
    of 6 to 11 is in the half of the day the skill fires now ("the evening digest to 7" is 19:00). The 1.5B
    model answered "move the stand up reminder to 9:30" (weekdays at 9) with an hour it could not write, and
    "make it fire at 10 instead" by dropping the weekdays."""
    text = message[:MESSAGE_CHARS]
    stored = _CRON_TIME.match(cron.strip())
    clocks = _CLOCK.findall(text)
    if stored is None or _DAYS.search(text) or len(clocks) != 1:
        return None
    hour, minute = int(clocks[0][0]), int(clocks[0][1] or 0)
    half = clocks[0][2].lower().replace(".", "")
    if half:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if half == "pm" else 0)
    elif 1 <= hour <= 5 or hour > 23:
        return None
    elif 6 <= hour <= 11 and int(stored.group(2)) >= 12:
        hour += 12
    return f"{minute} {hour} {stored.group(3)}"
