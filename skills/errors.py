"""The engine's errors: one short tree under one base class, in one module.

Every error the engine raises on purpose is a :class:`SkillsError`. Each class says
whether retrying can help (``retryable``), and its name is the ``ApplicationError.type``
a failed activity carries (:meth:`SkillsError.failure_type`), so the worker that raises
an error and the client that reads it back use the same constant and cannot drift:

    raise application_error(UnknownToolError(...))        # the worker (activities.failures)
    error_for(failure) -> UnknownToolError                  # the client, from the failure's type

    SkillsError
    ├── SkillValidationError        an input was refused; nothing was stored
    ├── SkillNotFoundError          no skill by that id or name
    ├── RunNotFoundError            no run kept by that id (a chat's reply_to)
    ├── PlanError                   a plan placeholder cannot be filled at run time
    ├── WorkflowInputError          a workflow was started with an input it cannot run
    ├── SkillRunFailed              a skill's run ended in error (recorded; the failure carries the run)
    ├── ToolCallError               a tool could not be called
    │   ├── UnknownToolError
    │   ├── ToolArgumentsError
    │   ├── ToolServerError         (retryable)
    │   │   └── ToolTimeoutError    (retryable)
    │   └── ToolsetRefusedError     a skill's toolset was not started (grant, variables or sandbox refused)
    ├── OutsideEngineError          an acting activity was started outside the engine's workflows
    ├── McpConfigError              the mcpServers file is unusable
    ├── LlmUnavailableError         the LLM endpoint is down or rate-limited (retryable)
    │   └── LlmOverloadedError      it answered 408, 409, 429 or 5xx (retryable; then a fallback model)
    ├── LlmRefusedError             the LLM endpoint refused the request (bad key, model...)
    │   └── LlmModelNotFoundError   it does not know the model (404): a fallback model is tried
    ├── LlmNotConfiguredError       the worker has no LLM endpoint or key at all
    ├── ConversationError           a stored conversation lacks what a step refers to
    ├── ScriptError                 a skill's script was refused before it ran (disabled, undeclared, bad arguments)
    │   ├── SandboxUnavailableError the sandbox (bubblewrap) is missing or unusable: scripts never run unsandboxed
    │   └── ScriptStartError        (retryable) the script could not be started for a passing reason
    ├── SkillFileError              a SKILL.md or AGENT.md could not be read
    │   ├── FrontmatterError
    │   ├── TooLargeError
    │   ├── ResourceError
    │   ├── InstallRefusedError      a skill to install was refused (every reason); nothing was written
    │   └── AgentDefinitionError
    ├── UntrustedSkillError         a skill's executable parts are not trusted by its owner (`skills trust NAME`)
    ├── NamespaceSetupError         the Temporal namespace lacks the engine's search attributes
    ├── TemporalUnavailableError    the client cannot reach Temporal (retryable)
    ├── PayloadKeyError             a payload cannot be decrypted: its key id is unknown, or it was tampered with
    ├── WorkerUnavailableError      no worker answered on the task queue (retryable)
    ├── StoreUnavailableError       the store's database cannot be opened (SKILLS_DATABASE_URL)
    └── UsageError                  command-line options that cannot work
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel

if TYPE_CHECKING:
    from datetime import timedelta

    from skills.skillmd.problems import Problem


class FieldError(BaseModel):
    """One problem with one field of an input, as a person can act on it."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


class SkillsError(Exception):
    """Base of every error the engine raises on purpose."""

    retryable: ClassVar[bool] = False
    """Whether the activity that raised it may succeed if Temporal tries again."""

    @classmethod
    def failure_type(cls) -> str:
        """The ``ApplicationError.type`` of a failure caused by this error: the class name."""
        return cls.__name__


class SkillValidationError(SkillsError):
    """A skill input was refused; nothing was stored."""

    def __init__(self, errors: list[FieldError]) -> None:
        self.errors = errors
        super().__init__("; ".join(str(e) for e in errors))

    @classmethod
    def single(cls, field: str, message: str) -> SkillValidationError:
        return cls([FieldError(field=field, message=message)])


