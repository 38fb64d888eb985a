"""The sandbox the worker runs workflows in: Temporal's own, with its restrictions, and two costs of a
workflow task taken out of it.

- The engine's workflow and model modules pass through: imported once per worker instead of compiled
  and run again in every workflow run's sandbox (10 ms a fire when Python keeps no bytecode). They keep
  no state between runs (``workflows/`` is deterministic and small; ``skills/`` is pure), and the
  sandbox still guards everything else a workflow imports.
- The sandbox reaches into a run through ``exec`` of a few fixed source strings: to create the run, to
  activate it, and for the serialization context of each payload sequence the SDK's payload visitor
  walks, three passes each way per activation. Given a string, ``exec`` compiles it each time; here
  each string is compiled once and the same code object runs, in the same globals, under the same
  importer, as the string would. That compile was about 1.7 ms of a worker's 18 ms of CPU per Direct
  fire (docs/performance.md).
- The serialization and store contexts are asked of the run's instance directly, not through the
  importer's swap of builtins (about 0.7 ms a fire more): they read the run's info and pending
  commands and import nothing; everything a workflow's own code runs still runs inside the importer.

With an SDK whose sandbox no longer has the private class this builds on, the worker runs Temporal's
sandbox unchanged.
"""

from __future__ import annotations

import functools
import logging
from types import CodeType
from typing import Any

from temporalio.worker import WorkflowInstance, WorkflowInstanceDetails, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

log = logging.getLogger(__name__)

PASSTHROUGH = ("workflows", "skills", "croniter", "dateutil")
"""The engine's own modules that every workflow run shares (see the module's docstring), and the pure
libraries ``skills/`` imports when first used rather than with itself (croniter, for a trigger's cron, and its
dateutil): from workflow code too, they are the worker's one copy, not imported again into each run's sandbox."""


@functools.lru_cache(maxsize=128)
def compiled(source: str) -> CodeType:
    """``source`` compiled as ``exec`` would compile it (same file name, so tracebacks read the same)."""
    return compile(source, "<string>", "exec")


def workflow_runner() -> WorkflowRunner:
    """Temporal's sandbox with the engine's passthrough modules, its code strings compiled once."""
    restrictions = SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH)
    try:
        from temporalio.worker.workflow_sandbox._runner import _Instance
    except ImportError:
        _Instance = None
    if _Instance is None or not all(hasattr(_Instance, name) for name in ("_run_code", "get_serialization_context",
                                                                         "get_external_store_context")):
        # The SDK moved its sandbox's internals: its own runner, as it is.
        log.warning("temporalio's sandbox is not the one service/workflow_sandbox.py knows: running it unchanged")
        return SandboxedWorkflowRunner(restrictions=restrictions)

    class _Compiled(_Instance):  # type: ignore[misc,valid-type]
        def _run_code(self, code: Any, **extra_globals: Any) -> None:
            super()._run_code(compiled(code) if isinstance(code, str) else code, **extra_globals)

        def get_serialization_context(self, command_info: Any) -> Any:
            return self._in_sandbox("get_serialization_context", command_info)

        def get_external_store_context(self, command_info: Any) -> Any:
            return self._in_sandbox("get_external_store_context", command_info)

        def _in_sandbox(self, method: str, command_info: Any) -> Any:
            # The run's own instance answers, as through exec; without the importer's builtins swapped in
            # and out around it: these two read the run's info and pending commands, import nothing and
            # call nothing the sandbox restricts.
            self.importer.restriction_context.is_runtime = True
            try:
                return getattr(self.globals_and_locals["__temporal_in_sandbox"], method)(command_info)
            finally:
                self.importer.restriction_context.is_runtime = False

    class CompiledSandboxRunner(SandboxedWorkflowRunner):
        def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
            return _Compiled(det, self.runner_class, self.restrictions)

    return CompiledSandboxRunner(restrictions=restrictions)


WORKFLOW_RUNNER = workflow_runner()
"""The worker's runner, built once per process: every worker of the process (tests start many) shares it."""
