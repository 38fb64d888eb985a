"""The house's rules, read from the source (docs/architecture.md): which room may import which, no import circles,
activities/ holds activities, adapters know nothing of Temporal's activity API, every workflow, activity, signal
and job name is spelt in one module, no module or test reaches another's private names
(``KNOWN_PRIVATE_REACHES`` apart), no class of the store is past ``MAX_STORE_METHODS``, no module or class is
past ``MAX_MODULE_LINES`` or ``MAX_CLASS_METHODS``, worker.py is wiring (``MAX_WORKER_LINES``), the tests of
adapters sit in tests/adapters/, payloads are defined in ``skills.messages`` alone (workflows take only activity
classes from activities/), and text is matched in linear time (RE2, or a pattern of Python's ``re`` proven
linear)."""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import itertools
import re
from collections import defaultdict
from pathlib import Path
from types import FunctionType

import pytest

ROOT = Path(__file__).resolve().parent.parent

LAYERS = {
    "skills": 0,
    "config": 1,
    "search_attributes": 1,
    "client": 2,
    "mcp_servers": 2,
    "adapters": 3,
    "activities": 4,
    "workflows": 5,
    "service": 6,
    "worker": 7,
    "starter": 8,
    "bench": 9,
}
"""A module may import from its own room and from rooms of a lower layer only."""

WORKFLOWS_MAY_IMPORT = {"skills", "search_attributes", "activities", "workflows"}
"""Workflows are deterministic: they reach activities by reference and import nothing that does I/O
(``search_attributes`` holds typed keys, no I/O)."""

PURE_ROOM = "skills"

IMPURE_LIBRARIES = frozenset({"temporalio", "os", "subprocess", "socket", "shutil", "httpx", "openai", "requests",
                              "urllib.request", "sqlalchemy", "sqlmodel", "sqlite3", "asyncio"})
"""What ``skills/`` never imports: Temporal's SDK, processes, the file system beyond a path's name, the network,
the database."""

IO_CALLS = frozenset({"open", "read_text", "read_bytes", "write_text", "write_bytes", "iterdir", "glob", "rglob",
                      "stat", "lstat", "exists", "is_file", "is_dir", "is_symlink", "readlink", "resolve",
                      "walk", "scandir", "listdir", "mkdir", "unlink", "touch", "samefile", "expanduser"})
"""Calls that reach the file system: a pure module works on the text and bytes handed to it."""

MAX_LINES_WITHOUT_ACTIVITY = 120

MAX_WORKER_LINES = 100
"""worker.py connects, builds the adapters, registers workflows and activities, and runs; what else it built
(endpoints, build id, search attributes, settings-derived construction) has a room of its own."""

TESTS_BESIDE_ADAPTERS = ("activities", "client")
"""Rooms whose tests, in tests/<room>/, reach the room itself: one that reaches adapters and not the room tests
an adapter, and sits in tests/adapters/ (tests/workflows/, tests/service/ and tests/starter/ drive the engine
end to end, through whatever they need)."""

MAX_STORE_METHODS = 25
"""Methods a class of the store may have, inherited ones included: past it, it is two aggregates."""


def _modules() -> dict[str, Path]:
    modules = {}
    for room in LAYERS:
        paths = [ROOT / f"{room}.py"] if (ROOT / f"{room}.py").exists() else (ROOT / room).rglob("*.py")
        for path in paths:
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


MODULES = _modules()


@functools.cache
def _tree(path: Path) -> ast.Module:
    """``path`` parsed once per test process: a dozen tests walk every module (read, never changed)."""
    return ast.parse(path.read_text(), str(path))


@functools.cache
def _nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of ``path``'s tree, as ``ast.walk`` gives them."""
    return tuple(ast.walk(_tree(path)))


def _imports(module: str, path: Path) -> set[str]:
    """The engine's modules that ``module`` imports, anywhere in its code (a deferred import is an
    import too). ``from package import submodule`` imports the submodule; a package's ``__init__``
    run on the way to a submodule is not counted."""
    found = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in _nodes(path):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([node.module] if node.module else [])])
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


@functools.cache
def graph() -> dict[str, set[str]]:
    """Each module's imports of the engine's modules: built by the tests that read it, not at collection
    (each xdist worker collects every test module)."""
    return {module: _imports(module, path) for module, path in MODULES.items()}


def _room(module: str) -> str:
    return module.split(".")[0]


