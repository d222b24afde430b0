"""Parsing Python source safely from many threads: in a child process where other libraries' threads run.

CPython 3.11 keeps the AST converter's recursion depth in interpreter-wide state (gh-106905): when
one thread turns source into syntax-tree objects (`ast.parse`) or syntax-tree objects into code
(`compile(tree)`) while another thread does the same, and a thread switch lands in between (the
garbage collector runs finalizers at any allocation), one of them fails with `SystemError: AST
constructor recursion depth mismatch`. A lock serialises Tunesmith's own parses, but not those of
other libraries: a campaign's process also runs Dask's client and scheduler threads, LLM clients,
and traceback formatting (which parses on 3.11).

So after `isolate()` (the campaign process and any process with a Dask client call it) every parse
and every compile of a tree happens in one long-lived child process, which answers one request at
a time; its results come back pickled (syntax trees) or marshalled (code objects), and rebuilding
them here does not touch that state. No thread of this process converts syntax trees any more, so
no other library's parse can collide with ours, on any Python version. The child also keeps the
campaign's process safe from source that crashes the parser: it dies, not the campaign.

Compiling source text (not a tree) never builds syntax-tree objects: it always happens here.
Without `isolate()` (the sandbox, short commands) parses run here, one at a time under a lock.
"""

from __future__ import annotations

import ast
import atexit
import marshal
import os
import pickle
import subprocess
import sys
import threading

_LOCK = threading.RLock()  # re-entrant: a finalizer run during a parse may itself parse
_ISOLATED = False

# The child: requests and answers are pickles with an 8-byte length; it ends when its input closes.
_CHILD = r"""
import ast, marshal, pickle, sys
# pickling a tree recurses once per level: a tree as deep as ast.parse allows (about a thousand nested unary
# minus signs compile here) must cross back as it would have been used in-process, not fail as too deep
sys.setrecursionlimit(20000)
inp, out = sys.stdin.buffer, sys.stdout.buffer
while True:
    head = inp.read(8)
    if len(head) < 8:
        break
    op, args, kwargs = pickle.loads(inp.read(int.from_bytes(head, "little")))
    try:
        value = ast.parse(*args, **kwargs) if op == "parse" else marshal.dumps(compile(*args, **kwargs))
        data = pickle.dumps(("ok", value), 5)
    except BaseException as exc:  # SyntaxError, ValueError, RecursionError, MemoryError: the caller's to see
        try:
            data = pickle.dumps(("error", exc), 5)
        except Exception:
            data = pickle.dumps(("error", SyntaxError(f"{type(exc).__name__}: {exc}")), 5)
    out.write(len(data).to_bytes(8, "little") + data)
    out.flush()
"""


def isolate() -> None:
    """From now on, parse and compile syntax trees in the child process (for the rest of this process)."""
    global _ISOLATED
    _ISOLATED = True


def parse(source, filename: str = "<unknown>", mode: str = "exec", **kwargs) -> ast.AST:
    """`ast.parse`: in the child process after `isolate()`, else here, one thread at a time."""
    if _ISOLATED:
        return _PARSER.call("parse", (source, filename, mode), kwargs)
    with _LOCK:
        return ast.parse(source, filename, mode, **kwargs)


def compile_code(source, filename: str, mode: str, **kwargs):
    """`compile` of source text (here) or of a syntax tree (in the child process after `isolate()`)."""
    if _ISOLATED and isinstance(source, ast.AST):
        return marshal.loads(_PARSER.call("compile", (source, filename, mode), kwargs))
    with _LOCK:
        return compile(source, filename, mode, **kwargs)


def literal_eval(node_or_string):
    """`ast.literal_eval`: a string is parsed first (through `parse`)."""
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


class _ChildParser:
    """The child process and the pipe to it; one request at a time."""

    def __init__(self):
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None

    def call(self, op: str, args: tuple, kwargs: dict):
        request = pickle.dumps((op, args, kwargs), 5)
        with self._lock:
            for attempt in (1, 2):
                try:
                    status, value = self._exchange(request)
                    break
                except (OSError, EOFError, pickle.UnpicklingError):
                    self._stop()  # it died (e.g. on this very source): a fresh one gets one more try
                    if attempt == 2:
                        raise SyntaxError("the Python parser crashed on this source") from None
                except BaseException:  # e.g. Ctrl-C mid-exchange: the pipe is out of step, start afresh
                    self._stop()
                    raise
        if status == "error":
            raise value
        return value

    def _exchange(self, request: bytes):
        proc = self._proc or self._start()
        proc.stdin.write(len(request).to_bytes(8, "little") + request)
        proc.stdin.flush()
        head = proc.stdout.read(8)
        if len(head) < 8:
            raise EOFError("the parser process ended")
        size = int.from_bytes(head, "little")
        data = proc.stdout.read(size)
        if len(data) < size:
            raise EOFError("the parser process ended")
        return pickle.loads(data)

    def _start(self) -> subprocess.Popen:
        # -I -S: the standard library only, nothing from the environment or site-packages
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _CHILD],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        return self._proc

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            proc.wait()
            proc.stdin.close()
            proc.stdout.close()

    def forget(self) -> None:
        """In a forked copy of this process: the child belongs to the parent (close our ends of its pipes, so
        that it still ends with the parent); start another when needed."""
        proc, self._proc, self._lock = self._proc, None, threading.Lock()
        if proc is not None:
            _FORGOTTEN.append(proc)  # kept: its file objects must never close the numbers, which may be reused
        for stream in (proc.stdin, proc.stdout) if proc is not None else ():
            try:
                os.close(stream.fileno())
            except (OSError, ValueError):
                pass


_PARSER = _ChildParser()
_FORGOTTEN: list = []  # a forked copy's handles on its parent's child (see forget)
atexit.register(_PARSER._stop)
os.register_at_fork(after_in_child=_PARSER.forget)
