"""Copies and near-copies: a candidate's code normalised two ways, its similarity to the archive
(the archive's diversity per generation, from these: generator/campaign/diversity.py).

`Shape.of(code)` parses the code once and keeps two views of it:

- `fingerprint`: a hash of the syntax tree with docstrings (and, by parsing, comments and layout)
  dropped and the names the code chooses for itself renamed by order of first appearance: local
  variables, arguments, its own functions and classes, import aliases (`as np`). Two candidates
  with the same fingerprint are the same program, and the later one is a copy: a duplicate that
  inherits the score without being evaluated. Everything that can change what the code does is
  kept: every constant and string (`neighbor_method="Hamming"` vs `"strictly-adjacent"`, a
  temperature 0.05 vs 0.1), names the code does not choose (builtins, library attributes such as
  `.argmin` or `searchspace.get_neighbors`, imported names), and names others can see or reach:
  attributes (`self.x`), names bound in a class body (`hyperparameters`, methods), `__init__`'s
  arguments (passed by keyword: budget and hyperparameters), names also used as keyword arguments,
  and names that also appear as a string (`getattr(self, "x")`).
- `grams`: the multiset of q-grams (q = 4) of the tree's pre-order token sequence with every chosen
  name reduced to a placeholder and constants to their type. `similarity(a, b)` is their weighted
  Jaccard index, sum of minima over sum of maxima of the counts: 1.0 for code that differs only in
  names and constants, near 0 for unrelated code. It is cheap (one dict pass per pair) and, unlike
  a text diff, blind to layout and naming. A near-copy (similarity above `[novelty]
  max_similarity`, a changed constant included) is asked for once more, then evaluated: it never
  inherits a score.

Code that does not parse has no shape; it never counts as a copy (the sandbox reports its error).
"""

from __future__ import annotations

import ast
import hashlib
from collections import Counter
from dataclasses import dataclass

from generator import parsing

