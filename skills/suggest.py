"""Close names for a misspelt one: the "did you mean" of every refusal. Pure code."""

from __future__ import annotations

import difflib
from collections.abc import Collection


def did_you_mean(word: str, candidates: Collection[str], listed: Collection[str] = ()) -> str:
    """``"; did you mean 'x'?"`` for the candidate closest to ``word`` (case ignored); when none is
    close, ``" (expected one of ...)"`` with the ``listed`` names, or nothing."""
    by_lower = {name.lower(): name for name in sorted(candidates, reverse=True)}
    close = [by_lower[c] for c in difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=0.6)]
    if close:
        return f"; did you mean {close[0]!r}?"
    return f" (expected one of {', '.join(sorted(listed))})" if listed else ""
