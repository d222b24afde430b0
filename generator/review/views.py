"""Terminal views of a run's lineage: the ancestry tree and one candidate in full.

Text written by an LLM goes to the terminal with its control characters removed, so a reply
cannot move the cursor, recolour the screen or hide lines with escape sequences.
"""

from __future__ import annotations

import re

from generator.review.lineage import Lineage

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_BOLD, _GREEN, _RED, _CYAN, _DIM, _RESET = "\033[1m", "\033[32m", "\033[31m", "\033[36m", "\033[2m", "\033[0m"


def safe_text(text: str | None) -> str:
    """Text with terminal control characters (escape sequences included) removed; tabs and newlines kept."""
    return _CONTROL.sub("", text or "")


def _one_line(text: str | None, width: int) -> str:
    line = safe_text((text or "").strip().splitlines()[0] if (text or "").strip() else "")
    return line if len(line) <= width else line[: width - 1] + "…"


def score_label(lineage: Lineage, cid: str) -> str:
    """Score as shown in views: 0.412, failed:runtime, dup:c0003, pending."""
    c = lineage.get(cid)
    if c.duplicate_of:
        return f"dup:{c.duplicate_of}"
    if c.error:
        return f"failed:{c.error.get('kind') or '?'}"
    return f"{c.score:.3f}" if c.score is not None else "pending"


def render_tree(lineage: Lineage, cid: str | None = None, color: bool = False, columns: int = 120) -> str:
    """The family tree of the whole run, or the ancestry of one candidate; the best path marked."""
    if not lineage.candidates:
        return f"{lineage.run_dir}: no candidates yet"
    shown = set(lineage.candidates) if cid is None else {*lineage.ancestors(cid), lineage.get(cid).id}
    best = lineage.best()
    on_path = set(lineage.best_path())
    placed: set[str] = set()
    lines = [_legend(lineage, best, cid)]

    def home(node: str) -> str | None:
        # a candidate with several parents hangs under its first shown parent
        return next((p for p in lineage.parents(node) if p in shown), None)

    def walk(node: str, prefix: str, last: bool, top: bool) -> None:
        placed.add(node)
        c = lineage.get(node)
        branch = "" if top else ("└── " if last else "├── ")
        extra = [p for p in lineage.parents(node) if p in shown and p != home(node)]
        note = f" (also from {', '.join(extra)})" if extra else ""
        mark = "*" if node in on_path else " "
        # fixed columns first so that scores line up whatever the depth of the node
        text = f"{score_label(lineage, node):>14}  {c.operator:<8}  {prefix}{branch}{node}  "
        text += _one_line(c.description or (c.error or {}).get("message"), max(24, columns - len(text) - 2)) + note
        if node == cid:
            text += "  <-"
        if color:
            text = _colour(text, node in on_path, node == best, c.error is not None)
        lines.append(f"{mark} {text}")
        kids = [k for k in lineage.children(node) if k in shown and home(k) == node and k not in placed]
        for i, kid in enumerate(kids):
            walk(kid, prefix + ("" if top else ("    " if last else "│   ")), i == len(kids) - 1, False)

    for root in [n for n in lineage.candidates if n in shown and home(n) is None]:
        walk(root, "", True, True)
    return "\n".join(lines)


def _legend(lineage: Lineage, best: str | None, cid: str | None) -> str:
    state = lineage.status().get("state", "no status yet")
    head = f"{lineage.run_dir}: {len(lineage.candidates)} candidates, {state}"
    if cid:
        head += f"; ancestry of {cid}"
    if best:
        head += f"; * = path to the best, {best} ({lineage.get(best).score:.3f})"
    return head


def _colour(text: str, on_path: bool, is_best: bool, failed: bool) -> str:
    if is_best:
        return f"{_BOLD}{_GREEN}{text}{_RESET}"
    if on_path:
        return f"{_BOLD}{text}{_RESET}"
    return f"{_DIM}{text}{_RESET}" if failed else text


