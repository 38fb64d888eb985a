"""Running a skill's scripts, the pure part: limits, arguments, the interpreter, the result.

A skill declares the scripts it may run (SKILL.md ``scripts``, see
``skills.skillmd.scripts``); a run happens in the worker's sandbox
(``adapters.sandbox``), as the ``run_script`` activity. A Direct plan runs one with a
step whose ``toolName`` is ``run_script``; an Agent-tier run or a chat turn gets a
``run_script`` tool for the active skill's declared scripts. Either way the call is
``{"script": "fetch.py", "args": ["--since", "1h"]}``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from skills.errors import ScriptError

RUN_SCRIPT = "run_script"
"""The tool name of a script run, in a plan step and in an Agent's sandbox."""

TRUNCATED = "[... output truncated at {limit:,} bytes: {dropped:,} more bytes were not kept]"

INTERPRETERS: dict[str, list[str]] = {
    ".py": ["/usr/bin/python3", "-I"],
    ".sh": ["/bin/sh"],
    ".bash": ["/bin/bash"],
}
"""By extension: the interpreter inside the sandbox (``-I``: isolated, no user site, no PYTHON* variables)."""

SHEBANG_INTERPRETERS: dict[str, list[str]] = {
    "python3": INTERPRETERS[".py"], "python": INTERPRETERS[".py"], "sh": ["/bin/sh"], "bash": ["/bin/bash"],
}


class ScriptLimits(BaseModel):
    """What one run may use (the settings ``script_*``)."""

    model_config = ConfigDict(frozen=True)

    timeout_seconds: float = 60.0
    output_bytes: int = 1_048_576
    max_args: int = 100
    max_arg_bytes: int = 4096
    cpu_seconds: int = 30
    memory_bytes: int = 512 * 1024 * 1024
    processes: int = 32
    file_bytes: int = 16 * 1024 * 1024
    tmp_bytes: int = 64 * 1024 * 1024


class ScriptResult(BaseModel):
    """How a script run ended. A script that ran and failed is a result (``ok`` False), not an error."""

    script: str
    ok: bool
    exit_code: int | None = None
    """The script's exit status; None when it was killed."""
    signal: str | None = None
    """The signal that ended it (``SIGKILL``, ``SIGXCPU``...), if one did."""
    timed_out: bool = False
    stdout: str = ""
    stderr: str = ""
    truncated: bool = False
    output_bytes: int = 0
    """Everything the script wrote to stdout and stderr, kept or not."""
    duration_ms: int = 0
    reason: str = ""
    """Why it failed, in a sentence (empty when it succeeded)."""

    def text(self) -> str:
        """The result as a tool result: stdout, then stderr, then how it ended when it did not succeed."""
        parts = [self.stdout] if self.stdout else []
        if self.stderr:
            parts.append(f"[stderr]\n{self.stderr}")
        if not self.ok:
            parts.append(f"[script {self.script} failed: {self.reason}]")
        return "\n".join(parts) if parts else "(no output)"


def check_arguments(args: Any, limits: ScriptLimits) -> list[str]:
    """The arguments as strings; ``ScriptError`` naming the field when they are not a list of text
    or are over the limits (count, total UTF-8 bytes, a NUL byte)."""
    if args is None:
        return []
    if not isinstance(args, list):
        raise ScriptError(f"args: must be a list of strings (got {type(args).__name__})")
    out: list[str] = []
    for i, value in enumerate(args):
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ScriptError(f"args.{i}: must be a string (got {type(value).__name__})")
        text = str(value)
        if "\0" in text:
            raise ScriptError(f"args.{i}: must not contain a NUL byte")
        out.append(text)
    if len(out) > limits.max_args:
        raise ScriptError(f"args: {len(out)} arguments; at most {limits.max_args} are allowed")
    size = sum(len(a.encode()) for a in out)
    if size > limits.max_arg_bytes:
        raise ScriptError(f"args: {size:,} bytes in all; at most {limits.max_arg_bytes:,} are allowed")
    return out


def interpreter_for(name: str, first_line: str) -> list[str]:
    """The command (inside the sandbox) that runs script ``name``: by its extension, else by its
    shebang (``#!/usr/bin/env python3``, ``#!/bin/sh``...). ``ScriptError`` when neither says."""
    for extension, command in INTERPRETERS.items():
        if name.endswith(extension):
            return list(command)
    if first_line.startswith("#!"):
        words = first_line[2:].split()
        if words and words[0].rsplit("/", 1)[-1] == "env":
            words = [w for w in words[1:] if not w.startswith("-")]
        program = words[0].rsplit("/", 1)[-1] if words else ""
        if program in SHEBANG_INTERPRETERS:
            return list(SHEBANG_INTERPRETERS[program])
        raise ScriptError(f"script '{name}': its shebang names '{program or first_line.strip()}'; the sandbox runs "
                          f"python3, sh and bash scripts only")
    raise ScriptError(f"script '{name}': no interpreter: name it .py, .sh or .bash, or start it with a shebang "
                      "(#!/usr/bin/env python3, #!/bin/sh, #!/bin/bash)")


def script_call(arguments: dict[str, Any], limits: ScriptLimits) -> tuple[str | None, str, list[str]]:
    """``(skill, script, args)`` of a ``run_script`` call; ``ScriptError`` naming the field when malformed."""
    script = arguments.get("script")
    if not isinstance(script, str) or not script.strip():
        raise ScriptError("script: give the name of one of the skill's declared scripts (such as fetch.py)")
    skill = arguments.get("skill")
    if skill is not None and not isinstance(skill, str):
        raise ScriptError("skill: must be a skill's name")
    unknown = sorted(set(arguments) - {"script", "args", "skill"})
    if unknown:
        raise ScriptError(f"{unknown[0]}: unknown parameter of run_script (it takes script, args and skill)")
    return skill or None, script.strip(), check_arguments(arguments.get("args"), limits)


def tool_schema(scripts: dict[str, list[str]]) -> dict[str, Any]:
    """The ``run_script`` tool's input schema for ``{skill: [script, ...]}``."""
    names = sorted({s for listed in scripts.values() for s in listed})
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "script": {"type": "string", "description": "The script to run", **({"enum": names} if names else {})},
            "args": {"type": "array", "items": {"type": "string"}, "description": "Its command-line arguments"},
        },
        "required": ["script"],
        "additionalProperties": False,
    }
    if len(scripts) > 1:
        schema["properties"]["skill"] = {"type": "string", "enum": sorted(scripts),
                                         "description": "The skill whose script it is"}
        schema["required"].append("skill")
    return schema


def tool_description(scripts: dict[str, list[str]]) -> str:
    listed = "; ".join(f"{skill}: {', '.join(names)}" for skill, names in sorted(scripts.items()))
    return ("Run one of the active skill's scripts in a sandbox (no network, read-only skill files, a temp dir "
            f"in /tmp) and get its output. Scripts: {listed}.")
