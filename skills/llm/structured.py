"""A chat turn that needs no free-form tool calling: the model answers one JSON object, to a schema.

Small models do not call tools reliably; most servers (llama.cpp, vLLM, Ollama, OpenAI) can hold a model
to a JSON schema (``response_format: {"type": "json_schema", ...}``): llama.cpp and Ollama turn it into a
grammar, so even a 1.5B model's answer has the shape. The answer names an action and its fields:

    {"needs": ["read today's messages"], "action": "create",
     "skill": {"name": ..., "instructions": ..., "trigger_config": {...}, ...}, "reply": "I can ... Shall I?"}

``needs`` is what the task needs from the world, in the model's own words: the engine checks each against the
catalog (``skills.chat.needs``) and answers an unmet one itself.

``structured_calls`` turns it into the management tool call it means (``create`` is ``memory_store_skill``
with ``skill``), which takes the road of every other call: the normalizer checks it, a widening change is
proposed. The schema and its instruction are small (about 300 tokens, and no tool schemas are sent), so a
4,096-token context holds them. Pure code, no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any, Literal, NamedTuple

from skills import linear
from skills.chat.needs import MAX_NEEDS, needs_of
from skills.errors import SkillValidationError
from skills.llm.agent import ENGINE_NOTE, ChatMessage, for_the_model
from skills.llm.textcalls import MAX_CHARS, TextCall, unfenced
from skills.management.arguments import agent_of, required_ref, update_request
from skills.spec.fields import parse_bool
from skills.spec.models import Skill

ACTIONS: dict[str, str] = {
    "create": "memory_store_skill",
    "update": "memory_update_skill",
    "delete": "memory_delete_skill",
    "list": "memory_list_skills",
}
"""Each action and the management tool it calls; ``reply`` calls none."""
ToolMode = Literal["auto", "native", "structured"]
REPLY = "reply"
ASK_AGAIN = (f"{ENGINE_NOTE}your answer made no tool call, so nothing was stored, proposed or changed. Answer my "
             "message above again, as the one JSON object described.)")
"""The note before a turn is asked again structured (``SKILLS_LLM_TOOLS=auto``): the model's history then says
its claim did not happen."""
WHEN_TABLE = ('  The words and their trigger_config: "in 5 minutes" {"in_minutes": 5}; "tomorrow at 9" {"at": '
              '"YYYY-MM-DDT09:00:00"} (local time); "every 10 minutes" {"schedule": "*/10 * * * *"}; "every hour" '
              '{"schedule": "0 * * * *"}; "every day at 9" {"schedule": "0 9 * * *"}; "every weekday at 8:30" '
              '{"schedule": "30 8 * * 1-5"}; "every Monday at 10pm" {"schedule": "0 22 * * 1"}; "every 90 minutes" '
              '{"interval_minutes": 90}. Cron is minute hour day-of-month month day-of-week (0 is Sunday). No time '
              "given? Ask when; do not guess.")
"""The scheduling playbook's table, in short: a structured turn's prompt carries no playbook (``structured_prompt``)."""
SCHEMA_NAME = "chat_action"
NEEDS = "needs"
MAX_SKILLS = 30
"""The user's skills a structured prompt lists for a change (past it, counted)."""
MAX_TOOL_NAMES = 60
"""Tool names the instruction lists for a skill's plan: a catalog past it is cut (the normalizer still checks)."""

KIND = "kind"
FIXED = "fixed message"
REPORT = "read and report"
"""A new skill's first field: the tier, as a choice in words. A small model holds to a grammar whatever it
writes, and Qwen2.5 1.5B chose between a plan and required_tools by the example nearest it; it answers the
question in words better. The engine drops the field: the plan or required_tools it chose say the tier."""

TRIGGERS: dict[str, dict[str, Any]] = {
    "in_minutes": {"type": "integer", "minimum": 1},
    "in_hours": {"type": "integer", "minimum": 1},
    "at": {"type": "string"},
    "schedule": {"type": "string"},
    "interval_minutes": {"type": "integer", "minimum": 1},
}
"""The trigger shapes a structured answer may give, one key each (the normalizer reads and checks them)."""


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties) if required is None else required,
            "additionalProperties": False}


