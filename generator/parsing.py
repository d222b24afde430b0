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
