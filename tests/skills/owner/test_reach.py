"""The one classification of a skill's fields (skills/owner/reach.py): every field of every model a skill is made
of is classified, so a field added later cannot be forgotten by what trust pins, what a chat must propose
and what the owner is shown; and what is derived from it."""

from __future__ import annotations

from typing import get_args

from skills.owner.reach import (
    MANIFEST_FIELDS,
    METADATA_FIELDS,
    SKILL_FIELDS,
    SPEC_REACH,
    TRIGGER_FIELDS,
    Kind,
    file_reach,
    reach_lines,
    reminds_only,
    spec_reach,
)
from skills.skillmd.manifest import SkillManifest, SkillMetadata
from skills.skillmd.registration import FILE_FIELDS
from skills.spec.models import PlanStep, Skill, SkillSpec, TriggerConfig

KINDS = set(get_args(Kind))


def test_every_field_of_a_skill_is_classified_once() -> None:
    for model, table in [(Skill, SKILL_FIELDS), (TriggerConfig, TRIGGER_FIELDS), (SkillManifest, MANIFEST_FIELDS)]:
        assert set(model.model_fields) == set(table), f"{model.__name__}: classify {set(model.model_fields) ^ set(table)}"
    # A SKILL.md's metadata: its typed keys, and every key a scheduled file passes on to its registration.
    assert set(SkillMetadata.model_fields) | set(FILE_FIELDS) == set(METADATA_FIELDS)
    for table in (SKILL_FIELDS, TRIGGER_FIELDS, MANIFEST_FIELDS, METADATA_FIELDS):
        assert set(table.values()) <= KINDS


def test_a_file_key_is_classified_as_the_stored_field_it_becomes() -> None:
    for key in FILE_FIELDS:
        assert METADATA_FIELDS[key] == SKILL_FIELDS[key], key
    for key in ("required_tools", "max_steps", "execution_plan", "notify_on_completion"):
        assert METADATA_FIELDS[key] == SKILL_FIELDS[key], key


def test_the_issue_names_these_as_reach() -> None:
    for name in ("required_tools", "execution_plan", "preflight", "approval_required_tools", "approval_exempt_tools",
                 "deliver_to", "context_from", "model", "max_steps", "max_tokens_per_month", "instructions",
                 "has_hook"):
        assert SKILL_FIELDS[name] == "reach", name
    assert set(SPEC_REACH) <= set(SkillSpec.model_fields)
    assert TRIGGER_FIELDS["event"] == "reach" and TRIGGER_FIELDS["schedule"] == "when"
    for name in ("toolsets", "scripts", "depends"):
        assert MANIFEST_FIELDS[name] == "reach"
    for name in ("name", "description", "remind_after_minutes"):
        assert SKILL_FIELDS[name] == "says"


def test_a_direct_skills_instructions_are_not_its_reach() -> None:
    agent = SkillSpec(agent_id="a", name="n", trigger_type="manual", instructions="x")
    assert spec_reach(agent)["instructions"] == "x"
    direct = agent.model_copy(update={"execution_plan": [PlanStep(id="a", tool_name="t")]})
    assert "instructions" not in spec_reach(direct)


def manifest(**metadata: object) -> SkillManifest:
    return SkillManifest.model_validate({"name": "n", "description": "d", "metadata": metadata})


def test_a_files_reach() -> None:
    # Instructions and message triggers only: nothing to pin (it runs only in the owner's own chat).
    assert file_reach(manifest(keywords=["a"]), "body") == {}
    # A schedule with only a body is an Agent run on the owner's model each time: the trigger and the body.
    body_only = manifest(trigger_config={"interval_minutes": 1})
    assert file_reach(body_only, "body") == {"metadata.trigger_config": {"interval_minutes": 1},
                                             "instructions": "body"}
    assert reach_lines(body_only) == [
        "fires by itself: every 1 min",
        "an Agent run on your model each time, following its instructions (the SKILL.md body)"]
    # A plan, required tools, an exemption on a file that fires: all pinned, with its instructions.
    planned = manifest(trigger_config={"interval_minutes": 1}, approval_exempt_tools=["x_send"],
                       execution_plan=[{"toolName": "x_send", "parameters": {"to": "a@b"}}])
    reach = file_reach(planned, "body")
    assert set(reach) == {"metadata.trigger_config", "metadata.execution_plan", "metadata.approval_exempt_tools",
                          "instructions"}
    assert reach_lines(planned) == ["fires by itself: every 1 min", 'calls x_send {"to": "a@b"}',
                                    "skips your approval for (marked destructive): x_send"]
    # How often it fires is its reach too: daily trusted is not every minute trusted.
    other = manifest(trigger_config={"schedule": "0 9 * * *"}, approval_exempt_tools=["x_send"],
                     execution_plan=[{"toolName": "x_send", "parameters": {"to": "a@b"}}])
    assert file_reach(other, "body") != reach
    # An event is: `skills emit` starts it.
    event = manifest(trigger_config={"event": "mail"}, required_tools=["x_send"])
    assert file_reach(event)["metadata.trigger_config"] == {"event": "mail"}


def test_security_md_shows_the_classification_as_it_is() -> None:
    from skills.owner.reach import coverage_table
    from tests.conftest import ROOT

    page = (ROOT / "docs" / "security.md").read_text()
    shown = page.split("<!-- coverage: generated -->\n", 1)[1].split("\n<!-- /coverage -->", 1)[0]
    assert shown == coverage_table(), "regenerate docs/security.md's table from skills.owner.reach.coverage_table()"


def test_a_reminder_to_the_owner_is_read_from_its_reach_fields() -> None:
    """Every call it may make messages the owner and it reads nothing first: its time is the point (a summary
    reads something, and may come a few minutes late; a reminder that is late is a wrong reminder)."""
    def agent(**fields: object) -> SkillSpec:
        return SkillSpec.model_validate({"agent_id": "a", "name": "n", "trigger_type": "cron",
                                         "instructions": "Tell me to leave for the train", **fields})

    notifier = "outbox_send_message"
    assert reminds_only(agent(), notifier)  # no tools: its answer goes to the notifier
    assert reminds_only(agent(required_tools=[notifier, "telegram_send_message"]), notifier)
    assert reminds_only(agent(deliver_to=[{"tool": "telegram_send_message", "arguments": {"chat_id": 1}}]), notifier)
    assert reminds_only(agent(execution_plan=[PlanStep(id="ping", tool_name="ping_notify", parameters={})]), "ping_notify")
    # Anything it reads or calls besides makes it work that may start a few minutes late.
    assert not reminds_only(agent(required_tools=[notifier, "gmail_get_new_emails"]), notifier)
    assert not reminds_only(agent(context_from=["self"]), notifier)
    assert not reminds_only(agent(preflight=[{"tool": "outbox_list_messages", "arguments": {}, "skip_if": "empty"}]),
                            notifier)
    assert not reminds_only(agent(deliver_to=[{"tool": "ledger_append", "arguments": {}}]), notifier)
