"""The engine's custom search attributes, typed as Temporal takes them: what a skill's runs carry
(``temporal workflow list --query "SkillName='…'"``) and what a waiting run sets. Their own module,
beside ``skills.naming``, because they are temporalio objects and ``skills/`` imports no temporalio."""

from __future__ import annotations

from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes

from skills.spec.models import SkillSpec

SKILL_NAME = SearchAttributeKey.for_keyword("SkillName")
SKILL_AGENT = SearchAttributeKey.for_keyword("SkillAgent")
SKILL_TIER = SearchAttributeKey.for_keyword("SkillTier")
SKILL_WAITING = SearchAttributeKey.for_bool("SkillWaiting")
"""True while a run waits for the owner's approval (``temporal workflow list --query "SkillWaiting=true"``)."""

SKILL_APPROVAL = SearchAttributeKey.for_int("SkillApproval")
"""The id of the approval a run waits for: an answer finds its run through Temporal alone, so it is
sent (and kept, durably) even while no worker runs."""

SEARCH_ATTRIBUTES = {**{key.name: "Keyword" for key in (SKILL_NAME, SKILL_AGENT, SKILL_TIER)},
                     SKILL_WAITING.name: "Bool", SKILL_APPROVAL.name: "Int"}
"""Custom search attributes the engine needs registered on the namespace (name -> type)."""

SCHEDULED_START_TIME = SearchAttributeKey.for_datetime("TemporalScheduledStartTime")


def search_attributes(spec: SkillSpec) -> TypedSearchAttributes:
    return skill_attributes(spec.name, spec.agent_id, spec.tier)


def skill_attributes(name: str, agent_id: str, tier: str) -> TypedSearchAttributes:
    """``SkillName``, ``SkillAgent`` and ``SkillTier`` of a skill's runs."""
    return TypedSearchAttributes(
        [
            SearchAttributePair(SKILL_NAME, name),
            SearchAttributePair(SKILL_AGENT, agent_id),
            SearchAttributePair(SKILL_TIER, tier),
        ]
    )
