"""Parsing and compiling Python source under one process-wide lock.

CPython 3.11 keeps the AST converter's recursion depth in interpreter-wide state (gh-106905): when
two threads parse at once and the garbage collector switches threads mid-conversion (any Python
finalizer can), `ast.parse` raises `SystemError: AST constructor recursion depth mismatch`. A Dask
worker with several threads checks several candidates at once, so every parse and compile of
source in `generator` goes through here. Parsing is fast; the lock costs nothing measurable.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.RLock()  # re-entrant: a finalizer run during a parse may itself parse


def parse(source, filename: str = "<unknown>", mode: str = "exec", **kwargs) -> ast.AST:
    """`ast.parse`, one thread at a time."""
    with _LOCK:
        return ast.parse(source, filename, mode, **kwargs)


def compile_code(source, filename: str, mode: str, **kwargs):
    """`compile` (of source text or of a syntax tree), one thread at a time."""
    with _LOCK:
        return compile(source, filename, mode, **kwargs)


def literal_eval(node_or_string):
    """`ast.literal_eval`: a string is parsed first, so it takes the lock."""
    if isinstance(node_or_string, str):
        node_or_string = parse(node_or_string.lstrip(" \t"), mode="eval")
    return ast.literal_eval(node_or_string)


# Python refuses to turn an int of more than 4,300 decimal digits into text (CVE-2020-10735), so
# `ast.unparse` and `ast.dump` raise ValueError on such a constant; a hexadecimal literal of 3,700
# digits parses and compiles without one. Below the limit, with room for the sign.
_PRINTABLE_BITS = int((4300 - 1) * 3.3219)


def printable_constants(tree: ast.AST) -> ast.AST:
    """`tree` with every int constant too long to print in decimal replaced by its hex text (in place),
    so that `ast.unparse`/`ast.dump` of a candidate's code cannot fail on a literal; distinct ints
    stay distinct."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and node.value.bit_length() > _PRINTABLE_BITS:
            node.value = hex(node.value)
    return tree
