"""The Python client of the engine: everything a program needs to manage skills, over Temporal only.

It never opens the database and never imports the worker: changes run as workflows, reads as
activities on the worker's task queue. Programs use it, and so do the ``skills`` CLI, the MCP
server (``skills mcp``), the Telegram adapter and the worker's chat tools (the management tools).

- :mod:`client.skills_client`: :class:`SkillsClient` and :func:`connect`; the client's calls one module an
  aggregate, over :mod:`client.base` (the state they share): :mod:`client.skill_calls`, :mod:`client.run_calls`,
  :mod:`client.approval_calls`, :mod:`client.event_calls`, :mod:`client.worker_calls`
- :mod:`client.management`: the management tools a model calls (the catalog, storing, updating,
  listing, reading, deleting skills, their next fires, events) and the owner's answers to approvals;
  their schemas and texts are ``skills.management.manual``
- :mod:`client.schedules`: when a skill's schedule fires next, as Temporal says (the worker reads it too)
- :mod:`client.files`: syncing the file skills now (``skills sync``, ``skills dev``)
- :mod:`client.trust`: trusting a SKILL.md skill's executable parts (``skills trust``, ``untrust``)
- :mod:`client.doctor`: where the schedules disagree with the store (``skills doctor``)
- :mod:`client.namespace`: the search attributes the engine registers on its namespace
- :mod:`client.codec`: the payload codec every process that talks to Temporal encrypts with
- :mod:`client.temporal_cli`: where the ``temporal`` CLI is, to start a dev server

It depends on ``skills`` (what a skill is) and ``config`` only, never on ``adapters``, ``activities``,
``workflows``, ``worker`` or ``starter`` (tests/test_architecture.py holds it to that).

A program opens the client with ``async with await SkillsClient.connect() as skills:``;
leaving the block stops the Temporal client's threads, so the program exits cleanly
(see :mod:`client.skills_client`).
"""

from client.skills_client import SkillsClient, connect

__all__ = ["SkillsClient", "connect"]
