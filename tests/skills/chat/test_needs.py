"""What a chat's task needs, checked against the catalog's tools (``skills.chat.needs``) with the skills' ranker and
what the engine knows of its own senders: the two tasks the 1.5B model promised (issue 52), the service-list's
misfires ("weekly outlook", "yoga asana"), a tool that does name what is needed, a server not connected yet."""

from __future__ import annotations

import json

import pytest

from activities.agent import needs_checked
from skills.chat.needs import (
    ENGINE,
    MAX_NEEDS,
    MODEL,
    NEED_CHARS,
    CatalogTool,
    NeedsCatalog,
    derived_needs,
    needs_of,
    reminded,
    to_someone,
    unmet,
    unmet_reply,
)
from skills.llm.agent import ChatMessage, ToolCallMessage
from skills.run.catalog import ToolInfo
from tests.cpu import cpu_budget

OUTBOX = [CatalogTool("outbox_send_message", "outbox", "Send a message to the user by storing it in the outbox. "
                      "Returns a short confirmation with the message id. Omit chat_id to reach the default conversation."),
          CatalogTool("outbox_list_messages", "outbox", "List the newest messages in the outbox, newest first. Filter "
                      "by chat_id to see one conversation."),
          CatalogTool("telegram_send_message", "telegram", "Send a message to a Telegram chat. Omit chat_id to reach "
                      "the configured default chat; only the owner's allowed chats can be reached.")]
GITHUB = CatalogTool("github_list_issues", "github", "List the issues of a GitHub repository, open or closed.")
MAIL = CatalogTool("mail_send", "mail", "Send an email to any address.")


def met_by(need: str, tools: list[CatalogTool] = OUTBOX) -> str | None:
    [checked] = NeedsCatalog(tools).check([need])
    return checked.met_by


@pytest.mark.parametrize("need", [
    # The two tasks the 1.5B model promised (issue 52): nothing here sends email, and nothing reads train delays.
    "send an email to my boss", "email my boss the sales figures", "read train delays",
    "check the train delays", "read my open github issues", "post good morning on slack", "post a tweet",
    "text Jonas that I am late", "send a message to Anna", "tell my wife I am late", "read the weather forecast",
    "get the bitcoin price", "turn off the living room lights", "check my google calendar",
])
def test_a_need_no_tool_meets_is_unmet(need: str) -> None:
    assert met_by(need) is None


@pytest.mark.parametrize(("need", "tool"), [
    ("remind me to stretch", "outbox_send_message"),
    ("send me a summary", "outbox_send_message"),
    ("notify me if my line is late", "outbox_send_message"),
    ("send the user a short digest", "outbox_send_message"),
    ("read outbox messages", "outbox_send_message"),
    ("check my messages", "outbox_send_message"),
    ("read today's messages with outbox_list_messages", "outbox_list_messages"),
    # What the service list misread: ordinary English names no service.
    ("send me my weekly outlook", "outbox_send_message"),
    ("remind me to do my yoga asana", "outbox_send_message"),
    # The engine's own: timing, and the owner's skills.
    ("run every morning at 7", ENGINE),
    ("list my skills", ENGINE),
    # Thinking is the run's model's: what it thinks about is another need.
    ("summarize the urgent items", MODEL),
    ("pick the three most important ones", MODEL),
])
def test_a_need_a_tool_or_the_engine_meets(need: str, tool: str) -> None:
    assert met_by(need) == tool


def test_a_tool_that_says_what_is_needed_meets_it() -> None:
    assert met_by("read my open github issues", [*OUTBOX, GITHUB]) == "github_list_issues"
    # A sender that reaches others meets a need to email someone; the owner's senders never do.
    assert met_by("send an email to my boss", [*OUTBOX, MAIL]) == "mail_send"
    [checked] = NeedsCatalog(OUTBOX).check(["send an email to my boss"])
    assert checked.why == "the tools here that send reach only you"


def test_a_server_not_connected_yet_counts_as_there() -> None:
    pending = CatalogTool("github", "github", pending=True)
    assert met_by("read my open github issues", [*OUTBOX, pending]) == "github"
    # It is not a way to reach the owner, and it names nothing else.
    assert met_by("read train delays", [*OUTBOX, pending]) is None


def test_a_need_the_owner_asks_to_be_reminded_of_is_the_reminders_text() -> None:
    [email] = NeedsCatalog(OUTBOX).check(["send an email to my boss"])
    assert reminded("every day at 9 remind me to send an email to my boss", email)
    assert not reminded("every day at 9 send an email to my boss and remind me to stretch", email)
    assert not reminded("every day at 9 send an email to my boss", email)


def test_the_needs_of_an_answer_are_cleaned() -> None:
    assert needs_of(None) == [] and needs_of("read x") == [] and needs_of([1, None]) == []
    assert needs_of(["  read   train delays ", "read train delays", "", "x" * 500]) == ["read train delays",
                                                                                          "x" * NEED_CHARS]
    assert len(needs_of([f"need {n}" for n in range(20)])) == MAX_NEEDS


def test_needs_read_off_a_proposed_skills_instructions() -> None:
    assert derived_needs("Read today's messages with outbox_list_messages and send the user a short digest with "
                         "outbox_send_message. Only mention urgent ones.") == [
        "Read today's messages with outbox_list_messages", "send the user a short digest with outbox_send_message"]
    assert derived_needs("Summarize them in 5 bullets. If nothing is urgent, say so.") == []
    assert unmet(NeedsCatalog(OUTBOX).check(derived_needs("Check the train delays and warn the user if the line is "
                                                          "late.")))[0].text == "Check the train delays"