def _new_skill(plan_tools: list[str]) -> dict[str, Any]:
    """A new skill, Direct (one plan step) or Agent (its tools): every field it needs is required, and a tool
    is one the catalog lists, so a grammar-held model can neither leave the skill out nor invent a tool."""
    tool = {"type": "string", "enum": plan_tools}
    trigger = {"anyOf": [_object({key: shape}) for key, shape in TRIGGERS.items()]}
    step = _object({"toolName": tool, "parameters": {"type": "object"}})
    direct = _object({KIND: {"type": "string", "const": FIXED}, "name": {"type": "string"}, "trigger_config": trigger,
                      "execution_plan": {"type": "array", "items": step, "minItems": 1, "maxItems": 1},
                      "instructions": {"type": "string"}})
    agent = _object({KIND: {"type": "string", "const": REPORT}, "name": {"type": "string"}, "trigger_config": trigger,
                     "required_tools": {"type": "array", "items": tool, "minItems": 1},
                     "instructions": {"type": "string"}})
    return {"anyOf": [direct, agent]}


_CHANGE: dict[str, Any] = {"type": "object", "properties": {
    "name": {"type": "string"}, "instructions": {"type": "string"}, "enabled": {"type": "boolean"},
    "trigger_config": {"type": "object", "properties": TRIGGERS}}}
"""An update's fields: only those that change."""


def actions(offered: Collection[str], plan_tools: Collection[str] | None = None) -> list[str]:
    """The actions a turn offering these tools may answer with (``reply`` always). ``create`` needs a tool a
    skill may call (``plan_tools``; None: not known, offered anyway)."""
    return [action for action, tool in ACTIONS.items()
            if tool in offered and (action != "create" or plan_tools is None or plan_tools)] + [REPLY]


def answer_schema(offered: Collection[str], plan_tools: list[str] | None = None,
                  only: Collection[str] | None = None) -> dict[str, Any]:
    """The ``response_format`` of a structured turn: one object whose every field is required, ``null`` where
    its action does not use it (an optional field is one a small model skips: asked to create, it wrote the
    action and the reply and no skill). ``action`` comes first and ``reply`` last (a grammar writes the fields
    in order, so the reply is written once the skill is). The root is a plain object, as OpenAI's
    ``json_schema`` asks; llama.cpp, vLLM and Ollama turn the whole of it into a grammar. ``only``: the actions
    the user's words allow this turn (``skills.chat.intent``): the enum narrows, the fields (what the prompt
    describes) stay."""
    allowed = actions(offered, plan_tools)
    enum = [action for action in allowed if only is None or action in only or action == REPLY]
    # What the task needs first: a model that has said "send an email to my boss" then picks the action.
    properties: dict[str, Any] = {NEEDS: {"type": "array", "items": {"type": "string"}, "maxItems": MAX_NEEDS},
                                  "action": {"type": "string", "enum": enum}}
    if any(a in allowed for a in ("update", "delete")):
        properties["skill_id"] = _nullable({"type": "string"})
    if "create" in allowed:
        properties["skill"] = _nullable(_new_skill(plan_tools) if plan_tools else {"type": "object"})
    if "update" in allowed:
        properties["change"] = _nullable(_CHANGE)
    properties["reply"] = {"type": "string"}
    return {"type": "json_schema", "json_schema": {
        "name": SCHEMA_NAME, "strict": False, "schema": _object(properties)}}


