"""What the user's own words allow a structured chat turn to do, read with no model.

A 1.5B model held to a JSON grammar always answers with *some* action, and under doubt it picks one the user
never asked for: asked "what skills do I have?", it proposed a delete; asked to move a reminder, it proposed
deleting it. The engine does not let a model's guess choose an act the words do not ask for:

- :func:`allowed_actions` narrows the answer's ``action`` enum (the grammar, not the prompt: the prompt stays
  the same from turn to turn, so the endpoint's prompt cache holds): ``delete`` only when the user's words
  say delete, remove, cancel...; ``update`` only with a verb of change (move, change, pause...); ``create``
  only when they say when (a time, a day, a rhythm: every skill has one), and not when that when stands beside
  one of the owner's skills the words change or delete, with no word of a new skill. A question ("what skills
  do I have?", "when does it fire?", "can you pause things?": :func:`a_question`) asks for none of the three.
  ``reply`` and ``list`` stay.
- :func:`enabled_said` and :func:`moved_to` read what a change plainly says: a pause or a resume, and a time
  alone ("move it to 9:30") that moves a skill's one time of day and keeps its days. The structured answer's
  change is made to say the same (``skills.llm.structured.structured_calls``).

The actions allowed read the user's last two messages (a "yes, do that" or "the first one" answers the one
before); the rest reads the last. A word missed is a turn the model answers as it would have, never an act
the user did not ask for.

Only the owner's own words decide (:func:`own_words`): a result the message replies to, lines quoted with
``>``, a forwarded message (but for the owner's short line under its end), an "X wrote:" block, a text in
double quotes of more than ``QUOTED_WORDS`` words and words someone else said, reported with no quote marks
("my wife said turn off the heating"), are cut out before anything is read, so an email quoted ("turn the heating off and cancel...") neither
widens the actions offered nor sets a field, and the owner's words after a long quote are still read. A verb
negated in its clause ("don't pause it", "never turn it off", "I didn't mean delete") asks for nothing
(:func:`negated`), and a pause or resume the words refuse is taken out of the model's change. Pure code, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from skills import linear
from skills.chat.reply import own_message

MESSAGE_CHARS = 2_000
"""Characters of a user's own words read (by RE2, ``skills.linear``: linear in them whatever they are)."""
QUOTE_CHARS = 100_000
"""Characters of a message searched for quotes (line by line: linear): the owner's words past them are not read."""
QUOTED_WORDS = 4
"""A text in double quotes of more words than this is a quotation (a short one is a name or a reminder's text)."""

_FORWARDED = linear.compile(r"^\s*(?:-{2,}\s*(?:forwarded|original)\s+message\s*-{2,}|begin\s+forwarded\s+message\s*:)",
                            linear.IGNORECASE)
_WROTE = linear.compile(r"\bwrote\s*:\s*$", linear.IGNORECASE)


def own_words(message: str) -> str:
    """The owner's own words in ``message``: without the result it replies to (``skills.chat.reply``), lines
    quoted with ``>``, a forwarded message (from its ``----- Forwarded message -----`` line to the end), an "X
    wrote:" line and its quote (its ``>`` lines or its text in quotes; with neither, the rest of the message) and
    a text in double quotes of more than ``QUOTED_WORDS`` words, over lines or not. What is cut leaves a line
    break (or a space), so the words either side do not join. Linear: string methods line by line, RE2 only on
    a line that may be a forwarded message's or an "X wrote:"."""
    text = own_message(message)[:QUOTE_CHARS]
    kept: list[str] = []
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.lstrip().startswith(">"):
            kept.append("")
            continue
        folded = line.lower()
        if ("forward" in folded or "original" in folded) and _FORWARDED.search(line):
            kept += ["", _under_forward(lines[i + 1:])]
            break
        if line.rstrip().endswith(":") and "wrote" in folded and _WROTE.search(line):
            following = next((rest.lstrip() for rest in lines[i + 1:] if rest.strip()), "")
            if not following.startswith((">", *_OPENS)):
                kept += ["", _under_forward(lines[i + 1:])]
                break  # a pasted block with no quote marks: the rest is the quote, but for a line under its end
            kept.append("")
            continue
        kept.append(line)
    return _unreported(_unquoted("\n".join(kept)))