def test_rooms_import_only_rooms_below_them() -> None:
    crossings = [f"{a} imports {b}" for a, targets in graph().items() for b in targets
                 if _room(a) != _room(b) and LAYERS[_room(b)] >= LAYERS[_room(a)]]
    assert crossings == []


def test_workflows_import_only_models_and_activities() -> None:
    crossings = [f"{a} imports {b}" for a, targets in graph().items() if _room(a) == "workflows"
                 for b in targets if _room(b) not in WORKFLOWS_MAY_IMPORT]
    assert crossings == []


def test_no_module_imports_one_that_imports_it_back() -> None:
    cycles = _cycles(graph())
    assert cycles == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_adapters_know_nothing_of_temporal_activities() -> None:
    offenders = []
    for module, path in MODULES.items():
        if _room(module) != "adapters":
            continue
        for node in _nodes(path):
            if isinstance(node, ast.ImportFrom) and node.module == "temporalio" and any(
                    alias.name in ("activity", "workflow", "worker") for alias in node.names):
                offenders.append(module)
            elif isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                    (name or "").startswith(("temporalio.activity", "temporalio.worker", "temporalio.workflow"))
                    for name in [getattr(node, "module", None), *(a.name for a in node.names)]):
                offenders.append(module)
    assert offenders == []


TEMPORAL_CLIENT_WIRING = "activities.wiring"
"""The one module of activities that holds the Temporal client: it builds the ports the others take."""


def _temporal_client_imports(path: Path) -> list[int]:
    """The lines where ``path`` imports ``temporalio.client`` (deferred and type-only imports included)."""
    return [node.lineno for node in _nodes(path)
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("temporalio.client")
            or isinstance(node, ast.ImportFrom) and node.module == "temporalio"
            and any(alias.name == "client" for alias in node.names)
            or isinstance(node, ast.Import) and any(alias.name.startswith("temporalio.client") for alias in node.names)]


def test_activities_reach_temporal_through_ports() -> None:
    """An activity starts a workflow or writes a schedule through a port of adapters/ (``EngineWorkflows``,
    ``ScheduleWriter``), never through the client, its handles and policies: the wiring alone holds it."""
    offenders = {module: lines for module, path in MODULES.items()
                 if _room(module) == "activities" and module != TEMPORAL_CLIENT_WIRING
                 and (lines := _temporal_client_imports(path))}
    assert offenders == {}


def test_the_temporal_client_check_finds_each_form(tmp_path: Path) -> None:
    path = tmp_path / "reach.py"
    path.write_text("from temporalio.client import Client\nfrom temporalio import client\n"
                    "import temporalio.client\nfrom temporalio import activity\n")
    assert _temporal_client_imports(path) == [1, 2, 3]


PORT_LIBRARIES = frozenset({"openai", "httpx", "httpx2", "requests", "sqlalchemy", "sqlmodel", "alembic", "psycopg",
                            "sqlite3", "subprocess", "socket", "mcp"})
"""What talks to the world (an LLM endpoint, HTTP, a database, a process, an MCP server): only through adapters/."""

THIN_ROOMS = ("activities", "workflows")


def _library_imports(path: Path) -> set[str]:
    """The top-level libraries ``path`` imports, deferred and type-only imports included."""
    found = set()
    for node in _nodes(path):
        if isinstance(node, ast.Import):
            found |= {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.partition(".")[0])
    return found


def test_ports_live_in_adapters() -> None:
    """Activities stay thin over the adapters and workflows do no I/O: neither imports what talks to the world."""
    offenders = {module: sorted(_library_imports(path) & PORT_LIBRARIES) for module, path in MODULES.items()
                 if _room(module) in THIN_ROOMS and _library_imports(path) & PORT_LIBRARIES}
    assert offenders == {}


MAX_TOP_OF_SKILLS = 20
"""Modules and packages at the top of skills/: past it, a newcomer meets one flat room again."""


def test_skills_is_a_few_packages_each_saying_what_it_is_about() -> None:
    top = [path for path in (ROOT / "skills").iterdir()
           if path.suffix == ".py" and path.name != "__init__.py" or (path / "__init__.py").exists()]
    assert len(top) <= MAX_TOP_OF_SKILLS, sorted(path.name for path in top)
    # Each package opens with a one-line summary of what it is about (more may follow a blank line).
    unsaid = [path.name for path in top if path.is_dir() and not (
        ast.get_docstring(ast.parse((path / "__init__.py").read_text())) or "\n").splitlines()[0].endswith(".")]
    assert unsaid == []