def instruction(offered: Collection[str], tool_names: list[str]) -> str:
    """What the system prompt says of the answer's shape (the schema alone does not reach every model's
    eyes: a grammar holds its output, it does not show it the fields), with an example of each tier made of
    the catalog's own tools (a small model copies an example better than it follows a rule). ``tool_names``:
    the tools a skill's plan may call. The same for every turn of a catalog (``known_skills`` is what
    changes)."""
    allowed = actions(offered, tool_names)
    fields = list(answer_schema(offered, tool_names)["json_schema"]["schema"]["properties"])
    lines = [f"Answer with ONE JSON object and nothing else, with the fields {', '.join(map(json.dumps, fields))}; a field the action does "
             "not use is null. You make no tool calls: the engine makes the change your answer names.",
             f'"{NEEDS}": what the task needs done in the world, a few words each; [] for a fixed message to the '
             "user, a question or a change to their skills. The engine checks them against the tools.",
             "action is one of: " + ", ".join(allowed) + "."]
    if "create" in allowed:
        lines.append(f'- "create": a new skill in "skill". First its {KIND}: "{FIXED}" when every fire sends the '
                     f'same fixed text, as a reminder does; "{REPORT}" when something must be read, checked or '
                     "summarized when it fires. Then name; trigger_config, exactly one of "
                     '{"in_minutes": N}, {"in_hours": N}, {"at": "YYYY-MM-DDTHH:MM:SS"}, '
                     '{"schedule": "<5-field cron>"}, {"interval_minutes": N}. A fixed message has an execution_plan '
                     "of one step (a tool and its parameters, the text in full). A read and report has "
                     "required_tools (the tools it reads with and the one it sends with), and instructions that are "
                     "complete orders for a future run that never saw this chat.")
        lines.append(WHEN_TABLE)
    if "update" in allowed:
        lines.append('- "update": skill_id (the skill\'s name or id) and "change" with only the fields to change, '
                     'e.g. {"enabled": false} or {"trigger_config": {"schedule": "30 9 * * 1-5"}}.')
    if "delete" in allowed:
        lines.append('- "delete": skill_id.')
    if "list" in allowed:
        lines.append('- "list": the user asks which skills exist.')
    lines.append('- "reply": only talk: a question back, an answer, or the task needs a tool not listed below '
                 "(say which one is missing).")
    lines.append('"reply" is one or two sentences to the user: say what you propose; never say it is done.')
    if tool_names:
        shown = tool_names[:MAX_TOOL_NAMES]
        more = f" (and {len(tool_names) - len(shown)} more)" if len(tool_names) > len(shown) else ""
        lines.append(f"Tools a skill may use: {', '.join(shown)}{more}.")
        lines.extend(_examples(fields, tool_names))
    return "\n".join(lines)


def known_skills(offered: Collection[str], skills: Sequence[str]) -> str:
    """The user's skills, one line each, when the turn may change them: a structured turn cannot call a tool to
    read them, and a change ("move it to 9:30") needs what is there (weekdays)."""
    if not skills or not {"update", "delete"} & set(actions(offered)):
        return ""
    shown = list(skills[:MAX_SKILLS])
    more = f"\n(and {len(skills) - len(shown)} more)" if len(skills) > len(shown) else ""
    return "The user's skills now:\n" + "\n".join(f"- {line}" for line in shown) + more


def _examples(fields: list[str], tool_names: list[str]) -> list[str]:
    """One Direct and one Agent answer, and two that decline, written with tools the catalog lists, each with the
    answer's ``fields`` in order, null where unused (none if no tool sends, or the answer cannot create)."""
    send = next((t for t in tool_names if "send" in t), None)
    read = next((t for t in tool_names if t != send and any(w in t for w in ("list", "read", "get", "search"))), None)
    if send is None or "skill" not in fields:
        return []

    def answer(skill: dict[str, Any] | None, reply: str, needs: list[str]) -> str:
        given = {NEEDS: needs, "action": "create" if skill else REPLY, "skill": skill, "reply": reply}
        return json.dumps({field: given.get(field) for field in fields}, ensure_ascii=False)

    said = ["Examples:",
            '"every weekday at 8:30 send me the message: stand up" -> ' + answer(
                {KIND: FIXED, "name": "stand up", "trigger_config": {"schedule": "30 8 * * 1-5"},
                 "execution_plan": [{"toolName": send, "parameters": {"message": "Stand up!"}}],
                 "instructions": "Send the user: Stand up!"},
                "I can send you 'Stand up!' every weekday at 8:30. Shall I?", [])]
    if read is not None:
        said.insert(1, '"every evening at 6 read what came in today and summarize it for me" -> ' + answer(
            {KIND: REPORT, "name": "evening digest", "trigger_config": {"schedule": "0 18 * * *"}, "required_tools": [read, send],
             "instructions": f"Read today's messages with {read} and send the user a short digest with {send}."},
            "I can send you a digest of the day's messages every evening at 6. Shall I?", ["read today's messages"]))
    # A task no tool does: its needs, and a reply that says so. Asked to summarize their GitHub issues, the 1.5B
    # model made a skill that reads the outbox instead, with only a posting example before it. The examples are
    # of things no tool listed names (a Slack example called Slack unreachable with a Slack tool connected).
    for word, task, need in UNMET_EXAMPLES:
        if not any(word in t.lower() for t in tool_names):
            said.append(f'"{task}" -> ' + answer(None, f"No tool listed can {need}.", [need]))
    return said


