"""Reading a generation prompt the way an LLM would: operator, statistics, parents, error feedback.

The prompt follows the heading contract of the project (`## Task`, `## Search-space statistics`,
`## Parent N (id: ..., score: ...)`, `## Error feedback`, `## Existing algorithms`,
`## Near-copy of ID`, `## Instruction (operator: ...)`). Anything missing is simply absent from the Request; the
synthesizer then falls back to neutral choices.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from generator.llm.synth.compose import Composition, read_composition

OPERATORS = ("new", "refine", "simplify", "fix", "crossover")
_NUMBER = re.compile(r"^[-+]?(\d[\d,]*\.?\d*|\.\d+)(e[-+]?\d+)?%?$", re.I)
_PARENT = re.compile(r"^Parent\s+(\d+)\s*\(id:\s*([^,)]+)(?:,\s*score:\s*([^)]+))?\)", re.I)


@dataclass
class Parent:
    """One parent shown in the prompt."""

    id: str
    score: float | None
    code: str
    composition: Composition | None  # None: code the synthesizer did not write
    per_task: dict[str, float | None] = field(default_factory=dict)


@dataclass
class ErrorFeedback:
    kind: str = ""
    message: str = ""
    line: str = ""


@dataclass
class Request:
    """What a prompt asks for, as the synthesizer understands it."""

    operator: str = "new"
    stats: dict[str, float] = field(default_factory=dict)  # averaged over tasks
    task_stats: dict[str, dict[str, float]] = field(default_factory=dict)  # per task name
    parents: list[Parent] = field(default_factory=list)
    error: ErrorFeedback | None = None
    existing: list[str] = field(default_factory=list)  # one line per existing algorithm
    near_copy: Composition | None = None  # `## Near-copy of ID`: the design the last answer nearly copied
    answer: str = "full"  # "diff": the instruction asks for SEARCH/REPLACE blocks on Parent 1's code
    text: str = ""


def to_number(text: str) -> float | None:
    """A plain number ('4,362', '0.57', '12%', '1e-3'), or None for anything else."""
    text = text.strip().rstrip(".")
    if not _NUMBER.match(text):
        return None
    value = float(text.replace(",", "").rstrip("%"))
    return value / 100.0 if text.endswith("%") else value


def sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) of each `## ` section; headings inside fenced code do not count."""
    out, heading, body, fenced = [], "", [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            out.append((heading, "\n".join(body)))
            heading, body = line[3:].strip(), []
        else:
            body.append(line)
    out.append((heading, "\n".join(body)))
    return [(h, b) for h, b in out if h or b.strip()]


def _bullets(body: str) -> list[tuple[str, str]]:
    return [(m.group(1).strip(), m.group(2).strip()) for m in re.finditer(r"^\s*-\s*([^:\n]+):\s*(.*)$", body, re.M)]


def _statistics(body: str) -> dict[str, dict[str, float]]:
    """Per task (or '' when the section is not split by task) -> numeric statistics."""
    per_task: dict[str, dict[str, float]] = {}
    current = ""
    for line in body.splitlines():
        if line.startswith("### "):
            current = line[4:].strip()
            continue
        m = re.match(r"^\s*-\s*([\w ]+):\s*(.+)$", line)
        if m:
            value = to_number(m.group(2))
            if value is not None:
                per_task.setdefault(current, {})[m.group(1).strip().replace(" ", "_")] = value
    return per_task


def _average(per_task: dict[str, dict[str, float]]) -> dict[str, float]:
    keys = {k for stats in per_task.values() for k in stats}
    return {
        k: sum(s[k] for s in per_task.values() if k in s) / sum(1 for s in per_task.values() if k in s)
        for k in sorted(keys)
    }


def _task_budgets(body: str) -> dict[str, float]:
    """Task name -> 'budget: about N evaluations' from the task section."""
    budgets, current = {}, ""
    for line in body.splitlines():
        m = re.match(r"^###\s*(?:Tuning task \d+:\s*)?(.+?)\s*$", line)
        if m:
            current = m.group(1)
            continue
        m = re.search(r"budget:\s*about\s*([\d,]+)\s*evaluations", line)
        if m:
            budgets[current] = float(m.group(1).replace(",", ""))
    return budgets


def _code_block(body: str) -> str:
    blocks = re.findall(r"```(?:python|py|python3)?[ \t]*\n(.*?)```", body, re.S)
    return max(blocks, key=len) if blocks else ""


def _parent(heading: str, body: str) -> Parent | None:
    m = _PARENT.match(heading)
    if not m:
        return None
    score = to_number(m.group(3) or "")
    head = body.split("```", 1)[0]
    per_task = {k: to_number(v) for k, v in _bullets(head) if "/" in k or to_number(v) is not None}
    code = _code_block(body)
    return Parent(m.group(2).strip(), score, code, read_composition(code), per_task)


def _operator(heading: str, body: str) -> str:
    m = re.search(r"operator:\s*(\w+)", heading, re.I)
    if m and m.group(1).lower() in OPERATORS:
        return m.group(1).lower()
    words = (heading + " " + body).lower()
    for op, cue in (("fix", "fix"), ("simplify", "simplif"), ("refine", "improve"), ("refine", "refine")):
        if cue in words:
            return op
    return "new"


def parse_prompt(text: str) -> Request:
    """The Request a prompt makes (operator, statistics, parents, error, existing algorithms)."""
    req = Request(text=text)
    budget_lines: dict[str, float] = {}
    for heading, body in sections(text):
        low = heading.lower()
        if low.startswith("search-space statistics") or low.startswith("search space statistics"):
            req.task_stats.update(_statistics(body))
        elif low.startswith("parent"):
            parent = _parent(heading, body)
            if parent is not None:
                req.parents.append(parent)
        elif low.startswith("error feedback"):
            fields = {k.lower(): v for k, v in _bullets(body.split("```", 1)[0])}
            req.error = ErrorFeedback(fields.get("kind", ""), fields.get("message", ""), fields.get("line", ""))
        elif low.startswith("existing algorithms"):
            req.existing = [line.strip()[1:].strip() for line in body.splitlines() if line.strip().startswith("-")]
        elif low.startswith("near-copy"):  # asked again: the previous answer copied this one
            m = re.search(r"near-copy of\s+(\S+)", low)
            shown = read_composition(_code_block(body))
            named = next((p.composition for p in req.parents if m and p.id.lower() == m.group(1)), None)
            req.near_copy = shown or named
        elif low.startswith("instruction"):
            req.operator = _operator(heading, body)
            req.answer = "diff" if re.search(r"answer:\s*diff", heading, re.I) else "full"
        elif low.startswith("task"):
            budget_lines.update(_task_budgets(body))
    for name, fevals in budget_lines.items():  # the task section's budget, if statistics lack it
        req.task_stats.setdefault(name, {}).setdefault("budget_fevals", fevals)
    req.stats = _average(req.task_stats)
    return req
