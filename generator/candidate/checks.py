"""Static checks of a candidate's source before it is run: it parses, has the interface, declares
well-formed hyperparameters. Nothing here executes the candidate's code."""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field

from generator import parsing
from generator.scoring.fitness import CandidateError

HP_TYPES = ("int", "float", "log", "categorical")
# Hyperparameter values travel as JSON (evaluate --json, Optuna's storage, the run directory) and into
# Optuna's distributions: they are bounded JSON scalars, checked here so that a value that cannot be
# written is the candidate's failure, in one line, before anything runs or is half written.
MAX_INT = 2**53  # integers JSON readers (and Optuna's float storage) keep exactly
MAX_TEXT = 200  # characters of a str choice
MAX_CHOICES = 1000


@dataclass(frozen=True)
class OptimizerInterface:
    """What the static checks found: the optimizer class and its declared hyperparameters."""

    class_name: str
    hyperparameters: dict = field(default_factory=dict)
    init_params: tuple[str, ...] = ()  # keyword parameters of __init__ (without self)
    init_varkw: bool = True  # __init__ takes **kwargs (or is not defined)

    def defaults(self) -> dict:
        """The declared default value of every hyperparameter."""
        return {name: hp["default"] for name, hp in self.hyperparameters.items()}


class _Fail(Exception):
    def __init__(self, kind: str, message: str, node: ast.AST | None = None):
        super().__init__(message)
        self.kind, self.message, self.node = kind, message, node


def inspect_source(source: str) -> OptimizerInterface | CandidateError:
    """The candidate's optimizer interface, or a structured error saying what is wrong."""
    lines = source.splitlines()
    try:
        parsing.compile_code(source, "<candidate>", "exec", dont_inherit=True)
        tree = parsing.parse(source)
    except SyntaxError as exc:
        lineno = exc.lineno if isinstance(exc.lineno, int) else None
        text = lines[lineno - 1].strip() if lineno and 0 < lineno <= len(lines) else (exc.text or "").strip() or None
        hint = ""
        if "expected an indented block" in str(exc.msg):  # e.g. a body left as "# ... (rest of the code)"
            hint = " (write the block's code out in full; a placeholder comment is not code)"
        return CandidateError("syntax", f"SyntaxError: {exc.msg}{hint}", line=text, lineno=lineno)
    except (ValueError, TypeError) as exc:  # e.g. null bytes in the source
        return CandidateError("syntax", f"{type(exc).__name__}: {exc}")
    except (RecursionError, MemoryError) as exc:  # e.g. thousands of unary minus signs on one line
        return CandidateError(
            "syntax",
            f"the code is nested too deeply to compile ({type(exc).__name__}: {exc}); write flatter expressions",
        )
    try:
        return _interface(tree)
    except _Fail as fail:
        lineno = getattr(fail.node, "lineno", None)
        text = lines[lineno - 1].strip() if lineno and 0 < lineno <= len(lines) else None
        return CandidateError(fail.kind, fail.message, line=text, lineno=lineno)


def check_source(source: str) -> CandidateError | None:
    """None if the source passes the static checks, else the error to report."""
    found = inspect_source(source)
    return found if isinstance(found, CandidateError) else None


def _methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _interface(tree: ast.Module) -> OptimizerInterface:
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and "__call__" in _methods(n)]
    if not classes:
        raise _Fail(
            "interface",
            "no top-level class with a __call__(self, func, searchspace) method; define exactly one optimizer class",
        )
    if len(classes) > 1:
        names = ", ".join(c.name for c in classes)
        raise _Fail(
            "interface",
            f"{len(classes)} classes define __call__ ({names}); keep exactly one optimizer class "
            "and turn the others into plain helpers",
            classes[1],
        )
    cls = classes[0]
    methods = _methods(cls)
    call = methods["__call__"]
    if isinstance(call, ast.AsyncFunctionDef):
        raise _Fail("interface", "__call__ must be a plain method, not async", call)
    _check_call(call)
    hps = _hyperparameters(cls)
    params, varkw = _check_init(methods.get("__init__"), hps)
    return OptimizerInterface(cls.name, hps, params, varkw)


def _check_call(call: ast.FunctionDef) -> None:
    a = call.args
    positional = a.posonlyargs + a.args
    if len(positional) < 3 and a.vararg is None:
        raise _Fail("interface", "__call__ must take (self, func, searchspace)", call)
    required = len(positional) - len(a.defaults)
    if required > 3:
        raise _Fail(
            "interface",
            f"__call__ requires {required - 1} arguments besides self; it is called as __call__(func, searchspace)",
            call,
        )
    if any(d is None for d in a.kw_defaults):
        raise _Fail("interface", "__call__ has keyword-only arguments without defaults", call)


