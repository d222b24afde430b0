"""Finding the optimizer's code in an LLM reply, as real replies are written.

Real replies (a small local code model, o4-mini through LLaMEA, see tests/data/real_replies/) come
in shapes a strict Markdown reader gets wrong: code with no opening fence but a closing one
followed by prose; several blocks (imports, the class, a usage example); `python3`, `py` or no
language tag; Windows line endings; a class between two paragraphs of prose with no fences at
all; and replies cut off at the token limit in the middle of the class. So every plausible
segment is a candidate — each fenced block, each stretch between two fence lines, the unfenced
text — and the one holding the optimizer class wins (a class with `__call__`, that parses,
longest). A reply that stopped at the token limit (finish_reason "length", or an unclosed block
that does not parse) is flagged `truncated`, so that the error shown to the fix operator says so.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from generator import parsing
from generator.errors import printable

_FENCE_LINE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+.-]*)[^\n]*$")
PYTHON_TAGS = ("", "python", "python3", "py", "py3", "python2", "ipython", "pycon")
# where code starts in unfenced text: an import, a class, a function, a decorator
_CODE_START = re.compile(r"^(import \w|from [\w.]+ import |class \w|def \w|async def \w|@\w)")
_COMPOUND = re.compile(
    r"^(class|def|async def|if|elif|else|for|while|with|try|except|finally|match|case)\b.*:\s*(#.*)?$"
)
_CLOSING = re.compile(r"^[\])}]")
# what ast.parse raises on text that is not Python; RecursionError and MemoryError: nested too deeply
_NOT_PYTHON = (SyntaxError, ValueError, RecursionError, MemoryError)


@dataclass(frozen=True)
class Found:
    """The code found in a reply, where it starts in the text, and whether the reply was cut off."""

    code: str | None
    start: int = 0  # offset of the code's segment in the text (the description is read before it)
    truncated: bool = False


def normalise_newlines(text: str) -> str:
    """Windows and old Mac line endings as \\n."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def parses(code: str) -> bool:
    try:
        parsing.parse(code)
        return True
    except _NOT_PYTHON:
        return False


def has_top_level_class(code: str) -> bool:
    """A `class` statement at the start of a line (read as text: the code need not parse)."""
    return bool(re.search(r"^class[ \t]+\w", code, re.M))


def has_optimizer_class(code: str) -> bool:
    """A top-level class that defines __call__ (what the static checks look for)."""
    try:
        tree = parsing.parse(code)
    except _NOT_PYTHON:
        return has_top_level_class(code) and "def __call__" in code
    return any(
        isinstance(n, ast.ClassDef) and any(isinstance(b, ast.FunctionDef) and b.name == "__call__" for b in n.body)
        for n in tree.body
    )


def _rank(code: str) -> tuple:
    return (has_optimizer_class(code), has_top_level_class(code), parses(code), len(code))


def _is_prose(line: str) -> bool:
    """An unindented line that is not Python: it does not parse on its own and opens no block."""
    if not line.strip():
        return False
    if line[0] in " \t#" or _COMPOUND.match(line) or _CLOSING.match(line):
        return False
    if line.startswith(("- ", "* ", "> ", "| ", "**")):  # Markdown lists, quotes, tables, bold
        return True
    try:
        parsing.parse(line)
        return line.rstrip().endswith((".", "!", "?")) and " " in line.strip() and not line.rstrip().endswith("...")
    except _NOT_PYTHON:
        return True


def code_in_text(text: str) -> tuple[str | None, int]:
    """Code in unfenced text (from the first code-looking line on, prose around and between removed)
    and the line it starts on."""
    lines = text.split("\n")
    starts = [i for i, ln in enumerate(lines) if _CODE_START.match(ln)]
    if not starts:
        return None, 0
    first = next(i for i, ln in enumerate(lines) if ln.strip())
    if parses(text):  # all of it is Python (a bare file): keep its header comments and docstring
        return text.strip("\n"), first
    for k, start in enumerate(starts):  # comments right above the code belong to it
        while start > 0 and lines[start - 1].startswith("#"):
            start -= 1
        starts[k] = start
    best, best_start = None, starts[0]
    for start in starts[:6]:
        body = lines[start:]
        while body and (not body[-1].strip() or _is_prose(body[-1])):
            body = body[:-1]  # prose after the code
        candidates = ["\n".join(body), "\n".join(ln for ln in body if not _is_prose(ln))]
        for code in candidates:
            if parses(code):
                if best is None or _rank(code) > _rank(best):
                    best, best_start = code, start
                break
        else:
            if best is None:
                best = candidates[0]  # nothing parses: keep it whole, the syntax error says where
        if best is not None and parses(best) and has_optimizer_class(best):
            break
    return (best.strip("\n"), best_start) if best and best.strip() else (None, 0)


