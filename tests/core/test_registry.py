"""The registry of extension points: task sources, executors and LLM backends by name, loaded on first use.

Nothing is imported for its side effect: a `live:` entry resolves in a process that imported only the task
resolver, every table target loads and satisfies its declared interface, and no `import generator.x` in the
package binds a name it never uses (the warm-up imports before the sandbox walls are the one exception).
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import ROOT

from generator import registry
from generator.errors import TunesmithError

PACKAGE = ROOT / "generator"


def _fresh(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_a_live_entry_reaches_the_live_room_from_the_resolver_alone():
    # before the registry this said "import it (generator.live) before resolving this entry"
    code = (
        "import sys\n"
        "from generator.tasks.entries import load_entry\n"
        "assert 'generator.live' not in sys.modules\n"
        "try:\n"
        "    load_entry('live:no_such_problem_here,fevals=3')\n"
        "except Exception as exc:\n"
        "    print(type(exc).__module__, type(exc).__name__, exc)\n"
    )
    out = _fresh(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("generator.live.entries LiveEntryError"), out.stdout
    assert "no_such_problem_here" in out.stdout


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not on PATH: the C problem cannot run live")
def test_a_live_entry_loads_in_a_fresh_interpreter_that_imported_only_the_tasks():
    code = (
        "import sys, generator.tasks\n"
        "from generator.tasks.entries import load_entry\n"
        "[task] = load_entry('live:matmul_c,fevals=3')\n"
        "from generator.tasks.sources import MeasuredTask\n"
        "print(type(task).__name__, task.name, isinstance(task, MeasuredTask))\n"
    )
    out = _fresh(code)
    assert out.returncode == 0, out.stderr
    name, task, measured = out.stdout.split()
    assert name == "LiveTask" and task.startswith("matmul_c/") and measured == "True"


def _interfaces():
    from generator.evaluation.executors import ExecutorFactory
    from generator.llm.backend import LLMBackend
    from generator.tasks.sources import TaskSource

    return {"task_source": TaskSource, "executor": ExecutorFactory, "llm_backend": LLMBackend}


@pytest.mark.parametrize("kind,name", [(k, n) for k, table in registry.TABLES.items() for n in table])
def test_every_table_target_loads_and_satisfies_its_interface(kind, name):
    obj = registry.load(kind, name)
    assert isinstance(obj, _interfaces()[kind]), f"{kind} {name}: {obj!r}"


def test_every_kind_has_a_declared_interface():
    assert set(_interfaces()) == set(registry.TABLES)


def test_an_unknown_name_is_one_line_naming_the_choices():
    with pytest.raises(TunesmithError) as info:
        registry.load("executor", "carrier-pigeon")
    message = str(info.value)
    assert "\n" not in message and "'carrier-pigeon'" in message
    assert all(name in message for name in registry.names("executor"))
    with pytest.raises(TunesmithError, match="choose one of: executor, llm_backend, task_source"):
        registry.names("strategy")


def test_register_adds_a_source_that_the_resolver_uses(tmp_path, monkeypatch):
    (tmp_path / "my_source.py").write_text(
        "class Source:\n"
        "    def load(self, entry, hub=None, base=None):\n"
        "        from generator.tasks.entries import load_entry\n"
        "        return load_entry('hub:' + entry.split(':', 1)[1], hub)\n"
        "    def resolve(self, entry, base):\n"
        "        return entry.upper()\n"
        "SOURCE = Source()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(registry.TABLES, "task_source", dict(registry.TABLES["task_source"]))
    registry.register("task_source", "mine", "my_source:SOURCE")
    from generator.tasks.entries import _resolved

    assert _resolved("mine:x", "tasks.train[0]", tmp_path) == "MINE:X"
    with pytest.raises(TunesmithError, match="module:attribute"):
        registry.register("task_source", "bad", "my_source.SOURCE")


def test_an_executor_url_is_checked_against_the_table(monkeypatch):
    from generator.config import url_problem

    assert url_problem("ray://head:10001") is not None
    monkeypatch.setitem(registry.TABLES, "executor", {**registry.TABLES["executor"], "ray://": "x:y"})
    assert url_problem("ray://head:10001") is None  # the grammar reads the table: one place for the schemes


# ---------------------------------------------------------------------------- no side-effect imports

# Imports made before the sandbox walls go up: they load code that cannot be imported once the walls stand
# (the child then only uses what is already in sys.modules). They bind names on purpose and use none.
WARM_UPS = {"sandbox/child.py", "kernels/walled_child.py"}


def _unused_module_imports(path: Path, root: Path = PACKAGE) -> list[str]:
    """`import generator.x` lines whose bound name (`generator`, or the `as` name) the module never reads."""
    tree = ast.parse(path.read_text())
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != "generator":
                    continue
                bound = alias.asname or alias.name.split(".")[0]
                if bound not in read:
                    out.append(f"{path.relative_to(root)}:{node.lineno}: import {alias.name}")
    return out


def test_no_module_is_imported_for_its_side_effect():
    found = [
        line
        for path in sorted(PACKAGE.rglob("*.py"))
        if str(path.relative_to(PACKAGE)) not in WARM_UPS
        for line in _unused_module_imports(path)
    ]
    assert found == []


def test_the_side_effect_finder_finds_one(tmp_path):
    bad = tmp_path / "probe.py"
    bad.write_text("import generator.live\nimport generator.tasks as t\n\nprint(t)\n")
    assert _unused_module_imports(bad, tmp_path) == ["probe.py:1: import generator.live"]


def test_the_warm_ups_are_still_warm_ups():
    # the exception is for these two files only while they do import for warming up
    for rel in WARM_UPS:
        assert _unused_module_imports(PACKAGE / rel), f"{rel}: no warm-up import left; drop it from WARM_UPS"
