"""Diff edits: SEARCH/REPLACE blocks in a reply, applied to the parent's code.

A reply to a refine, simplify or fix prompt in diff mode holds one or more blocks

    <<<<<<< SEARCH
    lines copied from the parent
    =======
    the lines that replace them
    >>>>>>> REPLACE

The peers' users show what real replies look like (LLaMEA #58, OpenEvolve #346, #241): CRLF line
ends, blocks inside ```python or ```diff fences (or with a fence left open), marker lines with 6
or 8 angle brackets, SEARCH text whose indentation or trailing spaces differ from the parent's.
Those are accepted. What is not accepted, with a reason the fallback prompt quotes: SEARCH text
that is not in the parent, or is in it more than once (which copy was meant is a guess), an
empty SEARCH, a block left open (a reply cut off), and an edit that changes nothing (the child
would be a silent copy of its parent, OpenEvolve #346). A reply with no block at all is read as full
code, unless its code is only a piece of the class (a method, a few lines): a local Qwen2.5-Coder
1.5B answered 2 of 8 diff prompts so (benchmarks/results/search_local.json), and such a piece,
read as full code, fails as "no top-level class". It is refused with a reason, as a block that
does not apply is, so the full-code fallback asks again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_START = re.compile(r"^\s*<{5,9}\s*SEARCH\s*$", re.I)
_MIDDLE = re.compile(r"^\s*={5,9}\s*$")
_END = re.compile(r"^\s*>{5,9}\s*REPLACE\s*$", re.I)
_FENCE = re.compile(r"^\s*(```|~~~)")


class DiffError(ValueError):
    """A reply's SEARCH/REPLACE blocks do not apply to the parent's code (the message says why)."""


@dataclass(frozen=True)
class Block:
    """One SEARCH/REPLACE block: the lines to find and the lines that replace them."""

    search: tuple[str, ...]
    replace: tuple[str, ...]


@dataclass(frozen=True)
class EditOutcome:
    """A diff reply applied: the child's code, or why it did not apply (blocks = 0: no diff at all)."""

    blocks: int
    code: str | None = None
    error: str | None = None


def _lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _unfenced(lines: list[str]) -> tuple[str, ...]:
    """A block's part without a fence line an LLM opened or closed inside it."""
    lines = list(lines)
    while lines and _FENCE.match(lines[0]):
        lines.pop(0)
    while lines and _FENCE.match(lines[-1]):
        lines.pop()
    return tuple(lines)


def parse_blocks(text: str | None) -> list[Block]:
    """The SEARCH/REPLACE blocks of a reply, in order; DiffError for a block left open."""
    blocks, search, replace, part = [], [], [], None
    for line in _lines(text or ""):
        if _START.match(line):
            if part is not None:
                raise DiffError(f"block {len(blocks) + 1} is not closed before the next <<<<<<< SEARCH")
            search, replace, part = [], [], "search"
        elif part == "search" and _MIDDLE.match(line):
            part = "replace"
        elif part == "replace" and _END.match(line):
            blocks.append(Block(_unfenced(search), _unfenced(replace)))
            part = None
        elif part == "search":
            search.append(line)
        elif part == "replace":
            replace.append(line)
    if part is not None:
        missing = "=======" if part == "search" else ">>>>>>> REPLACE"
        raise DiffError(f"block {len(blocks) + 1} is not closed (no {missing} line; was the reply cut off?)")
    return blocks


def _trimmed(lines: tuple[str, ...]) -> tuple[str, ...]:
    """Lines without the blank lines around them (LLMs add or drop those freely)."""
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _shift(code: list[str], at: int, search: tuple[str, ...]) -> int | None:
    """The constant indentation the parent has more than `search` at `at`, or None if it differs."""
    shifts = {_indent(c) - _indent(s) for c, s in zip(code[at : at + len(search)], search) if s.strip()}
    return shifts.pop() if len(shifts) == 1 else None


def _matches(code: list[str], search: tuple[str, ...]) -> tuple[list[int], int]:
    """Where `search` occurs in `code` (line offsets) and the indentation shift, trying exact lines
    first, then lines without trailing spaces, then lines under a constant change of indentation."""
    n = len(search)
    for norm in (lambda s: s, str.rstrip, str.strip):
        want = [norm(s) for s in search]
        hits = [i for i in range(len(code) - n + 1) if [norm(c) for c in code[i : i + n]] == want]
        if norm is str.strip:
            hits = [i for i in hits if _shift(code, i, search) is not None]
        if hits:
            return hits, (_shift(code, hits[0], search) or 0) if norm is str.strip else 0
    return [], 0


