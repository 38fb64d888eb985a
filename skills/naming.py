"""How the engine shows up in Temporal: every workflow type, every activity started by name, every
signal (each spelt here once), schedule ids and summaries.

`temporal schedule list` and `temporal workflow list --query "SkillName='…'"` are
how a user inspects the engine, so everything here aims to read well there.
"""

from __future__ import annotations

import re
import unicodedata

from skills.spec.models import SkillSpec

# --- workflow types: what `temporal workflow list` shows, and what schedules and clients start ------------

REGISTER_SKILL = "RegisterSkill"
REGISTER_SKILLS = "RegisterSkills"
CHANGE_SKILL = "ChangeSkill"
SKILL_RUN = "SkillRun"
MAINTENANCE = "Maintenance"
SYNC_SKILL_FILES = "SyncSkillFiles"
CHAT_TURN = "ChatTurn"
EMIT_EVENT = "EmitEvent"
TRUST_SKILL = "TrustSkill"
"""The one workflow that records (or forgets) the owner's trust in a SKILL.md skill's executable parts."""
DECIDE_CHANGE = "DecideChange"
"""The one workflow that answers a change a chat proposed and, approved, makes it (workflows/proposals.py)."""

CHANGE_GRANT = "ChangeGrant"
"""The one workflow that creates or revokes a standing grant (workflows/grants.py)."""

DELIVERY_DIGEST = "DeliveryDigest"
"""One per ``deliver_to`` destination with ``digest_minutes``: its results gathered, sent as one (workflows/digests.py)."""

WORKFLOW_TYPES = frozenset({REGISTER_SKILL, REGISTER_SKILLS, CHANGE_SKILL, SKILL_RUN, MAINTENANCE,
                            SYNC_SKILL_FILES, CHAT_TURN, EMIT_EVENT, TRUST_SKILL, DECIDE_CHANGE, DELIVERY_DIGEST,
                            CHANGE_GRANT})
"""The engine's workflow types: the only ones whose activities may act (activities.guard)."""

# --- activities named outside their class: started by a client, or told apart by the worker ---------------
# Every other activity is registered under its method's name and called through the method.

GET_SKILL = "get_skill"
LIST_SKILLS = "list_skills"
LIST_RUNS = "list_runs"
LIST_INCIDENTS = "list_incidents"
LIST_REVISIONS = "list_revisions"
RUN_HISTORY = "run_history"
FIND_OVERDUE_SKILLS = "find_overdue_skills"
LIST_APPROVALS = "list_approvals"
GET_APPROVAL = "get_approval"
LIST_GRANTS = "list_grants"
TRUST_STATES = "trust_states"
GET_TOOL_CATALOG = "get_tool_catalog"
REFRESH_TOOL_CATALOG = "refresh_tool_catalog"
GET_SERVER_STATES = "get_server_states"
CALL_TOOL = "call_tool"
AGENT_TOOL = "agent_tool"
LLM_TURN = "llm_turn"
RUN_SCRIPT_ACTIVITY = "run_script"
AGENT_SCRIPT = "agent_script"
SANDBOX_STATE = "sandbox_state"

CLIENT_READS = frozenset({GET_SKILL, LIST_SKILLS, LIST_RUNS, LIST_INCIDENTS, LIST_REVISIONS, GET_TOOL_CATALOG,
                          REFRESH_TOOL_CATALOG, GET_SERVER_STATES, TRUST_STATES, LIST_APPROVALS, GET_APPROVAL,
                          RUN_HISTORY, FIND_OVERDUE_SKILLS, LIST_GRANTS, SANDBOX_STATE})
"""The activities a client (the CLI, ``skills mcp``, the Telegram adapter) starts on its own, outside any
workflow: they read, and act on nothing a payload names."""

CLIENT_READ_TOOLS = frozenset({"outbox_list_messages"})
"""Tools ``call_tool`` may call for a client outside a workflow (``skills outbox``): the bundled outbox's read."""

OUTSIDE_TEXT = frozenset({CALL_TOOL, AGENT_TOOL, LLM_TURN, RUN_SCRIPT_ACTIVITY, AGENT_SCRIPT})
"""Activities whose results carry text from outside the engine: a Direct-tier call's result, an Agent
tool's excerpt, a script's output, the model's reply (a chat's too). Only these are redacted
(activities.failures): the others return the engine's own data (ids, schedule ids, skills), which a short
secret that happens to match a word of it (an LLM key ``test`` beside task queue ``test-1``) must not
corrupt."""

# --- signals ----------------------------------------------------------------------------------------------

APPROVAL_SIGNAL = "approval_answer"
DIGEST_SIGNAL = "digest_add"
"""A run's result for a destination's digest (``DeliveryDigest``)."""
"""The signal that carries the owner's answer (``skills.owner.approvals.ApprovalDecision``) to a waiting run."""

MAX_SLUG = 48

MANAGEMENT_TOOLS = frozenset({"memory_store_skill", "memory_update_skill", "memory_list_skills", "memory_get_skill",
                              "memory_delete_skill", "emit_event", "memory_next_fires", "memory_undo",
                              "list_approvals", "approve", "deny", "rehearse_skill"})
"""The tools that change skills or start runs (``client.management``): the owner's chat and the clients
have them, a skill's run never (refused in required_tools, not offered, not called)."""

CHAT_CONVERSATION = "chat:"
"""How a chat's conversation id begins (a skill's run uses its run id): only a chat's Agent loop
may call the management tools."""


def chat_conversation_id(session_id: str) -> str:
    return f"{CHAT_CONVERSATION}{session_id}"


def is_chat_conversation(conversation_id: str) -> bool:
    return conversation_id.startswith(CHAT_CONVERSATION)


def management_tool_problem(tool: str) -> str:
    """Why a skill may not use ``tool``, a management tool."""
    return (f"'{tool}' is a management tool: only the owner's chat and clients may change skills or emit "
            "events, never a skill's run")


def slug(name: str) -> str:
    """``'Drink water!'`` -> ``'drink-water'``: readable, safe in ids and queries."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    text = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")
    return text[:MAX_SLUG].rstrip("-") or "skill"


def schedule_id_for(task_queue: str, skill_id: int, name: str) -> str:
    """Stable per skill (the id never changes), readable (the name is in it), and prefixed
    with the task queue: engines sharing a namespace (staging beside production) each have
    their own store ids, and their schedules start runs on their own queue."""
    return f"{task_queue}-{skill_id}-{slug(name)}"


MAINTENANCE_JOB = "maintenance"
"""The Maintenance schedule is ``<task queue>-maintenance``."""
SYNC_JOB = "sync-files"
"""The periodic sync's schedule is ``<task queue>-sync-files``; an on-demand sync runs as
``<task queue>-sync-files-now`` (two ``skills sync`` at once share one run)."""


def engine_job_id(task_queue: str, job: str) -> str:
    """Ids of the engine's own schedules and runs (``skills-maintenance``, ``skills-sync-files``)."""
    return f"{task_queue}-{job}"


def run_summary(spec: SkillSpec) -> str:
    """The static summary each run carries, shown by the UI and `temporal workflow describe`."""
    when = spec.trigger_config.describe() if spec.trigger_config else spec.trigger_type
    return f"{spec.name} · {spec.tier} tier · {when}"