_REPORTED = linear.compile(r"\b([\w'-]+)\s+(?:said|says|wrote|writes|texted|messaged|emailed|asked|told)"
                           r"(?:\s+(?:me|us))?\s*(?:[:,]\s*|(?:that|to)\s+)?", linear.IGNORECASE)
_OWNER = frozenset({"i", "we", "i've", "i'd", "we've"})
"""Who reports the owner's own words ("I said pause it!"): read as said."""


def _unreported(text: str) -> str:
    """``text`` without the words someone else said, reported with no quote marks ("my wife said turn off the
    heating every evening", "she wrote: pause it", "Mark texted me to cancel..."): from the verb to the end of
    its sentence. The owner's own ("I said pause it!") stay."""
    out: list[str] = []
    start = 0
    nearest = dict.fromkeys(".!?\n", -1)  # each mark's next place, found again only once passed: linear
    for found in _REPORTED.finditer(text):
        if found.start() < start or found.group(1).lower() in _OWNER:
            continue
        for mark, at in nearest.items():
            if at != -2 and at < found.end():
                place = text.find(mark, found.end())
                nearest[mark] = place if place != -1 else -2
        ends = [at for at in nearest.values() if at >= 0]
        out.append(text[start:found.end()] + " ")
        start = min(ends) if ends else len(text)
    return "".join(out) + text[start:]


_OPENS = {'"': '"', "\u201c": "\u201d"}

OWN_TAIL_WORDS = 30
"""Words of the last paragraph under a forwarded message that may be the owner's line (a longer one is the message's)."""
ENDING_LINES = 3
"""Lines before that paragraph searched for the forwarded message's end (a sign-off, a footer)."""
_ENDING = linear.compile(
    r"^\s*(?:(?:best|kind|warm|warmest|many|thanks|thank\s+you|cheers|love|regards|sincerely|yours|all\s+the\s+best|"
    r"take\s+care|talk\s+soon|see\s+you|with|xo+|hugs|bye)\b[^.!?]{0,40}[,!]\s*$|--\s*$)|"
    r"\b(?:unsubscribe|manage\s+(?:your\s+)?preferences|sent\s+from\s+my|view\s+(?:it\s+)?in\s+(?:your\s+)?browser)\b",
    linear.IGNORECASE)
"""A line that ends an email: a sign-off ("Best,", "With focus and love,", "Thanks!"), a signature's ``--``, a
newsletter's footer ("Unsubscribe | Manage preferences"), a phone's "Sent from my ..."."""


def _under_forward(lines: list[str]) -> str:
    """The owner's line under a forwarded message (or an "X wrote:" block pasted bare): its last paragraph, when it is short (``OWN_TAIL_WORDS``),
    quotes nothing, and stands after the message's end (a sign-off or a footer within the ``ENDING_LINES``
    lines before it); else nothing. A forwarded message's end is not marked: one that ends in a sign-off and
    then a short line of its own is read as the owner's."""
    end = len(lines)
    while end and not lines[end - 1].strip():
        end -= 1
    start = end
    while start and lines[start - 1].strip():
        start -= 1
    tail = lines[start:end]
    if not tail or start == 0 or len(" ".join(tail).split(None, OWN_TAIL_WORDS)) > OWN_TAIL_WORDS or \
            any(line.lstrip().startswith(">") for line in tail):
        return ""
    before = [line for line in lines[:start] if line.strip()][-ENDING_LINES:]
    return "\n".join(tail) if any(_ENDING.search(line) for line in before) else ""


def _unquoted(text: str) -> str:
    """``text`` without its texts in double quotes ("...", \u201c...\u201d) of more than ``QUOTED_WORDS`` words."""
    out: list[str] = []
    start = i = 0
    nearest = dict.fromkeys(_OPENS, -1)  # each mark's next place, found again only once passed: linear
    while True:
        for mark, at in nearest.items():
            if at != -2 and at < i:
                found = text.find(mark, i)
                nearest[mark] = found if found != -1 else -2
        opens = [at for at in nearest.values() if at >= 0]
        if not opens:
            break
        i = min(opens)
        end = text.find(_OPENS[text[i]], i + 1)
        if end == -1:
            break
        if len(text[i + 1:end].split(None, QUOTED_WORDS)) > QUOTED_WORDS:
            out.append(text[start:i] + " ")
            start = end + 1
        i = end + 1
    return "".join(out) + text[start:]


_NEGATION = linear.compile(r"\b(?:not|never|no|nothing|without|neither|nor|n't|dont|didnt|doesnt|wont|cant)\b|n't\b",
                           linear.IGNORECASE)
