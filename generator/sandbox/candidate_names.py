"""The names a generated optimizer may use without importing them: `OptAlg` and `StopCriterionReached`.

LLaMEA's prompt tells the LLM that Kernel Tuner's `OptAlg` exists, so the optimizers it writes (the
2025 paper's, Kernel Tuner's hybrid_vndx and adaptive_tabu_greywolf among them) begin with
`class X(OptAlg):` and catch `StopCriterionReached` without importing either. Every place that
runs a candidate provides both: the sandbox (`generator.sandbox.child`), `tunesmith bench`
(`generator.bench.runner.load_module`) and exported modules (`EXPORT_PRELUDE`), with Kernel Tuner's own
classes where Kernel Tuner is installed and the small equivalents below otherwise.

Nothing else is provided: in particular the prompt's example class (`MyOptimizer`) does not exist
at run time, and `generator.sandbox.refusals.hint_for` says so when a candidate subclasses it.
"""

from __future__ import annotations

import ast
from abc import ABC, abstractmethod

from generator import parsing

NAMES = ("OptAlg", "StopCriterionReached")


class StopCriterionReached(Exception):
    """Raised by `func` when the budget is spent (stands in for kernel_tuner.util.StopCriterionReached)."""


class OptAlg(ABC):
    """Base class of user-defined optimizers, as kernel_tuner.strategies.wrapper.OptAlg (1.5.0)."""

    def __init__(self):
        # Kernel Tuner's OptAlgWrapper builds its CostFunc with these (no scaling, no snapping).
        self.costfunc_kwargs = {"scaling": False, "snap": False}

    @abstractmethod
    def __call__(self, func, searchspace):
        """Minimise `func` over `searchspace`; may return (best configuration, its cost)."""


LOCAL = {"OptAlg": OptAlg, "StopCriterionReached": StopCriterionReached}


def kernel_tuner_names() -> dict | None:
    """Kernel Tuner's own OptAlg and StopCriterionReached, or None where it is not installed."""
    try:
        from kernel_tuner.strategies.wrapper import OptAlg as KTOptAlg
        from kernel_tuner.util import StopCriterionReached as KTStop
    except ImportError:
        return None
    return {"OptAlg": KTOptAlg, "StopCriterionReached": KTStop}


def candidate_names() -> dict:
    """The names to put into a candidate's module before its code runs (Kernel Tuner's where installed)."""
    return dict(kernel_tuner_names() or LOCAL)


# Exported modules start with this where the candidate uses either name without importing it, so
# that the module runs unchanged in plain Kernel Tuner and, without Kernel Tuner, on its own.
EXPORT_PRELUDE = '''\
try:  # the names the optimizer was written against (Kernel Tuner's own where it is installed)
    from kernel_tuner.strategies.wrapper import OptAlg
    from kernel_tuner.util import StopCriterionReached
except ImportError:  # the same interface without Kernel Tuner
    from abc import ABC, abstractmethod

    class StopCriterionReached(Exception):
        """Raised by func when the tuning budget is spent."""

    class OptAlg(ABC):
        """Base class of user-defined optimizers (kernel_tuner.strategies.wrapper.OptAlg)."""

        def __init__(self):
            self.costfunc_kwargs = {"scaling": False, "snap": False}

        @abstractmethod
        def __call__(self, func, searchspace):
            """Minimise func over searchspace."""
'''


def unbound_names(source: str) -> list[str]:
    """Which of NAMES the source uses without defining or importing them at module level."""
    tree = parsing.parse(source)
    bound = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Try, ast.If)):  # `try: from kernel_tuner... except ImportError: ...`
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    bound.update((a.asname or a.name).split(".")[0] for a in inner.names)
                elif isinstance(inner, ast.ClassDef):
                    bound.add(inner.name)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return [name for name in NAMES if name in used and name not in bound]


def with_prelude(code: str) -> str:
    """The code with EXPORT_PRELUDE in front where it needs it (after any `from __future__` imports)."""
    if not unbound_names(code):
        return code
    tree = parsing.parse(code)
    future = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
    lines = code.splitlines(keepends=True)
    cut = future[-1].end_lineno if future else 0
    head, tail = "".join(lines[:cut]), "".join(lines[cut:]).lstrip("\n")
    return (head + ("\n" if head else "")) + EXPORT_PRELUDE + "\n\n" + tail


# Libraries a candidate may import whose import takes longer than a run should pay each time
# (scipy: about a second); the sandbox host imports them once, before it forks the runs.
PREIMPORTABLE = ("scipy",)


def preimports(source: str, limit: int = 8) -> list[str]:
    """The PREIMPORTABLE modules the source imports (e.g. ["scipy.optimize"]); [] if it does not parse."""
    try:
        tree = parsing.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found = []
    for node in ast.walk(tree):
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module]
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
            else []
        )
        for name in names:
            if name.split(".")[0] in PREIMPORTABLE and name not in found:
                found.append(name)
    return found[:limit]