def _impurities(path: Path) -> set[str]:
    """What ``path``'s code imports of :data:`IMPURE_LIBRARIES` and calls of :data:`IO_CALLS` (a call of a
    name or of any object's attribute: ``open(p)``, ``p.read_text()``, ``os.walk(p)``), as ``import x`` and
    ``call x``. Deferred imports count."""
    found = set()
    for node in _nodes(path):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or "", *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            own = isinstance(func, ast.Attribute) and (  # self.resolve(schema) is a method of the module's own
                isinstance(func.value, ast.Name) and func.value.id in ("self", "cls")
                or isinstance(func.value, ast.Call) and getattr(func.value.func, "id", None) == "super")
            if name in IO_CALLS and not own:
                found.add(f"call {name}")
            continue
        else:
            continue
        found |= {f"import {library}" for library in IMPURE_LIBRARIES for name in names
                  if name == library or name.startswith(f"{library}.")}
    return found


def _impure_modules() -> dict[str, list[str]]:
    """What each module of ``skills/`` imports or calls of the world: none may (a skill's folder is read by
    ``adapters/skill_folders``, and ``skills.skillmd`` is handed what was read or a ``SkillReader``)."""
    found = {module: _impurities(path) for module, path in MODULES.items() if _room(module) == PURE_ROOM}
    return {module: sorted(what) for module, what in found.items() if what}


def test_skills_is_pure() -> None:
    """``skills/`` is what a skill is: no temporalio, no file, process, network or database, so workflows,
    activities and clients all import it and its tests need no folder or server."""
    assert _impure_modules() == {}


def test_the_purity_check_finds_io(tmp_path: Path) -> None:
    code = tmp_path / "impure.py"
    code.write_text("import os.path\nfrom temporalio.common import RetryPolicy\nfrom . import sibling\n"
                    "def f(p):\n    with open(p) as f:\n        return p.read_text(), os.walk(p), sibling.parse(p)\n"
                    "class Schema:\n    def g(self, s):\n        return self.resolve(s), super().resolve(s)\n")
    assert _impurities(code) == {"import os", "import temporalio", "call open", "call read_text", "call walk"}


ENGINE_ROOMS = frozenset(LAYERS) - {"bench"}
"""The engine's own code: what runs in the worker, the client and the entry points (bench/ measures it)."""

RE_FUNCTIONS = frozenset({"compile", "search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split"})
"""The functions of Python's ``re`` that take a pattern and match with it (``escape`` and the flags match nothing)."""
BACKTRACKING_LIBRARIES = frozenset({"re", "regex", "sre_compile", "sre_parse"})

LINEAR_ON_RE = {
    ("skills.llm.tokens", r"""'(?:s|t|re|ve|m|ll|d)\b| ?[^\W\d_]+| ?\d{1,3}| ?[^\s\w]+|\s+"""):
        "each branch is a fixed word, or one optional space and one greedy run of a class with nothing after it: a "
        "start either matches the run it read or fails within two characters, so a text is read once; it counts "
        "every piece of every model request, where RE2's Python binding would add ~15 us a piece",
    ("skills.skillmd.terms", r"\.?\w+"):
        "an optional dot and one greedy run of a class with nothing after it: a start reads at most one character "
        "it does not match, so a text is read once; it reads every SKILL.md description when the index is built",
}
"""Patterns kept on Python's ``re`` that are more than one class, each with why it is linear as written and
why it stays. Every other pattern of the engine is one class (``\\w+``, ``[,\\s]+``: :func:`_one_class`) or is
matched by RE2 through ``skills.linear``: with ``re`` a pattern with two ways to read the same characters tries
them all, and the phrase reader's weekday pattern took 3.4 s on a 171-character message, twice as long for
each 7 characters more."""


def _one_class(pattern: str) -> bool:
    """``pattern`` is one character, class or category, repeated or not (``\\w+``, ``[^a-z0-9]+``, ``\\n{3,}``): at
    any start ``re`` reads one run of it and matches or fails there, with nothing to try again, so it is linear
    in the text whatever it is."""
    from re import _parser  # the stdlib's own reading of a pattern

    try:
        items = list(_parser.parse(pattern))
    except Exception:
        return False
    single = {_parser.LITERAL, _parser.NOT_LITERAL, _parser.IN, _parser.ANY}
    if len(items) != 1:
        return False
    op, value = items[0]
    if op in (_parser.MAX_REPEAT, _parser.MIN_REPEAT):
        body = list(value[2])
        return len(body) == 1 and body[0][0] in single
    return op in single


