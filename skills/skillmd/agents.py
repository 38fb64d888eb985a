"""Agent definitions: an AGENT.md whose frontmatter says which model, skills and tools an agent
gets, and whose body is its system prompt (references 002 and 004).

An agent that names a skill that does not exist is refused with an error naming both,
since it would otherwise run without knowledge its author counted on.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_core import PydanticCustomError

from skills.errors import FrontmatterError
from skills.skillmd.parsing import parse_frontmatter
from skills.skillmd.problems import Problem

AGENT_FIELDS = frozenset({"name", "description", "model", "allow_skills", "skills", "tools"})


def _tools(value: Any) -> Any:
    if value == "*" or (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        return value
    raise PydanticCustomError("tools", 'must be a list of tool names, or "*" for every tool')


class AgentDefinition(BaseModel):
    """A validated AGENT.md."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1)
    description: str | None = None
    model: str | None = None
    """The model to use; the engine's default when absent."""
    allow_skills: bool = False
    """Offer the ``skill`` tool, so the LLM can load any skill on demand."""
    skills: list[str] = Field(default_factory=list)
    """Skills whose instructions the agent always gets."""
    tools: Annotated[list[str] | Literal["*"], BeforeValidator(_tools)] = Field(default_factory=list)
    """Tool names the agent may call, or ``"*"`` for all."""
    system_prompt: str
    """The AGENT.md body."""
    path: Path | None = None


def check_agent_text(
    text: str, known_skills: Collection[str]
) -> tuple[AgentDefinition | None, list[Problem]]:
    """Every problem in an AGENT.md's text, and the agent if there is no error."""
    try:
        data, body = parse_frontmatter(text, "AGENT.md")
    except FrontmatterError as exc:
        return None, [Problem.error(str(exc))]
    problems: list[Problem] = []
    unexpected = sorted(str(k) for k in data if k not in AGENT_FIELDS)
    if unexpected:
        # A warning, not an error: AGENT.md files written for other tools carry fields like `provider`.
        problems.append(
            Problem.warning(f"Unexpected fields in frontmatter, ignored: {', '.join(unexpected)}")
        )
    try:
        agent = AgentDefinition.model_validate(
            {**{k: v for k, v in data.items() if k in AGENT_FIELDS}, "system_prompt": body}
        )
    except ValidationError as exc:
        return None, [*problems, *(_problem(e) for e in exc.errors(include_url=False))]
    problems += [
        Problem.error(f"Agent '{agent.name}' references unknown skill: {skill}", "skills")
        for skill in agent.skills
        if skill not in known_skills
    ]
    if any(p.severity == "error" for p in problems):
        return None, problems
    return agent, problems


def _problem(error: Any) -> Problem:
    where = ".".join(str(part) for part in error["loc"])
    if error["type"] == "missing":
        return Problem.error(f"Missing required field in frontmatter: {where}", where)
    return Problem.error(f"Field '{where}': {error['msg']}", where)