_CLAUSE = linear.compile(r"[.,;:!?\n\u2014\u2013]|\s-\s|\b(?:but|just|and|then|so|instead|rather|only)\b",
                         linear.IGNORECASE)
NEGATION_WORDS = 6
"""Words before a verb, within its clause, read for a negation: "don't pause", "I never want to turn it off"."""


def negated(text: str, start: int) -> bool:
    """Whether the word at ``start`` of ``text`` is negated: a not, never, don't... among the ``NEGATION_WORDS``
    words before it, in its clause ("don't pause it, just move it": the move is not negated)."""
    before = text[max(0, start - 80):start]
    clause = max((found.end() for found in _CLAUSE.finditer(before)), default=0)
    words = before[clause:].split()[-NEGATION_WORDS:]
    return _NEGATION.search(" ".join(words)) is not None


def _said(pattern: linear.Pattern, text: str) -> bool:
    """Whether ``pattern`` is in ``text`` at least once not negated (before it, or by a "nothing" after it: "stop
    nothing")."""
    return any(not negated(text, found.start()) and not _NOTHING.match(text[found.end():found.end() + 20])
               for found in pattern.finditer(text))


_NOTHING = linear.compile(r"\s+(?:nothing|none|neither)\b", linear.IGNORECASE)

# The words, each spelt once: the patterns below are alternations of them (fixed, with no nested repetition).
_PAUSES = r"pause|disable|mute|suspend"
_RESUMES = r"resume|unpause|enable|re-?enable|unmute|restart"
_TURN = r"(?:turn(?:ed)?|switch(?:ed)?)\s+(?:[\w'-]+\s+){0,5}?"
"""'turn' and up to five words before 'on' or 'off' ("turn the water reminder back on")."""
_RHYTHMS = (r"every|each|daily|weekly|monthly|yearly|hourly|weekdays?|weekends?|tomorrow|tonight|today|"
            r"(?:mon|tues|wednes|thurs|fri|satur|sun)days?|minutes?|hours?")
"""A day or a rhythm: words that say when a skill fires, and more than a time of day."""

_DELETE = linear.compile(r"\b(?:delete|remove|cancel|drop|erase|forget|discard|scrap|get\s+rid\s+of|stop|"
                         r"no\s+longer|(?:don't|do\s+not)\s+(?:need|want))\b", linear.IGNORECASE)
_CHANGE = linear.compile(rf"\b(?:change|move|make|set|switch|update|edit|modify|rename|{_PAUSES}|{_RESUMES}|"
                         rf"{_TURN}(?:back\s+)?(?:on|off)|reschedule|shift|instead|stop|skip|snooze|postpone|push|"
                         r"earlier|later|should\s+(?:be|fire|run|go\s+off|ring|come))\b", linear.IGNORECASE)
_WHEN = linear.compile(
    rf"\b(?:{_RHYTHMS}|noon|midnight|(?:in\s+the|this|at|by|on)\s+(?:morning|evening|night|afternoon)|mornings|"
    r"evenings|nights|afternoons|o'clock|at\s+\d|in\s+\d+\s*(?:m|mins?|minutes?|h|hrs?|hours?|days?|weeks?|months?)|"
    r"in\s+(?:an?|half\s+an)\s+(?:hour|minute)|"
    r"\d{1,2}(?::\d\d)?\s*(?:am|pm)|\d{1,2}:\d\d)\b", linear.IGNORECASE)
_QUESTION = linear.compile(r"^\s*(?:what|which|when|where|who|why|how|is|are|am|do|does|did|have|has|was|were|"
                           r"would\s+it|should\s+i|if\s+i)\b[^?]*\?", linear.IGNORECASE)
"""A question about what is ("what skills do I have?", "when does it fire next?"), not a request put as one
("can you remind me...?", "could you move it?")."""

_GENERIC = r"things|stuff|skills?|reminders?|tasks?|jobs?|schedules?|notifications?|alerts?|digests?|summaries"
_CAN = linear.compile(rf"^\s*(?:can|could|will)\s+(?:you|u|it|the\s+(?:bot|assistant|engine))\s+(?:also\s+|even\s+|"
                      rf"actually\s+)?[\w'-]+(?:\s+(?:(?:an?|any|other|more|several|many|multiple)\s+)?(?:{_GENERIC}))?"
                      r"(?:\s+(?:at\s+all|too|as\s+well|for\s+me))?\s*\?+\s*$", linear.IGNORECASE)
