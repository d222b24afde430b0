"""ast.parse from many threads at once (CPython gh-106905): Python 3.11 raises SystemError
'AST constructor recursion depth mismatch' when a thread switch lands inside the AST conversion.
Dask workers with several threads (dask-local, dask://) check candidates concurrently, and any
Python finalizer run by the garbage collector can cause that switch; every parse in `generator`
goes through one process-wide lock (generator.parsing)."""

from __future__ import annotations

import sys
import threading

from support.paths import ROOT

from generator.candidate.checks import check_source

SOURCE = (ROOT / "generator" / "candidate" / "checks.py").read_text()
CANDIDATE = """
class RandomSearch:
    hyperparameters = {"n": {"type": "int", "low": 1, "high": 8, "default": 2}}

    def __init__(self, budget=5000, n=2):
        self.n = n

    def __call__(self, func, searchspace):
        for cfg in searchspace.get_random_sample(10):
            func(cfg)
"""


class _Finalized:
    """Garbage whose finalizer runs Python code: the collector then switches threads mid-parse."""

    def __del__(self):
        sum(range(50))


def _make_garbage(stop: threading.Event, cycles: int = 20000) -> None:
    for _ in range(cycles):
        if stop.is_set():
            return
        a, b = _Finalized(), _Finalized()
        a.other, b.other = b, a  # a cycle: freed by the collector, at an allocation inside the parse


def _hammer(parse, threads: int = 4, rounds: int = 300) -> list[BaseException]:
    errors: list[BaseException] = []
    stop = threading.Event()

    def work():
        try:
            for _ in range(rounds):
                if errors:
                    return
                parse()
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch as often as the interpreter allows
    garbage = threading.Thread(target=_make_garbage, args=(stop,))
    workers = [threading.Thread(target=work) for _ in range(threads)]
    try:
        garbage.start()
        for t in workers:
            t.start()
        for t in workers:
            t.join()
    finally:
        stop.set()
        garbage.join()
        sys.setswitchinterval(old)
    return errors


def test_generator_parse_survives_many_threads():
    from generator.parsing import parse

    assert _hammer(lambda: parse(SOURCE)) == []


def test_candidate_checks_survive_many_threads():
    """What a Dask worker with several threads does: check candidates at the same time."""
    big = CANDIDATE + "\n".join(
        f"\n\ndef helper_{i}(x):\n    return [[x * {i} + j for j in range(3)] "
        f"for _ in range(2)] if x else {{'a': (x, {i})}}"
        for i in range(40)
    )
    assert check_source(big) is None  # a valid candidate, checked alone
    results: list = []
    errors = _hammer(lambda: results.append(check_source(big)), rounds=30)
    assert errors == []
    assert len(results) == 120 and all(r is None for r in results)


# ------------------------------------------------------------------ other libraries' parses (issue 40, item 2)
FOREIGN = "def f(x):\n    return [(x, {'a': [1, (2, 3)]})]\n"


class _ParsesWhenFreed:
    """Garbage whose finalizer parses as another library would (Dask's threads, traceback formatting on
    3.11: with `ast.parse` itself, outside any lock of ours) and leaves new garbage of its kind, so the
    collector (run at every allocation here) parses again and again, also in the middle of our parse."""

    armed = 0  # finalizers left to parse

    def __del__(self):
        if _ParsesWhenFreed.armed > 0:
            _ParsesWhenFreed.armed -= 1
            _nested(20, FOREIGN)  # deeper in the stack than ours: its depth differs, so a collision shows
            _cycle()


def _cycle() -> None:
    a, b = _ParsesWhenFreed(), _ParsesWhenFreed()
    a.other, b.other = b, a


def _nested(depth: int, source: str) -> None:
    import ast

    ast.parse(source) if depth == 0 else _nested(depth - 1, source)


def _parse_while_others_parse(parse, rounds: int = 5) -> list[BaseException]:
    """Each round: our parse while the other library parses at every allocation (gh-106905's collision)."""
    import gc

    errors = []
    old = gc.get_threshold()
    try:
        for _ in range(rounds):
            _ParsesWhenFreed.armed = 400
            _cycle()
            gc.set_threshold(1)
            try:
                parse()
            except SystemError as exc:
                errors.append(exc)
            finally:
                gc.set_threshold(*old)
                _ParsesWhenFreed.armed = 0
    finally:
        gc.collect()
    return errors


def test_parses_survive_other_libraries_parsing_at_the_same_time(monkeypatch):
    """`tunesmith run --executor dask-local` failed with 'AST constructor recursion depth mismatch' in
    reply_code._rank: the lock serialises our parses, not Dask's. After isolate() ours run in a child process."""
    from generator import parsing

    monkeypatch.setattr(parsing, "_ISOLATED", True)  # what isolate() does, for this test only
    assert _parse_while_others_parse(lambda: parsing.parse(SOURCE)) == []
    tree = parsing.parse(CANDIDATE)
    assert [n.name for n in tree.body] == ["RandomSearch"]
    code = parsing.compile_code(parsing.parse("x * 2", mode="eval"), "<restriction>", "eval")
    assert eval(code, {"x": 21}) == 42
    assert parsing.literal_eval("{'a': (1, 2.5)}") == {"a": (1, 2.5)}


def test_isolated_parse_reports_bad_source_as_ast_parse_does(monkeypatch):
    from generator import parsing

    monkeypatch.setattr(parsing, "_ISOLATED", True)
    for bad, error in (
        ("def f(:\n", SyntaxError),
        ("x = 1\0", (SyntaxError, ValueError)),
        ("(" * 300 + ")" * 300, (SyntaxError, RecursionError, MemoryError)),
    ):
        try:
            parsing.parse(bad)
        except error:
            pass
        else:
            raise AssertionError(f"{bad[:20]!r} parsed")
    assert parsing.parse("y = 2").body[0].targets[0].id == "y"  # the child is still in step after errors
