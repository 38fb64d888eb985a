"""A skill's model and fallback_models in the normalizer: their shape, and the check against the endpoint's list."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from skills.errors import SkillValidationError
from skills.run.deadline import RunLimits, run_timeout
from skills.spec.llm_models import ModelList
from skills.spec.models import Skill
from skills.spec.normalize import NormalizeContext, normalize

LISTED = ModelList(frozenset({"gpt-4o", "gpt-4o-mini", "llama-3.1-70b"}))


def ctx(models: ModelList | None = LISTED, asked: list[bool] | None = None) -> NormalizeContext:
    def ask(fresh: bool) -> ModelList:
        if asked is not None:
            asked.append(fresh)
        assert models is not None
        return models

    return NormalizeContext(now=datetime(2026, 1, 1, tzinfo=UTC), default_timezone="UTC", default_agent_id="a",
                            llm_models=ask if models is not None else None)


def agent(**extra: object) -> dict[str, object]:
    return {"name": "n", "instructions": "Think.", **extra}


def test_listed_models_pass_and_the_list_is_asked_only_when_a_model_is_named() -> None:
    asked: list[bool] = []
    spec = normalize(agent(model="gpt-4o", fallbackModels="gpt-4o-mini, llama-3.1-70b"), ctx(asked=asked)).spec
    assert (spec.model, spec.fallback_models) == ("gpt-4o", ["gpt-4o-mini", "llama-3.1-70b"])
    assert asked == [False]
    asked.clear()
    assert normalize(agent(), ctx(asked=asked)).spec.fallback_models == [] and asked == []


def test_an_unlisted_model_is_refused_by_its_field_after_asking_again() -> None:
    asked: list[bool] = []
    with pytest.raises(SkillValidationError) as refused:
        normalize(agent(model="gpt4o", fallback_models=["gpt-4o-mini", "nope"]), ctx(asked=asked))
    errors = {e.field: e.message for e in refused.value.errors}
    assert errors["model"].endswith("did you mean 'gpt-4o'?")
    assert "'nope'" in errors["fallback_models[1]"] and "expected one of" in errors["fallback_models[1]"]
    assert asked == [False, True]


@pytest.mark.parametrize(("value", "field", "words"), [
    (["a"] * 6, "fallback_models", "at most 5"),
    ({"a": 1}, "fallback_models", "must be a list"),
    ([1], "fallback_models[0]", "must be a string"),
    (["ok", ""], "fallback_models[1]", "is empty"),
    (["has space"], "fallback_models[0]", "not a model name"),
    (["x" * 201], "fallback_models[0]", "not a model name"),
])
def test_bad_fallback_lists_name_the_field(value: object, field: str, words: str) -> None:
    with pytest.raises(SkillValidationError) as refused:
        normalize(agent(fallback_models=value), ctx(None))
    assert refused.value.errors[0].field == field and words in refused.value.errors[0].message


def test_no_list_is_a_note_and_a_direct_skill_is_not_asked() -> None:
    done = normalize(agent(model="m1", fallback_models=["m2", "m1", "m2"]),
                     ctx(ModelList(None, "the endpoint has no model list")))
    assert done.spec.fallback_models == ["m2"]
    assert "fallback_models: 'm1' listed twice; tried once" in done.notes
    assert any(n.startswith("not checked against the LLM endpoint's models (the endpoint has no model list)")
               for n in done.notes)
    plan = [{"id": "s", "toolName": "t", "parameters": {}}]
    direct = normalize(agent(model="unlisted", execution_plan=plan), ctx(asked=(asked := [])))
    assert asked == [] and any("Agent tier only" in n for n in direct.notes)


def test_each_fallback_adds_a_turns_worth_to_the_run_deadline() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    base = Skill(id=1, agent_id="a", name="n", trigger_type="manual", instructions="x", created_at=now, updated_at=now)
    without = run_timeout(base, RunLimits())
    with_two = run_timeout(base.model_copy(update={"fallback_models": ["a", "b"]}), RunLimits())
    assert with_two > without
