"""Restriction expressions (Kernel Tuner / T1 strings) evaluated over a whole Cartesian product at once.

A restriction such as `block_size_x*block_size_y<=1024 and (use_padding==0 or use_shmem)` is
Python. Evaluating it once per configuration costs seconds on the benchmark-hub spaces; here it
is rewritten into numpy operations (`and` -> logical_and, chained comparisons split, `x if c else
y` -> where, min/max -> minimum/maximum) and evaluated on columns of parameter values. A random
sample is checked against plain Python evaluation; any disagreement or unsupported construct falls
back to the per-configuration loop, so the fast path can only be faster, never different.
"""

from __future__ import annotations

import ast
import itertools

import numpy as np

from generator import parsing

SAFE_BUILTINS = {
    "min": min,
    "max": max,
    "abs": abs,
    "int": int,
    "float": float,
    "round": round,
    "len": len,
    "bool": bool,
    "str": str,
}
CHUNK = 1 << 20  # configurations per vectorised block


class RestrictionError(ValueError):
    """A restriction that cannot be compiled or evaluated; the message names it."""


def compile_restrictions(restrictions, names) -> list:
    """Compile each expression; unknown names or bad syntax raise RestrictionError."""
    compiled = []
    for expr in restrictions:
        if not isinstance(expr, str):
            raise RestrictionError(f"restriction {expr!r} is not a string; write it as a Python expression")
        try:
            code = parsing.compile_code(expr, "<restriction>", "eval")
        except SyntaxError as exc:
            raise RestrictionError(f"restriction {expr!r} does not parse ({exc.msg}); fix its Python syntax") from None
        unknown = set(code.co_names) - set(names) - set(SAFE_BUILTINS)
        if unknown:
            raise RestrictionError(
                f"restriction {expr!r} names unknown parameters {sorted(unknown)}; use names from tune_params"
            )
        compiled.append(code)
    return compiled


def valid_indices(tune_params: dict[str, list], restrictions) -> np.ndarray:
    """Index matrix (n_valid, n_params) of the configurations that pass every restriction, in product order."""
    names = list(tune_params)
    compiled = compile_restrictions(restrictions, names)
    sizes = [len(v) for v in tune_params.values()]
    if not compiled:
        return _unravel(np.arange(int(np.prod(sizes))), sizes)
    try:
        rows = _valid_vectorised(tune_params, restrictions, sizes)
        if _agrees_with_python(rows, tune_params, compiled, sizes):
            return rows
    except Exception:  # noqa: BLE001 - anything numpy cannot do goes the slow, exact way
        pass
    return _valid_python(tune_params, compiled, sizes)


def _unravel(flat: np.ndarray, sizes) -> np.ndarray:
    return np.stack(np.unravel_index(flat, sizes), axis=1).astype(np.int32).reshape(-1, len(sizes))


def _column(values: list) -> np.ndarray:
    col = np.asarray(values)
    if col.dtype.kind not in "biufU" or len(set(map(type, values))) > 1:
        col = np.asarray(values, dtype=object)
    return col


def _valid_vectorised(tune_params, restrictions, sizes) -> np.ndarray:
    funcs = [_vectorise(expr) for expr in restrictions]
    columns = [_column(v) for v in tune_params.values()]
    names = list(tune_params)
    total = int(np.prod(sizes))
    kept = []
    with np.errstate(all="ignore"):
        for start in range(0, total, CHUNK):
            flat = np.arange(start, min(start + CHUNK, total))
            idx = np.unravel_index(flat, sizes)
            env = {n: col[i] for n, col, i in zip(names, columns, idx)}
            mask = np.ones(flat.size, dtype=bool)
            for f in funcs:
                mask &= np.broadcast_to(_truth(eval(f, _VEC_GLOBALS, env)), mask.shape)
            kept.append(flat[mask])
    return _unravel(np.concatenate(kept) if kept else np.zeros(0, np.int64), sizes)