UNMET_EXAMPLES = (("train", "every weekday at 7 check the train delays and warn me", "read train delays"),
                  ("mail", "email my boss the sales figures", "send an email to my boss"))
"""Tasks the examples of a need no tool meets may show, each with a word of the tool it would need: shown only
when no tool's name has that word."""


class Read(NamedTuple):
    """A structured answer as the engine takes it: the calls it makes, the reply the owner reads, and whether
    that reply is the engine's (it dropped or changed the model's call: the model's words would say otherwise)."""

    calls: list[TextCall]
    reply: str
    by_engine: bool = False


def structured_calls(text: str | None, offered: Collection[str], only: Collection[str] | None = None,
                     skills: Sequence[Skill] = (), said: str = "") -> tuple[list[TextCall], str] | None:
    """The management call a structured answer means, and the reply to the user (``structured_read``'s)."""
    read = structured_read(text, offered, only, skills, said)
    return None if read is None else (read.calls, read.reply)


def structured_read(text: str | None, offered: Collection[str], only: Collection[str] | None = None,
                    skills: Sequence[Skill] = (), said: str = "") -> Read | None:
    """The management call a structured answer means, and its reply to the user; None when ``text`` is no
    such answer (not JSON, no known action): it is then text, as any reply. A missing field is sent as
    missing: the tool's refusal names it, and the model answers again. An action outside ``only`` (from an
    endpoint that did not hold the grammar) makes no call. A change's skill is the one the user's words
    name when the model named its near twin (``words_name``, over the user's ``skills`` and the message
    ``said``), and where the words pause or resume it, or give a time alone, the change does what they say
    (``skills.chat.intent``), read to the same ``MESSAGE_CHARS`` of the owner's own words; a pause or resume
    they do not say, or refuse ("don't pause it"), is taken out, and a skill they name only to exclude ("not the water one")
    is not changed. Where the engine dropped or changed the model's call, the reply is the engine's sentence
    saying so, not the model's ("Moved to 10." over a change never made)."""
    if not text or len(text) > MAX_CHARS:
        return None
    from skills.chat.intent import MESSAGE_CHARS, own_words  # a chat's reader: loaded with its first turn

    said = own_words(said)[:MESSAGE_CHARS]
    try:
        value = json.loads(unfenced(text))
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or value.get("action") not in actions(offered):
        return None
    reply = value.get("reply")
    reply = reply.strip() if isinstance(reply, str) else ""
    action = value["action"]
    if action == REPLY:
        return Read([], reply)
    if only is not None and action not in only:
        return Read([], f"Nothing was changed: the model answered with a {action}, which your own words do not "
                        "ask for (a quoted or negated word asks for nothing). Say plainly what to change.", True)
    skill = value.get("skill") if isinstance(value.get("skill"), dict) else {}
    if action == "create":
        made = OwnerChange({key: value for key, value in skill.items() if key != KIND}, [])
    else:
        change = value.get("change") if isinstance(value.get("change"), dict) else skill
        made = owner_change(action, value.get("skill_id"), change, skills, said)
    if made.arguments is None:
        return Read([], made.refusal, True)
    call = TextCall(name=ACTIONS[action], arguments=json.dumps(made.arguments, ensure_ascii=False))
    if made.said_instead:
        return Read([call], instead_sentence(action, made.said_instead), True)
    return Read([call], reply)


class OwnerChange(NamedTuple):
    """A change or a delete as the owner's words make it: its arguments (None: nothing is made, ``refusal``
    says why), and what the words decided in the model's place."""

    arguments: dict[str, Any] | None
    said_instead: list[str]
    refusal: str = ""


def instead_sentence(action: str, said_instead: Sequence[str]) -> str:
    """The engine's sentence over a change whose fields the owner's words decided."""
    return (f"Your own words decided this {action}, not the model's reading: {'; '.join(said_instead)}. "
            "What was done is below.")