class SkillNotFoundError(SkillsError):
    """No skill has that id, or that name for that agent."""


class RunNotFoundError(SkillsError):
    """No run kept has that id (a chat's ``reply_to``): never run, pruned, or another agent's."""


class PlanError(SkillsError):
    """A placeholder that cannot be filled at run time (the earlier step returned no such field)."""


class WorkflowInputError(SkillsError):
    """A workflow was started with an input it cannot run (a bug or a hand-made start, not a fault to retry)."""


class SkillRunFailed(SkillsError):
    """A skill's run ended in error: the SkillRun workflow fails with this type, the run's summary
    as its message and the recorded run (a RunRecord as JSON) as its details, once the run is
    recorded, its notice sent and its backoff stored. Never retried: the next fire is the retry."""


# --- tools ----------------------------------------------------------------------------------


class ToolCallError(SkillsError):
    """A tool could not be called, or its result was an error."""


class UnknownToolError(ToolCallError):
    """No connected server offers a tool of that name. Retrying cannot help."""

    def __init__(self, tool: str, suggestions: list[str], down: list[str] | None = None) -> None:
        self.tool = tool
        self.suggestions = suggestions
        message = f"unknown tool {tool!r}"
        if suggestions:
            message += "; did you mean " + " or ".join(repr(s) for s in suggestions) + "?"
        if down:
            message += " (servers not connected: " + ", ".join(down) + ")"
        super().__init__(message)


class ToolArgumentsError(ToolCallError):
    """The arguments do not fit the tool's input schema. Retrying cannot help."""


class ToolServerError(ToolCallError):
    """The tool's server could not be reached or failed at the protocol level; a retry may work."""

    retryable: ClassVar[bool] = True


class ToolTimeoutError(ToolServerError):
    """The tool did not answer in time."""


class ToolsetRefusedError(ToolCallError):
    """A skill's toolset was not started: its grant does not match the skill's SKILL.md as the worker's folders
    hold it (changed since the run began, or forged), a variable it names is not given to toolsets, or the
    sandbox cannot be made. Retrying cannot help."""


class OutsideEngineError(SkillsError):
    """An activity that acts (calls a tool, runs a script, changes a skill) was started outside a workflow
    of this engine: by a client, or by a workflow type the engine does not have. Retrying cannot help."""


class McpConfigError(SkillsError):
    """The ``mcpServers`` file (or a value it refers to) is unusable."""


# --- the LLM --------------------------------------------------------------------------------


class LlmUnavailableError(SkillsError):
    """The LLM endpoint could not be reached, timed out, is rate-limiting or failing; a retry may work."""

    retryable: ClassVar[bool] = True


class LlmTimeoutError(LlmUnavailableError):
    """The LLM endpoint was reached but gave no answer within ``SKILLS_LLM_TIMEOUT``. Not retried:
    the endpoint is working, and asking again makes a slow server (a local model on CPU) start the
    same prompt over behind the one it is still processing; the next fire, or the user, asks again."""

    retryable: ClassVar[bool] = False


class LlmRefusedError(SkillsError):
    """The LLM endpoint refused the request (bad key, unknown model, bad request): fix, then retry."""