def _re_patterns(path: Path) -> list[tuple[int, str, str | None]]:
    """What ``path`` hands a backtracking engine: (line, the call or import, the pattern's text, or None when it
    is not a constant). ``import re as r``, ``from re import search`` and ``import regex`` count."""
    tree = _tree(path)
    modules: set[str] = set()  # names bound to re (or regex)
    functions: dict[str, str] = {}  # names bound to one of its functions
    found: list[tuple[int, str, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                library = alias.name.partition(".")[0]
                if library in BACKTRACKING_LIBRARIES - {"re"}:
                    found.append((node.lineno, f"import {alias.name}", None))
                elif alias.name == "re":
                    modules.add(alias.asname or "re")
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            library = node.module.partition(".")[0]
            if library in BACKTRACKING_LIBRARIES - {"re"}:
                found.append((node.lineno, f"from {node.module} import", None))
            elif node.module == "re":
                functions |= {alias.asname or alias.name: alias.name for alias in node.names
                              if alias.name in RE_FUNCTIONS}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in modules \
                and func.attr in RE_FUNCTIONS:
            call = f"re.{func.attr}"
        elif isinstance(func, ast.Name) and func.id in functions:
            call = f"re.{functions[func.id]}"
        else:
            continue
        first = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "pattern"), None)
        constant = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
        found.append((node.lineno, call, constant))
    return found


def _backtracking(module: str, path: Path) -> list[str]:
    """The patterns ``module`` matches with a backtracking engine that are neither one class nor in
    :data:`LINEAR_ON_RE`, as ``module:line: call(pattern)``."""
    def shown(call: str, pattern: str | None) -> str:
        if call.startswith(("import ", "from ")):
            return call
        return f"{call}({pattern!r})" if pattern is not None else f"{call}(a pattern built as it runs)"

    return [f"{module}:{line}: {shown(call, pattern)}" for line, call, pattern in _re_patterns(path)
            if pattern is None or not (_one_class(pattern) or (module, pattern) in LINEAR_ON_RE)]


def test_text_is_matched_in_linear_time() -> None:
    """Every pattern of the engine is RE2 (``skills.linear``), one class, or kept on ``re`` in :data:`LINEAR_ON_RE`
    with its reason: a new ``re`` pattern that backtracks cannot creep into code that reads people's, models' or
    tools' text."""
    offenders = [line for module, path in MODULES.items() if _room(module) in ENGINE_ROOMS
                 for line in _backtracking(module, path)]
    assert offenders == []
    kept = {(module, pattern) for module, path in MODULES.items() if _room(module) in ENGINE_ROOMS
            for _, _, pattern in _re_patterns(path) if (module, pattern) in LINEAR_ON_RE}
    assert kept == set(LINEAR_ON_RE)  # an exception no longer used goes too


def test_the_linear_time_check_finds_backtracking(tmp_path: Path) -> None:
    code = tmp_path / "phrasing.py"
    # The phrase reader as it was: its weekday pattern (an f-string) took 3.4 s on 171 characters.
    code.write_text('import re\nimport re as r2\nfrom re import search as find, escape\nimport regex\n'
                    '_WEEKDAY = r"(?:mon|tues?|wed)(?:day)?s?"\n'
                    '_DAYS = re.compile(rf"\\b(?:{_WEEKDAY})(?:\\s*(?:,|and)\\s*(?:{_WEEKDAY}))*\\b")\n'
                    'def read(text, name):\n'
                    '    words = re.findall(r"\\w+", text)  # one class: linear\n'
                    '    parts = re.split(r"[,\\s]+", text)  # one class: linear\n'
                    '    return find(r"(a+)+$", text), r2.sub("x*y", "", text), re.escape(name), re.I\n')
    assert _backtracking("skills.when.phrasing", code) == [
        "skills.when.phrasing:4: import regex",
        "skills.when.phrasing:6: re.compile(a pattern built as it runs)",
        "skills.when.phrasing:10: re.search('(a+)+$')",
        "skills.when.phrasing:10: re.sub('x*y')",
    ]
    assert _one_class(r"\w+") and _one_class(r"[^a-z0-9]+") and _one_class(r"\n{3,}") and _one_class("[#?()]")
    assert not _one_class(r"\w+\s") and not _one_class(r"(\w+)") and not _one_class(r"(?:ab|b)+")


