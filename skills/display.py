"""Text for a person: outside text made safe to show on a terminal, and spans of time. Pure code.

A person decides on what a listing shows (``skills install`` asks whether to trust the commands it
lists). A terminal obeys control sequences in what it prints: ESC[2K and a carriage return erase a
line and print another in its place, U+202E turns the rest of a line around, a zero-width character
hides. So what comes from outside is shown with every character that is not plainly printable as its
escape, and the person sees what will run.
"""

from __future__ import annotations

from datetime import timedelta


def shown(text: str) -> str:
    """``text`` with each control, format (bidi, zero-width), separator and surrogate character written as
    its Python escape (``\\x1b``, ``\\r``, ``\\u202e``); printable text, the space included, is left as it is."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape", "backslashreplace").decode("ascii")
                   for ch in text)


def shown_lines(lines: list[str]) -> str:
    """Lines for a person, each :func:`shown`: a line break inside one (a model's instructions) is shown as
    ``\\n``, so no text can start a line of its own that the listing did not write."""
    return "\n".join(shown(line) for line in lines)


def span(delta: timedelta) -> str:
    """``40 s``, ``12 min``, ``2 h 05 min``, ``3 days 4 h``: how long something lasted or may last, as a
    person says it (seconds only under a minute; a negative span is ``0 s``). The one form every answer,
    notice and run summary uses."""
    seconds = max(int(delta.total_seconds()), 0)
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes:02d} min"
    return f"{hours // 24} days {hours % 24} h"
