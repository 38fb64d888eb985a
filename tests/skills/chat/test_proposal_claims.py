"""A reply that claims a proposal the turn did not make (issue 52): a small model replied "Proposed, NOT made"
(its prompt's own words) when nothing was proposed. The replies here are written for these tests.
"""

from __future__ import annotations

import pytest

from skills.chat.account import proposal_claimed
from skills.llm.agent import NATIVE_RULES
from tests.cpu import cpu_budget


@pytest.mark.parametrize(("reply", "claimed"), [
    ("Proposed, NOT made", True), ("Proposed, NOT made: reply yes to make it.", True),
    ("I've proposed a reminder for 9am; reply yes to make it.", True), ("Proposal #4 waits for your yes.", True),
    ("It has been proposed.", True),
    ("Shall I propose a reminder at 9?", False), ("I can remind you at 9. Shall I?", False),
    ("Nothing was proposed.", False), ("I could propose one if you like.", False),
])
def test_a_claim_of_a_proposal_is_read(reply: str, claimed: bool) -> None:
    assert (proposal_claimed(reply) is not None) is claimed


def test_the_native_prompt_does_not_hand_the_model_a_claim_to_parrot() -> None:
    assert "NOT made" not in NATIVE_RULES and "Proposed" not in NATIVE_RULES


def test_hostile_replies_are_read_to_their_cap() -> None:
    with cpu_budget(1.0):
        for hostile in ("proposed " * 30_000, "I've " * 40_000, ", " * 100_000, "a" * 200_000):
            proposal_claimed(hostile)
