"""The source of a candidate's optimizer, read and edited through its syntax tree; never run.

`parse_optimizer` finds the optimizer class and its declared hyperparameters; `with_defaults`
writes new default values into the `hyperparameters` dict and the `__init__` signature in place,
so comments and layout survive; `check_imports` keeps exported modules to the standard library
and numpy (and scipy). Candidate code is untrusted until it is exported: nothing here executes it.
"""

from __future__ import annotations

import ast
import json
import sys
from dataclasses import dataclass

from generator import parsing
from generator.errors import TunesmithError

ALLOWED_IMPORTS = {"numpy", "scipy", "kernel_tuner"}  # besides the standard library (what the sandbox allows)


class ExportError(TunesmithError):
    """A candidate that cannot be exported as it is."""


@dataclass
class OptimizerCode:
    """What the syntax tree says about a candidate's optimizer class."""

    class_name: str
    hyperparameters: dict  # name -> {"type", "low", "high", "log", "choices", "default"}
    description: str = ""


def parse_optimizer(source: str, origin: str = "candidate") -> OptimizerCode:
    """Find the optimizer class (the last class with `__call__`) and its declared hyperparameters."""
    try:
        tree = parsing.parse(source)
    except SyntaxError as exc:
        raise ExportError(
            f"{origin}: code does not parse (line {exc.lineno}: {exc.msg}); export a candidate that ran"
        ) from None
    classes = [
        n
        for n in tree.body
        if isinstance(n, ast.ClassDef) and any(isinstance(b, ast.FunctionDef) and b.name == "__call__" for b in n.body)
    ]
    if not classes:
        raise ExportError(f"{origin}: no class with __call__(self, func, searchspace); it is not an optimizer")
    cls = classes[-1]
    hp_node = _hyperparameters_node(cls)
    hyperparameters = {}
    if hp_node is not None:
        try:
            hyperparameters = ast.literal_eval(hp_node)
        except ValueError:
            raise ExportError(
                f"{origin}: {cls.name}.hyperparameters is not a literal dict; write it as plain data"
            ) from None
    return OptimizerCode(cls.name, hyperparameters, ast.get_docstring(cls) or "")


def _hyperparameters_node(cls: ast.ClassDef) -> ast.expr | None:
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "hyperparameters" for t in stmt.targets
        ):
            return stmt.value
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and stmt.target.id == "hyperparameters"
            and stmt.value is not None
        ):
            return stmt.value
    return None


def _offsets(source: str) -> list[int]:
    starts, pos = [], 0
    for line in source.splitlines(keepends=True):
        starts.append(pos)
        pos += len(line)
    return starts + [pos]


def with_defaults(source: str, values: dict) -> str:
    """The source with new defaults for the given hyperparameters, in the dict and in `__init__`."""
    if not values:
        return source
    tree = parsing.parse(source)
    info = parse_optimizer(source)
    cls = next(
        n
        for n in tree.body
        if isinstance(n, ast.ClassDef)
        and n.name == info.class_name
        and any(isinstance(b, ast.FunctionDef) and b.name == "__call__" for b in n.body)
    )
    edits = []  # (node, new literal)
    hp = _hyperparameters_node(cls)
    if isinstance(hp, ast.Dict):
        for key, spec in zip(hp.keys, hp.values):
            name = key.value if isinstance(key, ast.Constant) else None
            if name in values and isinstance(spec, ast.Dict):
                for k, v in zip(spec.keys, spec.values):
                    if isinstance(k, ast.Constant) and k.value == "default":
                        edits.append((v, values[name]))
    init = next((b for b in cls.body if isinstance(b, ast.FunctionDef) and b.name == "__init__"), None)
    if init is not None:
        args = init.args.posonlyargs + init.args.args
        for arg, default in zip(args[len(args) - len(init.args.defaults) :], init.args.defaults):
            if arg.arg in values:
                edits.append((default, values[arg.arg]))
        for arg, default in zip(init.args.kwonlyargs, init.args.kw_defaults):
            if default is not None and arg.arg in values:
                edits.append((default, values[arg.arg]))
    starts = _offsets(source)
    text = source
    for node, value in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
        # ast offsets count UTF-8 bytes; code is ASCII in practice, and a mismatch is caught below
        a = starts[node.lineno - 1] + node.col_offset
        b = starts[node.end_lineno - 1] + node.end_col_offset
        text = text[:a] + _literal(_plain(value)) + text[b:]
    check = parse_optimizer(text)
    for name, value in values.items():
        if name in check.hyperparameters and check.hyperparameters[name].get("default") != _plain(value):
            raise ExportError(f"could not set the default of {name!r}; edit the candidate's hyperparameters by hand")
    return text


def _literal(value) -> str:
    """Python source for a value; strings in double quotes like the rest of the code base."""
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _plain(value):
    """numpy scalars as Python literals, so that repr() round-trips through the parser."""
    return value.item() if hasattr(value, "item") else value


def check_imports(source: str, origin: str = "candidate") -> None:
    """Exported modules use only the standard library, numpy, scipy and Kernel Tuner."""
    for node in ast.walk(parsing.parse(source)):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            top = name.split(".")[0]
            if top not in sys.stdlib_module_names and top not in ALLOWED_IMPORTS:
                raise ExportError(
                    f"{origin}: imports {name!r}; exported modules may use only the standard "
                    "library, numpy, scipy and Kernel Tuner; remove that import from the candidate"
                )


def split_docstring(source: str) -> tuple[str, str]:
    """The source without its module docstring, and that docstring (it moves into the module's own)."""
    tree = parsing.parse(source)
    first = tree.body[0] if tree.body else None
    if not (
        isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
    ):
        return source.strip("\n"), ""
    lines = source.splitlines(keepends=True)
    rest = lines[: first.lineno - 1] + lines[first.end_lineno :]
    return "".join(rest).strip("\n"), first.value.value