def owner_change(action: str, ref: Any, change: dict[str, Any], skills: Sequence[Skill], said: str, *,
                 whole: bool = True) -> OwnerChange:
    """An ``update`` (its fields ``change``) or a ``delete`` of the skill ``ref``, as the owner's own words
    ``said`` (already cut to them) make it: on the skill they name over its near twin, with the pause or resume
    they say (none they do not say or refuse), at the time they give alone; nothing for a skill they name only
    to exclude. The structured answer's (``structured_read``) and a native call's (``native_read``) alike; a
    structured answer is the ``whole`` change, so what the words say and it left out is put in; a native call
    may be one of several (a pause, then a move), so only the fields it sends are made to say what the words do."""
    from skills.chat.intent import enabled_refused, enabled_said, moved_to

    said_instead: list[str] = []
    named = words_name(ref, [s.name for s in skills], said)
    if named != ref:
        said_instead.append(f"the skill is '{named}', as your words name it")
    target = next((s for s in skills if str(named).strip().lower() in (s.name.lower(), str(s.id))), None)
    if target is not None and excluded(said, target.name):
        return OwnerChange(None, [], f"Nothing was changed: the model chose '{target.name}', which your words "
                                     "name only to exclude it. Say which skill to change.")
    if action == "delete":
        return OwnerChange({"skill_id": named}, said_instead)
    arguments = {**change, "skill_id": named}
    if (enabled := enabled_said(said)) is not None and (whole or "enabled" in arguments):
        # "pause the morning summary": the words say it; the 1.5B model sent a change that left it enabled.
        if _enabled(arguments.get("enabled")) is not enabled:
            said_instead.append("resumed" if enabled else "paused")
        arguments["enabled"] = enabled
    elif "enabled" in arguments and said.strip() and enabled is None:
        # "don't pause it, just move it": the 1.5B model's change paused it all the same. A pause or a resume
        # is made only where the owner's own words say it.
        del arguments["enabled"]
        said_instead.append("not paused or resumed: your words say not to" if enabled_refused(said) else
                            "not paused or resumed: your words do not say pause or resume")
    trigger = target.trigger_config if target is not None else None
    sends = [key for key in TRIGGER_KEYS if key in arguments]
    if trigger is not None and trigger.schedule and (whole or sends) and \
            (moved := moved_to(said, trigger.schedule)) is not None:
        sent = arguments.get("trigger_config")
        schedule = sent.get("schedule") if isinstance(sent, dict) else arguments.get("schedule")
        if schedule != moved:
            said_instead.append(f"fires at cron '{moved}', its days kept")
        for key in sends:
            del arguments[key]
        arguments["trigger_config"] = {"schedule": moved, "timezone": trigger.timezone}
    return OwnerChange(arguments, said_instead)


TRIGGER_KEYS = ("trigger_config", "schedule", "cron", "interval_minutes", "in_minutes", "at", "trigger_type")
"""The fields a change sends its trigger by (``trigger_config``, or its keys at the root)."""


def _enabled(value: Any) -> bool | None:
    try:
        return parse_bool(value)
    except ValueError:
        return None


NATIVE_CHANGES = {ACTIONS["update"]: "update", ACTIONS["delete"]: "delete"}
"""A native call's tools the owner's words decide: a change of an existing skill, or its delete."""
CHANGE_TOOLS = frozenset({*NATIVE_CHANGES, ACTIONS["create"]})