def test_every_long_module_of_activities_defines_activities() -> None:
    """activities/ holds activities and the few Temporal helpers they need (failures, guard, heartbeat)."""
    long_without = [str(path.relative_to(ROOT)) for module, path in MODULES.items()
                    if _room(module) == "activities" and "activity.defn" not in path.read_text()
                    and len(path.read_text().splitlines()) > MAX_LINES_WITHOUT_ACTIVITY]
    assert long_without == []


def test_each_workflow_type_is_spelt_in_one_module() -> None:
    from skills import naming

    spelt: dict[str, set[str]] = defaultdict(set)
    for module, path in MODULES.items():
        for node in _nodes(path):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in naming.WORKFLOW_TYPES:
                spelt[node.value].add(module)
    assert dict(spelt) == {name: {"skills.naming"} for name in naming.WORKFLOW_TYPES}


SPELT_TWICE = {"run_script": {"skills.run.scripts"}}
"""Names spelt outside ``skills.naming`` too, and why: ``run_script`` is also the tool a plan step and an Agent
call (``skills.run.scripts.RUN_SCRIPT``), which the activity of that name runs."""


def test_each_activity_signal_and_job_name_is_spelt_in_one_module() -> None:
    from skills import naming

    names = naming.CLIENT_READS | naming.OUTSIDE_TEXT | {naming.APPROVAL_SIGNAL, naming.DIGEST_SIGNAL,
                                                         naming.MAINTENANCE_JOB, naming.SYNC_JOB}
    spelt: dict[str, set[str]] = defaultdict(set)
    for module, path in MODULES.items():
        for node in _nodes(path):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
                spelt[node.value].add(module)
    assert dict(spelt) == {name: {"skills.naming", *SPELT_TWICE.get(name, ())} for name in names}


def _methods(cls: type) -> set[str]:
    """The methods of ``cls``, inherited ones included, that the engine's own modules define."""
    return {name for klass in cls.__mro__ if klass.__module__.partition(".")[0] in LAYERS
            for name, value in vars(klass).items()
            if isinstance(value, (FunctionType, staticmethod, classmethod, property))}


def test_no_class_of_the_store_has_more_than_its_share_of_methods() -> None:
    from adapters.store import Store

    classes = [value for module in MODULES if module.startswith("adapters.store.") and module.count(".") == 2
               for value in vars(importlib.import_module(module)).values()
               if isinstance(value, type) and value.__module__ == module]
    assert {"open", "session", "max_revisions"} <= _methods(Store)  # a class method, a method, a property
    crowded = {cls.__qualname__: len(_methods(cls)) for cls in classes if len(_methods(cls)) > MAX_STORE_METHODS}
    assert crowded == {}


MAX_MODULE_LINES = 600
MAX_CLASS_METHODS = 25
"""Past these, a module or a class holds several concerns, and every change to one of them touches it."""

def _magnets(module: str, path: Path) -> dict[str, int]:
    """``module`` (its lines) and each of its classes (the methods it defines), past the limits."""
    text = path.read_text()
    found = {module: len(text.splitlines())} if len(text.splitlines()) > MAX_MODULE_LINES else {}
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.ClassDef):
            methods = sum(isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) for item in node.body)
            if methods > MAX_CLASS_METHODS:
                found[f"{module}.{node.name}"] = methods
    return found


def test_no_module_or_class_is_a_change_magnet() -> None:
    magnets = {name: size for module, path in MODULES.items() for name, size in _magnets(module, path).items()}
    assert magnets == {}, "a module or class past the limits: split it along a concern it has"


def test_the_magnet_check_counts_lines_and_methods(tmp_path: Path) -> None:
    path = tmp_path / "big.py"
    methods = "".join(f"    def m{i}(self):\n        pass\n" for i in range(MAX_CLASS_METHODS + 1))
    path.write_text("class Crowded:\n" + methods + "\n" * MAX_MODULE_LINES)
    assert _magnets("client.big", path) == {"client.big": MAX_MODULE_LINES + 2 * MAX_CLASS_METHODS + 3,
                                            "client.big.Crowded": MAX_CLASS_METHODS + 1}