def _agrees_with_python(rows, tune_params, compiled, sizes, n=400) -> bool:
    """Check the vectorised answer on a sample of configurations (all of them for small spaces)."""
    total = int(np.prod(sizes))
    rng = np.random.default_rng(0)
    flat = np.arange(total) if total <= 2 * n else rng.choice(total, n, replace=False)
    valid_flat = set(np.ravel_multi_index(rows.T, sizes).tolist()) if rows.size else set()
    values = list(tune_params.values())
    names = list(tune_params)
    for f, idx in zip(flat.tolist(), _unravel(flat, sizes).tolist()):
        env = {k: vals[i] for k, vals, i in zip(names, values, idx)}
        if _passes(compiled, env) != (f in valid_flat):
            return False
    return True


def _passes(compiled, env) -> bool:
    try:
        return all(eval(code, {"__builtins__": SAFE_BUILTINS}, env) for code in compiled)
    except ZeroDivisionError:
        return False


def _valid_python(tune_params, compiled, sizes) -> np.ndarray:
    names = list(tune_params)
    values = list(tune_params.values())
    rows = []
    for idx in itertools.product(*[range(s) for s in sizes]):
        env = {n: vals[i] for n, vals, i in zip(names, values, idx)}
        try:
            if _passes(compiled, env):
                rows.append(idx)
        except Exception as exc:  # noqa: BLE001 - reported with the configuration that broke it
            raise RestrictionError(
                f"a restriction fails on {env} ({type(exc).__name__}: {exc}); fix the restriction"
            ) from None
    return np.asarray(rows, dtype=np.int32).reshape(-1, len(names))


# ------------------------------------------------------------------------- the AST rewrite


def _truth(x):
    x = np.asarray(x)
    return x if x.dtype == bool else (x != 0) if x.dtype.kind in "biuf" else x.astype(bool)


def _and(*xs):
    return np.logical_and.reduce([_truth(x) for x in np.broadcast_arrays(*xs)])


def _or(*xs):
    return np.logical_or.reduce([_truth(x) for x in np.broadcast_arrays(*xs)])


def _min(*xs):
    return np.minimum.reduce(np.broadcast_arrays(*xs)) if len(xs) > 1 else min(xs[0])


def _max(*xs):
    return np.maximum.reduce(np.broadcast_arrays(*xs)) if len(xs) > 1 else max(xs[0])


def _int(x):
    return np.trunc(x).astype(np.int64) if np.asarray(x).dtype.kind == "f" else np.asarray(x).astype(np.int64)


_VEC_GLOBALS = {
    "__builtins__": {},
    "_and": _and,
    "_or": _or,
    "_not": lambda x: ~_truth(x),
    "_where": lambda c, a, b: np.where(_truth(c), a, b),
    "min": _min,
    "max": _max,
    "abs": np.abs,
    "int": _int,
    "float": lambda x: np.asarray(x, dtype=float),
    "round": np.round,
    "bool": _truth,
}


class _Vectorise(ast.NodeTransformer):
    def visit_BoolOp(self, node):
        self.generic_visit(node)
        fn = "_and" if isinstance(node.op, ast.And) else "_or"
        return ast.Call(ast.Name(fn, ast.Load()), node.values, [])

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.Call(ast.Name("_not", ast.Load()), [node.operand], [])
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if any(isinstance(op, (ast.In, ast.NotIn, ast.Is, ast.IsNot)) for op in node.ops):
            raise NotImplementedError("membership/identity tests are evaluated per configuration")
        if len(node.ops) == 1:
            return node
        parts, left = [], node.left
        for op, right in zip(node.ops, node.comparators):
            parts.append(ast.Compare(left, [op], [right]))
            left = right
        return ast.Call(ast.Name("_and", ast.Load()), parts, [])

    def visit_IfExp(self, node):
        self.generic_visit(node)
        return ast.Call(ast.Name("_where", ast.Load()), [node.test, node.body, node.orelse], [])


def _vectorise(expr: str):
    tree = _Vectorise().visit(parsing.parse(expr, mode="eval"))
    return parsing.compile_code(ast.fix_missing_locations(tree), "<restriction>", "eval")