def _reindent(lines: tuple[str, ...], shift: int) -> list[str]:
    if shift > 0:
        return [" " * shift + line if line.strip() else line for line in lines]
    if shift < 0:
        return [line[min(-shift, _indent(line)) :] for line in lines]
    return list(lines)


def _near_miss(code: list[str], search: tuple[str, ...]) -> str:
    """The first SEARCH line found nowhere in the parent: what the fallback prompt points at."""
    have = {c.strip() for c in code}
    missing = next((s for s in search if s.strip() and s.strip() not in have), None)
    return f"; its line {missing.strip()[:80]!r} is not in the parent" if missing else ""


def apply_blocks(code: str, blocks: list[Block]) -> str:
    """The parent's code with every block applied in order; DiffError naming the first that does not apply."""
    lines = _lines(code)
    for k, block in enumerate(blocks, 1):
        search = _trimmed(block.search)
        if not search:
            raise DiffError(f"block {k} has an empty SEARCH part; copy the lines to change from the parent")
        hits, shift = _matches(lines, search)
        if not hits:
            raise DiffError(f"block {k}: its SEARCH text is not in the parent's code{_near_miss(lines, search)}")
        if len(hits) > 1:
            raise DiffError(
                f"block {k}: its SEARCH text occurs {len(hits)} times in the parent's code; "
                "include more lines so that it is found once"
            )
        at = hits[0]
        lines[at : at + len(search)] = _reindent(_trimmed(block.replace), shift)
    new = "\n".join(lines)
    if new.strip() == code.replace("\r\n", "\n").strip():
        raise DiffError("the blocks change nothing: the child would be a copy of its parent")
    return new


def fragment_reason(reply: str | None) -> str | None:
    """Why a reply without blocks is no full code either: its code has no top-level class (None otherwise)."""
    from generator.llm.reply_code import find_code, has_top_level_class

    code = find_code(reply).code
    if code is None or has_top_level_class(code):
        return None  # no code at all, or a class: read as any reply (the checks say what is wrong)
    first = next((ln.strip() for ln in code.splitlines() if ln.strip()), "")
    return (
        f"it has no SEARCH/REPLACE block, and its code (starting {first[:60]!r}) is only a piece of the "
        "class, not the complete class"
    )


ASKED_AGAIN = ("blocks_not_applied", "piece_of_class")  # outcomes whose full code came from a second request


def edit_outcome(edit: dict) -> str:
    """What became of a diff request, read from its candidate's edit record: 'applied', 'blocks_not_applied'
    or 'piece_of_class' (both asked again for full code, with the reason), or 'full_code' (no block)."""
    if edit.get("applied"):
        return "applied"
    if edit.get("blocks"):
        return "blocks_not_applied"
    return "piece_of_class" if edit.get("reason") else "full_code"


def apply_reply(reply: str | None, parent_code: str) -> EditOutcome:
    """A reply's blocks applied to the parent's code; blocks = 0 when the reply holds no block (with an
    error when its code is only a piece of the class)."""
    try:
        blocks = parse_blocks(reply)
    except DiffError as exc:
        return EditOutcome(1, error=str(exc))
    if not blocks:
        return EditOutcome(0, error=fragment_reason(reply))
    try:
        return EditOutcome(len(blocks), code=apply_blocks(parent_code, blocks).rstrip() + "\n")
    except DiffError as exc:
        return EditOutcome(len(blocks), error=str(exc))


def make_blocks(old: str, new: str, context: int = 2) -> str | None:
    """SEARCH/REPLACE blocks that turn `old` into `new`, each SEARCH found once in `old` (None if none
    could be made unique): how the offline synthesizer answers in diff mode."""
    import difflib

    a, b = _lines(old.rstrip()), _lines(new.rstrip())
    if a == b:
        return None
    for n in (context, 4, 8, 16):
        groups = list(difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(n))
        blocks = [Block(tuple(a[g[0][1] : g[-1][2]]), tuple(b[g[0][3] : g[-1][4]])) for g in groups]
        if all(_trimmed(bl.search) and len(_matches(a, _trimmed(bl.search))[0]) == 1 for bl in blocks):
            try:
                if apply_blocks(old, blocks).rstrip() == new.rstrip():
                    return "\n\n".join(render_block(bl) for bl in blocks)
            except DiffError:
                continue
    return None


def render_block(block: Block) -> str:
    """One block as text."""
    return "\n".join(["<<<<<<< SEARCH", *block.search, "=======", *block.replace, ">>>>>>> REPLACE"])