def _fence_lines(lines: list[str]) -> list[tuple[int, str]]:
    out = []
    for i, ln in enumerate(lines):
        m = _FENCE_LINE.match(ln)
        if m:
            out.append((i, m.group(2).lower()))
    return out


def find_code(text: str | None, finish_reason: str | None = None) -> Found:
    """The optimizer's code in a reply (see the module docstring), or Found(None)."""
    text = normalise_newlines(text or "")
    lines = text.split("\n")
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln) + 1)
    fences = _fence_lines(lines)
    candidates: list[tuple[str, int, bool]] = []  # (code, start offset, from an unclosed block)
    # 1. fenced blocks, paired the Markdown way: an opening fence (Python or no tag) up to the next fence
    i = 0
    while i < len(fences):
        line, tag = fences[i]
        end = fences[i + 1][0] if i + 1 < len(fences) else len(lines)
        if tag in PYTHON_TAGS:
            block = "\n".join(lines[line + 1 : end]).strip("\n")
            if block.strip():
                candidates.append((block, offsets[line], i + 1 >= len(fences)))
        i += 2
    # 2. every stretch between two fence lines (and before the first, after the last), read as
    #    unfenced text: catches code whose opening fence is missing and prose that was fenced
    bounds = [-1] + [f[0] for f in fences] + [len(lines)]
    for a, b in zip(bounds[:-1], bounds[1:]):
        code, first = code_in_text("\n".join(lines[a + 1 : b]))
        if code:
            candidates.append((code, offsets[a + 1 + first], False))
    if not candidates:
        return Found(None)
    code, start, unclosed = max(candidates, key=lambda c: _rank(c[0]))
    truncated = finish_reason == "length" or (unclosed and not parses(code))
    if not truncated and not parses(code) and not text.rstrip().endswith(("```", "~~~")):
        # code running to the very end of the reply without parsing: cut off mid-statement
        truncated = text.rstrip().endswith(code.rstrip()[-40:]) and _looks_cut(code)
    if fences:  # the description is read before the code and before the first fence
        start = min(start, offsets[fences[0][0]])
    return Found(code.rstrip() + "\n", start, truncated)


def _looks_cut(code: str) -> bool:
    """The syntax error is at the very end: an unclosed bracket, block or string (not a typo inside)."""
    try:
        parsing.parse(code)
        return False
    except (RecursionError, MemoryError):
        return False
    except SyntaxError as exc:
        last = len(code.rstrip().split("\n"))
        return (exc.lineno or 0) >= last - 1 or "was never closed" in str(exc.msg) or "EOF" in str(exc.msg)


MAX_DESCRIPTION = 300  # characters: a description is one line in tables and prompts


def _clip(line: str, limit: int = MAX_DESCRIPTION) -> str:
    """At most `limit` characters, cut at a word boundary with an ellipsis that says it was cut."""
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    if " " in cut[limit // 2 :]:  # a word boundary in the second half: cut there, not mid-word
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:.-") + "…"


def description(text: str, found: Found) -> str:
    """One line: the first prose line before the code, else the code's first comment, else the class name."""
    head = normalise_newlines(text or "")[: found.start]
    for line in head.split("\n"):
        if _FENCE_LINE.match(line):
            continue
        line = re.sub(r"\*\*|`", "", re.sub(r"^[#\s]+", "", line)).strip().strip("*").strip()
        if line:
            return printable(_clip(line), newlines=False)  # an LLM wrote it: no terminal escapes
    for line in (found.code or "").splitlines():
        s = line.strip()
        text = re.sub(r"^[#\s]+", "", s)
        if s.startswith("#") and not s.startswith(("#!", "# tunesmith-synth:")) and text:
            return printable(_clip(text), newlines=False)
    m = re.search(r"^class (\w+)", found.code or "", re.M)
    return m.group(1) if m else ""


TRUNCATED_MESSAGE = (
    "the reply was truncated: it reached the token limit (max_tokens) before the code was "
    "complete; write a shorter complete class (fewer helpers, no long comments or docstrings)"
)


def truncation_error(error: dict | None) -> dict | None:
    """The syntax (or missing-class) error of a truncated reply, reworded so that the fix prompt asks for
    shorter code; other errors are returned as they are."""
    if not error or error.get("kind") not in ("syntax", "interface") or "truncated" in str(error.get("message", "")):
        return error
    return dict(error, message=f"{TRUNCATED_MESSAGE} ({error.get('message', '')})")