class LlmOverloadedError(LlmUnavailableError):
    """The endpoint answered, with a status the OpenAI SDK retries (408, 409, 429, 5xx): retried, and
    once the retries are spent an Agent-tier skill's next ``fallback_models`` entry is tried."""

    def __init__(self, message: str, *, retry_after: timedelta | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        """How long the endpoint asked to be left alone (``retry-after``): the next attempt's delay."""


class LlmModelNotFoundError(LlmRefusedError):
    """The endpoint does not know the model (404): not retried, but another model may answer."""


FALLBACK_FAILURES = frozenset({LlmOverloadedError.failure_type(), LlmModelNotFoundError.failure_type(),
                               LlmTimeoutError.failure_type()})
"""The failure types of an LLM turn after which the Agent loop tries the skill's next fallback model:
another model may answer where this one is unknown, overloaded, rate-limited or too slow; a bad key, a bad request,
an unreachable endpoint or a missing configuration fail every model alike."""


class LlmNotConfiguredError(SkillsError):
    """The worker has neither an LLM endpoint nor a key: an Agent-tier run or a chat turn cannot start."""


class ConversationError(SkillsError):
    """A stored conversation lacks the message or tool call a step refers to."""


# --- scripts ------------------------------------------------------------------------------


class ScriptError(SkillsError):
    """A skill's script was refused before it ran: scripts disabled, a script the skill does not
    declare, arguments over the limits. A script that ran and failed is a result, not this error."""


class SandboxUnavailableError(ScriptError):
    """The sandbox cannot be used (``bwrap`` missing, user namespaces refused, a folder its user cannot
    enter...): the script is not run, never unsandboxed. Retrying cannot help until the machine is fixed.
    ``fix``, when given, says what to do about it: the message ends with it, and ``skills doctor`` prints
    ``problem`` (the message without it) and ``fix`` on their own lines."""

    def __init__(self, message: str, *, fix: str = "") -> None:
        super().__init__(f"{message} (fix: {fix})" if fix else message)
        self.problem = message
        self.fix = fix


class ScriptStartError(ScriptError):
    """The script could not be started for a reason that may pass (no process slot, a full scratch
    disk): it never ran, so running it again is safe."""

    retryable: ClassVar[bool] = True


# --- SKILL.md files -------------------------------------------------------------------------


class SkillFileError(SkillsError):
    """A SKILL.md or AGENT.md file could not be read or parsed."""


class FrontmatterError(SkillFileError):
    """The file's YAML frontmatter is missing, unclosed, not a mapping or not safe YAML."""


class TooLargeError(SkillFileError):
    """A file is bigger than the limit set for its kind (frontmatter, body, resource)."""


class ResourceError(SkillFileError):
    """A resource path was refused (absolute, ``..``, a symlink out) or does not exist."""


class InstallRefusedError(SkillFileError):
    """``skills install`` (or ``uninstall``) refused; ``reasons`` lists them (an archive's problems: the first
    ten, then how many more). Nothing was written."""

    def __init__(self, reasons: list[str]) -> None:
        self.reasons = reasons
        super().__init__("; ".join(reasons))


class AgentDefinitionError(SkillFileError):
    """An AGENT.md was refused; ``problems`` lists every reason."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))


class UntrustedSkillError(SkillsError):
    """A SKILL.md skill's executable parts (its toolsets, its scripts) are not trusted by its owner, or
    changed since: they do not run. The message names ``skills trust NAME``. Retrying cannot help."""


class NamespaceSetupError(SkillsError):
    """The Temporal namespace lacks what the engine needs (its search attributes): `skills setup`
    adds them, or on Temporal Cloud the UI or tcld (docs/deploy.md). Retrying cannot help."""


# --- the client side ------------------------------------------------------------------------


class TemporalUnavailableError(SkillsError):
    """The Temporal frontend could not be reached."""

    retryable: ClassVar[bool] = True


class PayloadKeyError(SkillsError):
    """A Temporal payload cannot be decrypted (client.codec): the key of its id is not among this
    process's payload keys, or the ciphertext does not verify (tampered, or another key under that id)."""


class WorkerUnavailableError(SkillsError):
    """No worker answered on the task queue in time."""

    retryable: ClassVar[bool] = True


class StoreUnavailableError(SkillsError):
    """The store's database could not be reached, created or brought up to date; the message
    names ``SKILLS_DATABASE_URL`` with its password masked, and says what to do."""


class UsageError(SkillsError):
    """Command-line options that do not make something that can start."""


def error_class(failure_type: str | None) -> type[SkillsError] | None:
    """The class whose :meth:`~SkillsError.failure_type` is ``failure_type``, if it is one of ours."""
    if not failure_type:
        return None
    pending: list[type[SkillsError]] = [SkillsError]
    while pending:
        cls = pending.pop()
        if cls.failure_type() == failure_type:
            return cls
        pending.extend(cls.__subclasses__())
    return None