"""A question of what the assistant can do ("can you pause things?", "could you delete reminders?"): its verb
has no object, or a kind of thing with no skill named ("a reminder", "other skills"), unlike a request put as a
question ("can you pause it?", "could you pause my reminders?", "can you remind me at 9?")."""


def a_question(text: str) -> bool:
    """Whether the owner's own words ``text`` (``own_words``) are a question that asks for no act: about what is
    ("what skills do I have?", "is the water reminder paused?") or what the assistant can do ("can you pause
    things?"), not a request put as one ("can you remind me at 9?", "could you move it?")."""
    return _QUESTION.match(text) is not None or _CAN.match(text) is not None


CHANGES = ("create", "update", "delete")


def allowed_actions(messages: Sequence[str], offered: Iterable[str], names: Sequence[str] = ()) -> list[str]:
    """The actions of ``offered`` (``skills.llm.structured.actions``) the user's last messages allow, newest
    last; the others (``list``, ``reply``) always. ``names``: the owner's skills' names (a when beside one the
    words change is the change's, not a new skill's)."""
    said = [own_words(m)[:MESSAGE_CHARS] for m in messages[-2:]]
    asked = {action for text in said if not a_question(text) for action in _asks(text, names)}
    return [action for action in offered if action not in CHANGES or action in asked]


_NEW = linear.compile(r"\b(?:remind\s+me|new|another|create|add|set\s+up|(?:a|an)\s+(?:[\w'-]+\s+){0,2}?"
                      r"(?:reminder|skill|alarm|digest|summary|job|task|one))\b", linear.IGNORECASE)
"""Words of a new skill ("remind me", "a new reminder", "set up a digest")."""


def _asks(text: str, names: Sequence[str] = ()) -> set[str]:
    asks = set()
    if _said(_DELETE, text):
        asks.add("delete")
    if _said(_CHANGE, text):
        asks.add("update")
    if _WHEN.search(text) and not (asks and names_a_skill(text, names) and not _NEW.search(text)):
        # "make the water reminder every 2 hours", "leave the 7am summary alone, delete the water one": the when
        # is the change's (or a skill's name), with no word of a new skill; a model offered create beside the
        # update made a second water reminder.
        asks.add("create")
    return asks


def names_a_skill(text: str, names: Sequence[str]) -> bool:
    """Whether ``text`` names one of the skills ``names``: its name as written, or a word of it of four letters
    or more that says more than when ("water" of "drink water", "summary" of "morning inbox summary", not
    "morning")."""
    tokens = [word for word in linear.split(r"[^\w]+", text.lower()) if word]
    joined, words = f" {' '.join(tokens)} ", set(tokens)
    for name in names:
        own = [word for word in linear.split(r"[^\w]+", name.lower()) if word]
        if own and f" {' '.join(own)} " in joined:
            return True
        if any(len(word) >= 4 and word in words and word not in _GENERIC_WORDS and not _WHEN.search(word)
               for word in own):
            return True
    return False


_GENERIC_WORDS = frozenset({"reminder", "skill", "remind", "daily", "weekly", "every", "check", "send", "with",
                            "from", "about", "your", "that", "this"})


_PAUSE = linear.compile(rf"\b(?:{_PAUSES}|{_TURN}off)\b", linear.IGNORECASE)
_RESUME = linear.compile(rf"\b(?:{_RESUMES}|{_TURN}(?:back\s+)?on)\b", linear.IGNORECASE)


def enabled_said(message: str) -> bool | None:
    """Whether the user's own words pause a skill (False) or resume one (True); None when they say neither, or
    both. A negated one ("don't pause it", "never turn it off") is not said."""
    text = own_words(message)[:MESSAGE_CHARS]
    pause, resume = _said(_PAUSE, text), _said(_RESUME, text)
    return None if pause == resume else resume


def enabled_refused(message: str) -> bool:
    """Whether the user's own words refuse a pause or a resume ("don't pause the stand up reminder", "I never
    want to turn it off"): then a change the model sends keeps the skill as it is, enabled or not."""
    text = own_words(message)[:MESSAGE_CHARS]
    return any(negated(text, found.start()) for pattern in (_PAUSE, _RESUME) for found in pattern.finditer(text))


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
    text = own_words(message)[:MESSAGE_CHARS]
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