def test_the_worker_is_wiring() -> None:
    lines = len((ROOT / "worker.py").read_text().splitlines())
    assert lines <= MAX_WORKER_LINES, f"worker.py has {lines} lines (at most {MAX_WORKER_LINES}): move what it builds to its room"


def _tested_rooms(path: Path) -> set[str]:
    """The engine's rooms a test module imports from."""
    return {_room(module) for module in _imports(".".join(path.relative_to(ROOT).with_suffix("").parts), path)}


def test_the_tests_of_adapters_sit_in_tests_adapters() -> None:
    misplaced = [str(path.relative_to(ROOT)) for room in TESTS_BESIDE_ADAPTERS
                 for path in (ROOT / "tests" / room).rglob("test_*.py")
                 if "adapters" in _tested_rooms(path) and room not in _tested_rooms(path)]
    strays = [str(path.relative_to(ROOT)) for path in (ROOT / "tests" / "adapters").rglob("test_*.py")
              if "adapters" not in _tested_rooms(path)]
    assert misplaced == [] and strays == []


def _private_imports(module: str, path: Path) -> list[str]:
    """``from X import _name`` of another of the engine's modules: what is private to X is X's to change."""
    found = []
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in _nodes(path):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = node.module or ""
        if node.level:
            parent = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*parent, *([node.module] if node.module else [])])
        if base.partition(".")[0] not in LAYERS or base == module:
            continue
        found += [f"{module} imports {base}.{alias.name}" for alias in node.names
                  if alias.name.startswith("_") and not alias.name.startswith("__")]
    return found


def _test_modules() -> dict[str, Path]:
    return {".".join(path.relative_to(ROOT).with_suffix("").parts): path
            for path in sorted((ROOT / "tests").rglob("*.py"))}


def test_no_module_imports_another_modules_private_names() -> None:
    """The engine's modules, and the tests: a test reaches what it tests by its public names, as a user does."""
    offenders = [line for module, path in {**MODULES, **_test_modules()}.items()
                 for line in _private_imports(module, path)]
    assert offenders == []


def test_the_private_import_check_finds_one(tmp_path: Path) -> None:
    path = tmp_path / "proposals.py"
    path.write_text("from client.management import DATA_KEYS, _first\nfrom . import _own\n")
    assert _private_imports("activities.proposals", path) == ["activities.proposals imports client.management._first",
                                                             "activities.proposals imports activities._own"]


PUBLIC_BY_DESIGN = frozenset({"_exit", "_replace", "_asdict", "_fields", "_make", "_field_defaults"})
"""Names that begin with ``_`` and are public all the same: ``os._exit``, a named tuple's methods."""

KNOWN_PRIVATE_REACHES = {
    "adapters.installer.archives": {"zipfile._EndRecData", "zipfile._ECD_ENTRIES_TOTAL", "zipfile._ECD_SIZE",
                                    "zipfile._ECD_LOCATION", "zipfile._ECD_SIGNATURE"},
    "adapters.mcp_skills.stdio": {"stdio._get_executable_command", "stdio._create_platform_compatible_process",
                                  "stdio._parse_line", "stdio._drain_stdout", "stdio._stop_server_process",
                                  "stdio._aclose_all"},
    "service.workflow_sandbox": {"temporalio.worker.workflow_sandbox._runner._Instance", "super()._run_code"},
    "bench.embedders": {"static_model._model_dir", "static_model._static_model.encode_batch"},
}
"""Reaches into a library's private names the engine still makes, each for want of a public way (issue 54 item 4):
zipfile's reader of a zip's end record (the entry count before ``ZipFile`` reads the whole index), the MCP SDK's
stdio transport (the size cap on a line), Temporal's sandbox runner (its code strings compiled once), and a
benchmark's static model, whose package has no public encoder (bench/embedders.py, which only compares it). Each
is listed by what it names, so a new one fails the test and so does one that is gone and still listed."""