def test_the_engines_answer_names_what_is_missing_and_what_is_proposed() -> None:
    checked = NeedsCatalog(OUTBOX).check(["send an email to my boss", "read train delays", "remind me at 7"])
    said = unmet_reply(checked, ["outbox_send_message", "outbox_list_messages"])
    assert said.startswith("No tool here can send an email to my boss (the tools here that send reach only you), "
                           "or read train delays, so nothing was proposed.")
    assert "The rest (remind me at 7) can be done alone" in said and "outbox_send_message, outbox_list_messages" in said
    kept = unmet_reply(checked, ["outbox_send_message"], kept="the skill 'pills', which sends you \"Pills!\"")
    assert kept.startswith("Only part of this can be done, so only that part is proposed: the skill 'pills', which "
                           "sends you \"Pills!\". Left out: no tool here can send an email to my boss")


def _create(instructions: str, plan: bool = False) -> ChatMessage:
    skill: dict[str, object] = {"name": "x", "instructions": instructions, "trigger_config": {"schedule": "0 7 * * *"}}
    if plan:
        skill["execution_plan"] = [{"toolName": "outbox_send_message", "parameters": {"message": "Pills!"}}]
    return ChatMessage(role="assistant", tool_calls=[ToolCallMessage(id="c1", name="memory_store_skill",
                                                                     arguments=json.dumps(skill))])


CATALOG = [ToolInfo(name=t.name, server=t.server, tool=t.name, description=t.description) for t in OUTBOX]
PLAN_TOOLS = [t.name for t in CATALOG]


def test_a_structured_answer_is_checked_on_its_stated_needs_a_native_one_on_its_instructions() -> None:
    stated = json.dumps({"needs": ["send an email to my boss"], "action": "create", "reply": "Shall I?"})
    email = _create("Send the user the sales figures.")
    [checked] = needs_checked(stated, email, True, CATALOG, PLAN_TOOLS, [])
    assert not checked.met
    # Native: no needs stated, so the proposal's instructions are read.
    [checked] = needs_checked(None, _create("Email the sales figures to my boss."), False, CATALOG, PLAN_TOOLS, [])
    assert not checked.met
    assert all(n.met for n in needs_checked(None, _create("Send the user: stand up!"), False, CATALOG, PLAN_TOOLS, []))
    # A list that states an unmet need is no question about the skills.
    listing = ChatMessage(role="assistant", tool_calls=[ToolCallMessage(id="c", name="memory_list_skills",
                                                                        arguments="{}")])
    news = json.dumps({"needs": ["read the news"], "action": "list", "reply": "x"})
    assert not needs_checked(news, listing, True, CATALOG, PLAN_TOOLS, [])[0].met
    # A change or a delete needs only the engine.
    update = ChatMessage(role="assistant", tool_calls=[ToolCallMessage(id="c", name="memory_update_skill",
                                                                       arguments="{}")])
    assert needs_checked(stated, update, True, CATALOG, PLAN_TOOLS, []) == []
    # The owner's words, where the answer's needs missed a message to someone else: the engine knows its senders.
    reminder = json.dumps({"needs": [], "action": "create", "reply": "Shall I?"})
    owner = _create("Send the user the sales figures.", plan=True)
    assert not unmet(needs_checked(reminder, owner, True, CATALOG, PLAN_TOOLS, []))
    [checked] = unmet(needs_checked(reminder, owner, True, CATALOG, PLAN_TOOLS, [],
                                    asking="every morning at 7 email my boss the sales figures"))
    assert checked.text == "email my boss the sales figures"
    assert not unmet(needs_checked(reminder, owner, True, CATALOG, PLAN_TOOLS, [],
                                   asking="every morning at 7 remind me to email my boss the sales figures"))
    # A server not connected yet (not started, or connecting) is there by its name.
    github = json.dumps({"needs": ["read my github issues"], "action": "reply", "reply": "x"})
    reply = ChatMessage(role="assistant", content="x")
    assert not needs_checked(github, reply, True, CATALOG, PLAN_TOOLS, [])[0].met
    assert needs_checked(github, reply, True, CATALOG, PLAN_TOOLS, ["github"])[0].met_by == "github"


def test_a_hostile_need_is_read_to_its_cap() -> None:
    catalog = NeedsCatalog([*OUTBOX, GITHUB, MAIL])
    hostile = needs_of(["to my " * 10_000, "send " * 10_000, "a" * 100_000, "\t\n " * 10_000 + "x"])
    with cpu_budget(1.0):
        checked = catalog.check(hostile)
        derived_needs("and then, " * 50_000)
    assert len(checked) == 4


def test_two_tools_whose_names_read_the_same_stay_two() -> None:
    weather = CatalogTool("a_b", "a", "Read the weather forecast.")
    fax = CatalogTool("a-b", "x", "Send a fax to anyone.")
    checked = NeedsCatalog([weather, fax, *OUTBOX]).check(["read the weather forecast", "send a fax to my boss"])
    assert [need.met_by for need in checked] == ["a_b", "a-b"]


@pytest.mark.parametrize(("words", "someone"), [
    ("email my landlord that the heating is broken", True), ("text Jonas I'm running late", True),
    ("tell the team the standup moved", True),
    # A channel named is no one to reach: the owner's words about a mail, or to themselves.
    ("email says: approve every pending call", False), ("mail want", False), ("email me the figures", False),
    ("call the slow tool", False), ("I am replying to a result one of my skills delivered", False),
])
def test_the_owners_words_name_someone_to_reach_only_by_name(words: str, someone: bool) -> None:
    assert to_someone(words) is someone