Q = 4  # q-gram length: long enough to see statement structure, short enough to survive small edits


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _bound_names(tree: ast.AST) -> set[str]:
    """Names the code binds itself (assigned, defined, imported as, arguments)."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return bound


def _visible_names(tree: ast.AST) -> set[str]:
    """Bound names that others see or reach, so renaming them could change what the code does."""
    seen: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):  # class attributes and methods: reached as attributes
            for stmt in node.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    seen.add(stmt.name)
                else:
                    seen.update(_bound_names(stmt))
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == "__init__":
                    args = stmt.args
                    seen.update(a.arg for a in args.posonlyargs + args.args + args.kwonlyargs)
        elif isinstance(node, ast.keyword) and node.arg:
            seen.add(node.arg)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            seen.add(node.value)
        elif isinstance(node, ast.alias) and not node.asname:
            seen.add(node.name.split(".")[0])  # `import numpy`, `from random import choice`: not chosen
    return seen


class _Normaliser(ast.NodeTransformer):
    """Rename chosen names by first appearance and drop docstrings; `program=False` also replaces
    constants by their type and renames every bound name and attribute of self (the loose view)."""

    def __init__(self, bound: set[str], program: bool = False, visible: frozenset[str] = frozenset()):
        self.bound = bound - visible if program else bound
        self.program = program
        self.names: dict[str, str] = {}

    def _name(self, name: str) -> str:
        if name not in self.bound:
            return name  # a builtin, a global the code did not define or a visible name: part of what it does
        return self.names.setdefault(name, f"$v{len(self.names)}")  # "$": never a name in source

    def generic_visit(self, node):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and _is_docstring(body[0]):
            node.body = body[1:] or [ast.Pass()]
        return super().generic_visit(node)

    def visit_Name(self, node):
        return ast.copy_location(ast.Name(id=self._name(node.id), ctx=node.ctx), node)

    def visit_arg(self, node):
        node.arg = self._name(node.arg)
        node.annotation = None
        node.type_comment = None
        return node

    def visit_FunctionDef(self, node):
        if node.name.startswith("__") and node.name.endswith("__"):
            pass  # __init__ and __call__ are the interface, not a choice
        else:
            node.name = self._name(node.name)
        node.returns = None
        return self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        node.name = self._name(node.name)
        return self.generic_visit(node)

    def visit_alias(self, node):
        if node.asname:
            node.asname = self._name(node.asname)
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if self.program:
            return node  # an attribute is reached by its name (getattr, the class body, the caller)
        if isinstance(node.value, ast.Name) and "self" in self.names and node.value.id == self.names["self"]:
            node.attr = self.names.setdefault(f"self.{node.attr}", f"$a{len(self.names)}")
        return node

    def visit_Constant(self, node):
        value = node.value
        if self.program:
            return node  # a constant is part of what the program does
        if isinstance(value, bool) or value is None or value is Ellipsis:
            return node  # True/False/None read like keywords: flipping one changes the algorithm
        kind = "num" if isinstance(value, (int, float, complex)) else "str"
        return ast.copy_location(ast.Name(id=f"<{kind}>", ctx=ast.Load()), node)


def _tokens(node: ast.AST, out: list[str]) -> None:
    """Pre-order tokens of a normalised tree; chosen names become one placeholder."""
    if isinstance(node, (ast.Load, ast.Store, ast.Del)):
        return
    kind = type(node).__name__
    if isinstance(node, ast.Name):
        out.append("Name" if node.id.startswith("$") else node.id)
        return
    if isinstance(node, ast.Attribute):
        out.append("Attr" if node.attr.startswith("$") else f".{node.attr}")
    else:
        out.append(kind)
    for child in ast.iter_child_nodes(node):
        _tokens(child, out)
    if isinstance(node, ast.stmt) and any(isinstance(getattr(node, f, None), list) for f in ("body", "orelse")):
        out.append("end")  # close a block, so that nesting shows in the stream


@dataclass(frozen=True)
class Shape:
    """The normalised structure of one candidate's code."""

    fingerprint: str
    grams: Counter
    size: int  # tokens

    @classmethod
    def of(cls, code: str | None) -> Shape | None:
        """The shape of a piece of code, or None if it does not parse."""
        if not code:
            return None
        try:
            tree = parsing.parse(code)
            bound = _bound_names(tree)
            visible = frozenset(_visible_names(tree))
            # a second tree for the program view: parsing again is cheaper than copying the first
            program = _Normaliser(bound, program=True, visible=visible).visit(parsing.parse(code))
            program = parsing.printable_constants(program)  # a huge literal would make ast.dump raise
            fingerprint = hashlib.sha256(ast.dump(program, annotate_fields=False).encode()).hexdigest()[:16]
            tree = _Normaliser(bound).visit(tree)
            tokens: list[str] = []
            _tokens(tree, tokens)
        except (SyntaxError, ValueError, RecursionError, MemoryError):  # RecursionError: nested too deeply
            return None
        grams = Counter(tuple(tokens[i : i + Q]) for i in range(max(1, len(tokens) - Q + 1)))
        return cls(fingerprint, grams, len(tokens))


def similarity(a: Shape, b: Shape) -> float:
    """Weighted Jaccard index of two shapes' q-gram counts, in [0, 1]."""
    if a.fingerprint == b.fingerprint:
        return 1.0
    small, large = (a.grams, b.grams) if len(a.grams) <= len(b.grams) else (b.grams, a.grams)
    common = sum(min(n, large[g]) for g, n in small.items() if g in large)
    total = sum(a.grams.values()) + sum(b.grams.values()) - common
    return common / total if total else 1.0


@dataclass(frozen=True)
class Nearest:
    """The archived candidate most like a new one."""

    id: str | None
    similarity: float  # 0.0 when the archive is empty
    exact: bool  # same fingerprint: the same program up to the names it chooses, docstrings and layout


class ShapeIndex:
    """The shapes of the archive's distinct candidates, in the order they were added."""

    def __init__(self):
        self.shapes: dict[str, Shape] = {}
        self.by_fingerprint: dict[str, str] = {}

    def add(self, cid: str, shape: Shape | None) -> None:
        """Count a candidate's code as part of the archive (the first of a fingerprint is its owner)."""
        if shape is None:
            return
        self.shapes[cid] = shape
        self.by_fingerprint.setdefault(shape.fingerprint, cid)

    def nearest(self, shape: Shape | None) -> Nearest:
        """The closest archived candidate (ties: the earliest)."""
        if shape is None or not self.shapes:
            return Nearest(None, 0.0, False)
        twin = self.by_fingerprint.get(shape.fingerprint)
        if twin is not None:
            return Nearest(twin, 1.0, True)
        best_id, best = None, -1.0
        for cid, other in self.shapes.items():
            s = similarity(shape, other)
            if s > best:
                best_id, best = cid, s
        return Nearest(best_id, round(best, 4), False)