def _private_reaches(module: str, path: Path) -> set[str]:
    """What ``module`` reaches of another object's or library's private names: ``thing._name`` where neither
    ``self`` nor ``cls`` is the thing and this module defines no ``_name`` (its own class's attribute, read on
    another instance of it, is its own), ``super()._name``, and ``from library import _name`` or an import of a
    library's private module (the engine's own modules: :func:`_private_imports`)."""
    tree = ast.parse(path.read_text(), str(path))
    own = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
           and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
           and isinstance(node.ctx, ast.Store)}
    own |= {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef
                                                                    | ast.ClassDef)}
    own |= {target.id for node in ast.walk(tree) if isinstance(node, ast.Assign | ast.AnnAssign)
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Name)}
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__") \
                and node.attr not in PUBLIC_BY_DESIGN:
            thing = node.value
            if isinstance(thing, ast.Call) and isinstance(thing.func, ast.Name) and thing.func.id == "super":
                found.add(f"super().{node.attr}")
            elif not (isinstance(thing, ast.Name) and thing.id in ("self", "cls")) and node.attr not in own:
                found.add(ast.unparse(node))
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module \
                and node.module.partition(".")[0] not in LAYERS:
            private_module = any(part.startswith("_") and not part.startswith("__") for part in node.module.split("."))
            found |= {f"{node.module}.{alias.name}" for alias in node.names
                      if private_module or (alias.name.startswith("_") and not alias.name.startswith("__"))}
    return found


def test_no_module_reaches_into_private_names_of_another_object_or_library() -> None:
    reaches = {module: found for module, path in MODULES.items() if (found := _private_reaches(module, path))}
    assert reaches == KNOWN_PRIVATE_REACHES


def test_the_private_reach_check_finds_each_kind(tmp_path: Path) -> None:
    path = tmp_path / "trust.py"
    path.write_text("import os\nfrom tests.x import _helper\nfrom lib._inner import Thing\n\n"
                    "class Mine:\n    def __init__(self):\n        self._state = 1\n\n"
                    "    def same(self, other):\n        return other._state + self._own\n\n"
                    "    def run(self, skills):\n        os._exit(0)\n        super()._run()\n"
                    "        return skills._workflow()\n")
    assert _private_reaches("client.trust", path) == {"tests.x._helper", "lib._inner.Thing", "super()._run",
                                                      "skills._workflow"}


def test_payload_models_live_in_skills_not_in_activities() -> None:
    """A payload has one home (``skills.messages``): activities/ defines no pydantic model."""
    from pydantic import BaseModel

    defined = sorted(f"{module}.{name}" for module in MODULES if _room(module) == "activities"
                     for name, value in vars(importlib.import_module(module)).items()
                     if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == module)
    assert defined == []


def test_workflows_take_only_activity_classes_from_activities() -> None:
    """A workflow reaches activities by reference; their payloads' types it takes from ``skills``."""
    taken = []
    for module, path in MODULES.items():
        if _room(module) != "workflows":
            continue
        for node in _nodes(path):
            if isinstance(node, ast.ImportFrom) and (node.module or "").partition(".")[0] == "activities":
                source = importlib.import_module(node.module or "")
                taken += [f"{module} takes {node.module}.{alias.name}" for alias in node.names
                          if not _defines_activities(getattr(source, alias.name, None))]
    assert taken == []


def _defines_activities(value: object) -> bool:
    return isinstance(value, type) and any(hasattr(member, "__temporal_activity_definition")
                                           for member in vars(value).values())


DOCS = ROOT / "docs" / "architecture.md"


def _drawings(text: str) -> list[str]:
    """The fenced blocks of a markdown text, in order."""
    return re.findall(r"^```\n(.*?)^```", text, re.S | re.M)


def _drawn_rooms(drawing: str) -> list[list[str]]:
    """The rooms of the drawing of rooms, a row at a time from the top: each row's folders (``adapters/``) and
    modules (``worker.py``) that are rooms."""
    rows = []
    for line in drawing.splitlines():
        names = [word.removesuffix("/").removesuffix(".py") for word in line.split() if word.endswith(("/", ".py"))]
        found = [name for name in names if name in LAYERS]
        if found:
            rows.append(found)
    return rows


def _drawing_problems(drawing: str) -> list[str]:
    """Where the drawing of rooms says other than the layers the import rule enforces: a room under one of a
    lower layer, two of different layers on one row, a room of the code not drawn."""
    rows = _drawn_rooms(drawing)
    problems = [f"{' '.join(row)}: rooms of different layers on one row" for row in rows
                if len({LAYERS[room] for room in row}) > 1]
    for above, below in itertools.pairwise(rows):
        if LAYERS[above[0]] <= LAYERS[below[0]]:
            problems.append(f"{above[0]} is drawn above {below[0]}, which is not below it")
    drawn = {room for row in rows for room in row}
    problems += [f"{room} is not drawn" for room in LAYERS if room not in drawn and room != "bench"]
    return problems