def render_show(lineage: Lineage, cid: str, diff: bool = False, color: bool = False) -> str:
    """One candidate in full: header, fitness per task, error, code, prompt and reply, diffs."""
    c = lineage.get(cid)
    out = [
        f"{c.id}  generation {c.generation}  operator {c.operator}  parents {', '.join(c.parent_ids) or '-'}",
        f"description: {safe_text(c.description)}",
        _score_line(lineage, cid),
    ]
    if c.timings:
        out.append(
            "timings: "
            + ", ".join(f"{k} {v:.2f}s" if isinstance(v, (int, float)) else f"{k} {v}" for k, v in c.timings.items())
        )
    if c.per_task:
        out.append(_section("fitness per task", color))
        per = (c.fitness or {}).get("per_task") or {}
        for name, score in c.per_task.items():
            extra = per.get(name) if isinstance(per.get(name), dict) else {}
            std = f" ± {extra['std']:.3f}" if isinstance(extra.get("std"), (int, float)) else ""
            if isinstance(extra.get("se"), (int, float)):  # the standard error of P, over its runs
                std += f" (SE {extra['se']:.3f}, {len(extra.get('per_repeat') or ())} runs)"
            fe = f"  ({extra['fevals']:.0f} evaluations)" if isinstance(extra.get("fevals"), (int, float)) else ""
            out.append(f"  {name:<40} {score:.3f}{std}{fe}" if score is not None else f"  {name:<40} -")
    if c.error:
        out.append(_section("error", color))
        for key in ("kind", "message", "line"):
            if c.error.get(key) is not None:
                out.append(f"  {key}: {safe_text(str(c.error[key]))}")
        if c.error.get("traceback"):
            out.append(safe_text(c.error["traceback"]).rstrip())
    out += [
        _section(f"code ({lineage.archive.code_file(c) or 'none'})", color),
        safe_text(lineage.code(cid) or "(no code)").rstrip(),
    ]
    if diff and not c.parent_ids:  # asked for, so say why there is none
        out += [_section("diff", color), f"(no parent: a `{c.operator}` candidate is written from scratch)"]
    if diff:
        for p in c.parent_ids:
            out.append(_section(f"diff {p} -> {cid}", color))
            text = lineage.diff(cid, p) if p in lineage.candidates else f"(parent {p} not in this run)"
            out.append(_colour_diff(safe_text(text).rstrip() or "(identical code)", color))
    x = lineage.exchange(cid)
    if x:
        out += [
            _section(f"prompt ({x.id}, {x.model}, {x.prompt_tokens} tokens)", color),
            safe_text(x.prompt).rstrip(),
            _section(f"reply ({x.completion_tokens} tokens, ${x.cost_usd:.4f}, {x.latency_s or 0:.1f}s)", color),
            safe_text(x.reply or f"(no reply: {x.error})").rstrip(),
        ]
    else:
        out.append(_section("prompt", color) + "\n(no recorded exchange)")
    return "\n".join(out)


def _score_line(lineage: Lineage, cid: str) -> str:
    """The score as a number; a near-copy carries its original's score, and says so (it was not run)."""
    c = lineage.get(cid)
    label = f"{c.score:.3f}" if c.duplicate_of and c.score is not None else score_label(lineage, cid)
    line = f"score: {label}" + (f" ± {c.se:.3f} ({c.runs} runs)" if c.se is not None else "")
    if c.duplicate_of:
        line += f"; copied from {c.duplicate_of}: the same code, recorded but not run again"
    return line + _delta_note(lineage, cid)


def _delta_note(lineage: Lineage, cid: str) -> str:
    d = lineage.delta(cid)
    return f"  ({d:+.3f} against the best parent)" if d is not None else ""


def _section(title: str, color: bool) -> str:
    return f"\n{_CYAN}── {title} ──{_RESET}" if color else f"\n── {title} ──"


def _colour_diff(text: str, color: bool) -> str:
    if not color:
        return text
    lines = []
    for line in text.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            line = f"{_GREEN}{line}{_RESET}"
        elif line.startswith("-") and not line.startswith("---"):
            line = f"{_RED}{line}{_RESET}"
        lines.append(line)
    return "\n".join(lines)
