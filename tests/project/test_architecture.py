"""The house: no import cycles between modules of `generator`, and no room imports a room above it.

Imports are read from the syntax tree (function-level imports included: a lazy import is still a
dependency), so the test needs nothing but the source.
"""

import ast
import subprocess
import sys
from pathlib import Path

from support.paths import ROOT

PACKAGE = ROOT / "generator"

# Rooms from the bottom up: a module may import its own room and the rooms before it.
ROOMS = [
    "resources",
    "parsing",
    "errors",
    "registry",
    "interrupts",
    "config",
    "jsonl",
    "tasks",
    "scoring",
    "candidate",
    "sandbox",
    "evaluation",
    "live",
    "llm",
    "archive",
    "run_lock",
    "racing",
    "guided",
    "tuning",
    "campaign",
    "export",
    "review",
    "bench",
    "kernels",
    # issue 42: views over run directories, above everything they read
    "record",
    "compare",
    "serve",
]
# The command line sits on top.
TOP = {"cli"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The generator modules that `path` imports, resolved to modules (not names inside them)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            submodules = {f"{base}.{a.name}" for a in node.names} & modules  # `from pkg import module`
            found.update(submodules)
            if len(submodules) < len(node.names):  # a name defined in `base` itself
                found.add(base)
    return {m for m in found if m in modules and m != name}


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {m: _imports(p, set(files)) for m, p in files.items()}


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "generator"


def _rank(module: str) -> int:
    room = _room(module)
    if room == "generator":
        return -1  # the package's __init__: sets litellm's offline cost map, imports nothing of the rooms
    if room in TOP:
        return len(ROOMS)
    assert room in ROOMS, f"{module}: room {room!r} is not in ROOMS; add it where it belongs in the order"
    return ROOMS.index(room)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    # deep import chains need more than the default limit; put it back, or later tests that rely on the
    # default (code too deep to compile, tests/candidate/test_candidate_text.py) see a different interpreter
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000)
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return out


def test_no_import_cycles():
    assert _cycles(_graph()) == []


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_room_imports_a_room_above_it():
    upward = [f"{m} -> {d}" for m, deps in _graph().items() for d in sorted(deps) if _rank(d) > _rank(m)]
    assert upward == []


def test_every_room_says_what_it_is_for():
    for room in ROOMS:
        init = PACKAGE / room / "__init__.py"
        if (PACKAGE / f"{room}.py").exists():
            continue  # a room of one module (errors, config, archive)
        assert ast.get_docstring(ast.parse(init.read_text())), f"{init}: say what the room is for and may import"


def test_importing_tasks_loads_no_room_above_it():
    code = (
        "import sys, generator.tasks.entries, generator.tasks.space, generator.tasks.problems; "
        "print(sorted({m.split('.')[1] for m in sys.modules if m.startswith('generator.')}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = set(ast.literal_eval(out.strip()))
    assert loaded <= {"resources", "parsing", "errors", "registry", "config", "tasks"}, loaded  # resources: bottom


def _local_rebinds(tree: ast.AST) -> list[tuple[str, int]]:
    """(name, line) of each import inside a function that binds a name the same function also assigns:
    the import silently replaces the local value (or the value replaces the imported function)."""
    found = []
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        assigned, imported = set(), []
        stack = list(ast.iter_child_nodes(func))
        while stack:  # the function's own body, not the functions nested in it
            node = stack.pop()
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
                continue
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                assigned.add(node.id)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                imported += [((a.asname or a.name).split(".")[0], node.lineno) for a in node.names]
            stack.extend(ast.iter_child_nodes(node))
        assigned |= {a.arg for a in func.args.args + func.args.kwonlyargs}
        found += [(name, line) for name, line in imported if name in assigned]
    return found


def test_no_local_import_rebinds_a_name_its_function_assigns():
    bad = [
        f"{path.relative_to(PACKAGE.parent)}:{line} {name}"
        for path in PACKAGE.rglob("*.py")
        for name, line in _local_rebinds(ast.parse(path.read_text()))
    ]
    assert not bad, bad


def test_rebind_finder_finds_a_rebinding():
    code = "def f():\n    state, reason = 1, 2\n    try:\n        pass\n    except E:\n        from m import reason\n"
    assert _local_rebinds(ast.parse(code)) == [("reason", 6)]
