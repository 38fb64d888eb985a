"""Text from a file or a payload, made safe to show a person on a terminal. Pure code.

A person decides on what a listing shows (``skills install`` asks whether to trust the commands it
lists). A terminal obeys control sequences in what it prints: ESC[2K and a carriage return erase a
line and print another in its place, U+202E turns the rest of a line around, a zero-width character
hides. So what comes from outside is shown with every character that is not plainly printable as its
escape, and the person sees what will run.
"""

from __future__ import annotations


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