def test_the_drawing_of_rooms_is_the_rule() -> None:
    """docs/architecture.md draws the rooms top to bottom as the import rule orders them (``LAYERS``)."""
    text = DOCS.read_text()
    drawing = next(block for block in _drawings(text.split("## The rooms", 1)[1]))
    assert _drawing_problems(drawing) == []


def test_the_drawing_check_finds_a_room_out_of_place() -> None:
    drawing = "starter/\n  │\nworker.py\nservice/\nactivities/\nworkflows/\nadapters/\nclient/  mcp_servers/\n" \
              "config/  search_attributes.py\nskills/\n"
    assert _drawing_problems(drawing) == ["activities is drawn above workflows, which is not below it"]
    assert _drawing_problems("starter/\nconfig/ workflows/\nskills/\n")[0] == \
        "config workflows: rooms of different layers on one row"


def _activity_names() -> set[str]:
    return {node.name for module, path in MODULES.items() if _room(module) == "activities"
            for node in _nodes(path) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and any("activity.defn" in ast.unparse(decorator) for decorator in node.decorator_list)}


def test_the_drawn_paths_name_real_workflows_and_activities() -> None:
    """The first drawing (a skill's path from a client to a fire) names workflow types and activities that
    exist: a renamed activity leaves no drawing behind."""
    from skills import naming

    workflow_types = {value for name, value in vars(naming).items() if name.isupper() and isinstance(value, str)}
    drawing = _drawings(DOCS.read_text())[0]
    drawn = set(re.findall(r"\b[A-Z][a-z]+(?:[A-Z][a-z]+)+\b", drawing)) - {"Temporal"}
    calls = set(re.findall(r"\b[a-z]+(?:_[a-z]+)+\b", drawing))
    assert drawn and drawn <= workflow_types, drawn - workflow_types
    assert calls and calls <= _activity_names(), calls - _activity_names()


WIRINGS = ("activities.wiring", "worker")
"""The modules that build the engine's objects and hand each its collaborators."""


def _bound_methods_handed(module_name: str, path: Path) -> list[str]:
    """Where ``path`` hands a constructor a bound method of an object of another room (``hub.call`` to an activity
    object): the objects are known by the wiring's annotations (``hub: ToolHub``) and by the constructors it calls
    (``registration = RegistrationActivities(...)``)."""
    module = importlib.import_module(module_name)
    names: dict[str, type] = {}
    for node in _nodes(path):
        if isinstance(node, ast.arg) and node.annotation is not None:
            found = getattr(module, ast.unparse(node.annotation).split("[")[0].split(" ")[0], None)
            if isinstance(found, type):
                names[node.arg] = found
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name):
            found = getattr(module, node.value.func.id, None)
            if isinstance(found, type):
                names.update({target.id: found for target in node.targets if isinstance(target, ast.Name)})
    handed = []
    for node in _nodes(path):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        callee = getattr(module, node.func.id, None)
        if not isinstance(callee, type):
            continue
        for value in [*node.args, *(keyword.value for keyword in node.keywords)]:
            if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id in names:
                owner = names[value.value.id]
                method = getattr(owner, value.attr, None)
                if inspect.isfunction(method) and _room(owner.__module__) != _room(callee.__module__):
                    handed.append(f"{node.func.id}({ast.unparse(value)})")
    return handed


def test_wiring_hands_objects_not_their_bound_methods() -> None:
    """A collaborator is handed as the object (a typed port of ``activities.ports`` it meets), never as one of its
    bound methods from another room: a reader follows ``self.tools.call`` to the adapter, not ``self.send``."""
    handed = {module: found for module in WIRINGS if (found := _bound_methods_handed(module, MODULES[module]))}
    assert handed == {}


def test_the_bound_method_check_finds_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "wiring_probe.py"
    path.write_text("from adapters.mcp import ToolHub\nfrom activities.grants import GrantActivities\n\n\n"
                    "def wire(hub: ToolHub) -> object:\n    return GrantActivities(None, hub.tool_names)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _bound_methods_handed("wiring_probe", path) == ["GrantActivities(hub.tool_names)"]