def native_read(calls: Sequence[TextCall], skills: Sequence[Skill], said: str) -> tuple[list[TextCall | None], str | None]:
    """The calls a model made natively, each as the owner's words ``said`` make it (``owner_change``): a change
    or a delete of an existing skill on the one the words name, with only the pause or resume they say, at the
    time they give alone; none (``None`` in its place) for a skill they name only to exclude, nor any change,
    delete or new skill when the words are a question ("can you pause things?"). Other calls, and a new skill
    (always proposed for the owner's yes), are left as they are. With them, the engine's sentence when it
    dropped or changed a call (None when it did neither): the model's reply would say otherwise."""
    from skills.chat.intent import MESSAGE_CHARS, a_question, own_words

    said = own_words(said)[:MESSAGE_CHARS]
    question = a_question(said)
    out: list[TextCall | None] = []
    sentences: list[str] = []
    for call in calls:
        action = NATIVE_CHANGES.get(call.name)
        if question and call.name in CHANGE_TOOLS:
            out.append(None)
            sentences.append(f"Nothing was changed: the model answered your question with a call to {call.name}, "
                             "and a question asks for no change. Say plainly what to change.")
            continue
        if action is None:
            out.append(call)
            continue
        try:
            fields = json.loads(call.arguments or "{}")
            ref, _, patch = update_request(fields) if action == "update" else (required_ref(fields, call.name), None, {})
        except (ValueError, RecursionError, TypeError, AttributeError, SkillValidationError):
            out.append(call)  # the tool's refusal names what is wrong, and the model answers again
            continue
        agent = agent_of(fields)
        made = owner_change(action, ref, patch, skills, said, whole=False)
        if made.arguments is None:
            out.append(None)
            sentences.append(made.refusal)
        elif made.said_instead:
            arguments = made.arguments if agent is None else {**made.arguments, "agent_id": agent}
            out.append(TextCall(call.name, json.dumps(arguments, ensure_ascii=False)))
            sentences.append(instead_sentence(action, made.said_instead))
        else:
            out.append(call)
    return out, " ".join(dict.fromkeys(sentences)) or None


def excluded(said: str, name: str) -> bool:
    """Whether the user's words name the skill ``name`` only to exclude it ("no, not the water one", "all
    but the summary"): each word of its name they hold (of four letters or more) stands right after a not,
    never, except or but (a the, my... between), and none stands elsewhere."""
    text = said.lower()
    found = [match.start() for word in _name_words(name) for match in linear.finditer(rf"\b{linear.escape(word)}\b", text)]
    return bool(found) and all(_EXCLUDING.search(text[max(0, start - 40):start]) is not None for start in found)


_EXCLUDING = linear.compile(r"\b(?:not|never|except|but)\s+(?:(?:the|my|a|an|that|this|those|these)\s+)?$")


def _name_words(name: str) -> list[str]:
    return [word for word in linear.split(r"[^\w]+", name.lower())
            if len(word) >= 4 and word not in ("reminder", "skill")]


def stated_needs(text: str | None) -> list[str] | None:
    """The needs a structured answer states (``skills.chat.needs.needs_of``); None when ``text`` is no JSON object."""
    if not text or len(text) > MAX_CHARS:
        return None
    try:
        value = json.loads(unfenced(text))
    except (ValueError, RecursionError):
        return None
    return needs_of(value.get(NEEDS)) if isinstance(value, dict) else None


def words_name(ref: Any, names: Sequence[str], said: str) -> Any:
    """The skill a change names, as the user's words name it: ``ref`` when the words hold it as written (or
    name no skill), else the one skill whose name they hold as written and that is ``ref``'s near twin (the
    same letters and digits: the user's "drink water" beside the bundled "drink-water"). A 1.5B model, listed
    both, proposed deleting the bundled one for "delete the drink water reminder"."""
    if not isinstance(ref, str) or not said or _holds(said, ref):
        return ref
    twins = [name for name in names if _letters(name) == _letters(ref) and _holds(said, name)]
    return twins[0] if len(twins) == 1 else ref


def _holds(said: str, name: str) -> bool:
    # Not inside a longer word: no letter, digit or _ either side (RE2, in ``skills.linear``, has no lookaround).
    name = name.strip().lower()
    return bool(name) and linear.search(rf"(?:^|[^\w]){linear.escape(name)}(?:[^\w]|$)", said.lower()) is not None


def _letters(text: str) -> str:
    return "".join(c for c in text.lower() if c.isalnum())


def tool_mode(setting: ToolMode, conversation: Sequence[ChatMessage], turns: int | None) -> ToolMode:
    """How this turn's model is asked (``SKILLS_LLM_TOOLS``). ``auto`` learns: a session whose model had to be
    asked again structured within its recent turns (``turns``, the window the model sees) is asked structured
    from the start, not natively first (a request of 3,000 tokens a small local model reads for a minute,
    only to answer without a call again)."""
    if setting != "auto":
        return setting
    recent = for_the_model(list(conversation), turns)
    return "structured" if any(m.role == "user" and m.content == ASK_AGAIN for m in recent) else "auto"