def _check_init(init: ast.FunctionDef | None, hps: dict) -> tuple[tuple[str, ...], bool]:
    if init is None:
        return (), True
    a = init.args
    positional = a.posonlyargs + a.args
    required = len(positional) - len(a.defaults)
    if required > 1:
        missing = [p.arg for p in positional[1:required]]
        raise _Fail(
            "interface",
            f"__init__ arguments {missing} have no default; the optimizer is built as "
            "Cls(budget=..., **hyperparameters), so give every argument a default",
            init,
        )
    if any(d is None for d in a.kw_defaults):
        raise _Fail("interface", "__init__ has keyword-only arguments without defaults", init)
    names = tuple(p.arg for p in a.args[1:] + a.kwonlyargs)
    varkw = a.kwarg is not None
    for name in hps:
        if name not in names and not varkw:
            raise _Fail(
                "interface",
                f"hyperparameter {name!r} is declared but __init__ does not accept it; "
                f"add {name}=<default> to __init__",
                init,
            )
    return names, varkw


def _hyperparameters(cls: ast.ClassDef) -> dict:
    node = None
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "hyperparameters" for t in stmt.targets
        ):
            node = stmt
        elif (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and stmt.target.id == "hyperparameters"
        ):
            node = stmt
    if node is None or node.value is None:
        return {}
    try:
        hps = ast.literal_eval(node.value)
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        raise _Fail(
            "interface",
            "hyperparameters must be a literal dict (no names or calls): "
            "{'name': {'type': 'int', 'low': 1, 'high': 10, 'default': 4}}",
            node,
        ) from None
    if not isinstance(hps, dict):
        raise _Fail("interface", "hyperparameters must be a dict of name -> {type, low/high or choices, default}", node)
    for name, hp in hps.items():
        problem = hyperparameter_problem(name, hp)
        if problem:
            raise _Fail("interface", problem, node)
    return hps


def hyperparameter_problem(name, hp) -> str | None:
    """What is wrong with one declared hyperparameter, or None if it is well formed."""
    if not isinstance(name, str) or not name.isidentifier():
        return f"hyperparameter name {name!r} is not a valid Python identifier"
    if not isinstance(hp, dict):
        return f"hyperparameter {name!r} must be a dict like {{'type': 'int', 'low': 1, 'high': 10, 'default': 4}}"
    kind = hp.get("type")
    if kind not in HP_TYPES:
        return f"hyperparameter {name!r} has type {kind!r}; use one of {', '.join(HP_TYPES)}"
    if "default" not in hp:
        return f"hyperparameter {name!r} has no 'default'"
    default = hp["default"]
    problem = hyperparameter_values_problem(name, hp)
    if problem:
        return problem
    if kind == "categorical":
        choices = hp.get("choices")
        if not isinstance(choices, (list, tuple)) or not choices:
            return f"categorical hyperparameter {name!r} needs a non-empty 'choices' list"
        if len(choices) > MAX_CHOICES:
            return f"categorical hyperparameter {name!r} has {len(choices)} choices; keep at most {MAX_CHOICES}"
        if default not in choices:
            return f"hyperparameter {name!r}: default {default!r} is not one of its choices {list(choices)}"
        return None
    low, high = hp.get("low"), hp.get("high")
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high, default))
    if not numbers:
        return f"hyperparameter {name!r} ({kind}) needs numeric 'low', 'high' and 'default'"
    if kind == "int" and not all(isinstance(v, int) for v in (low, high, default)):
        return f"int hyperparameter {name!r} needs integer low, high and default"
    if not low < high:
        return f"hyperparameter {name!r}: low ({low}) must be below high ({high})"
    if kind == "log" and low <= 0:
        return f"log hyperparameter {name!r} needs low > 0 (got {low})"
    if not low <= default <= high:
        return f"hyperparameter {name!r}: default {default} is outside [{low}, {high}]"
    return None


def hyperparameter_values_problem(name, hp: dict) -> str | None:
    """Why a declared hyperparameter's default, bounds or choices are not all bounded JSON scalars, or None."""
    choices = hp.get("choices")
    values = list(choices) if isinstance(choices, (list, tuple)) else []
    for value in [hp.get("default"), hp.get("low"), hp.get("high"), *values]:
        problem = _scalar_problem(value)
        if problem:
            return f"hyperparameter {name!r}: {problem}"
    return None


def _scalar_problem(value) -> str | None:
    """Why `value` is not a bounded JSON scalar (None, bool, int, finite float, short str), or None."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return None if abs(value) <= MAX_INT else f"the integer {_short(value)} is beyond +-2**53; use smaller numbers"
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value!r} is not a finite number"
    if isinstance(value, str):
        return None if len(value) <= MAX_TEXT else f"a string of {len(value)} characters (at most {MAX_TEXT})"
    return (
        f"a value of type {type(value).__name__} ({_short(value)}); values must be numbers, "
        "short strings, booleans or None"
    )


def _short(value) -> str:
    """A value's text, cut short (an int too long for decimal text gets its size instead)."""
    if isinstance(value, int) and value.bit_length() > 200:
        return f"of {value.bit_length()} bits"
    return repr(value)[:40]
