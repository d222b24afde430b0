"""What the live page shows of one run, as JSON-ready values: read only, safe on a run being written.

`overview(run_dir)` is the whole page but the code (leaderboard, best P over candidates and over
time, the lineage graph with the best path, failures by kind, calls, tokens and cost against the
caps, niches and bandit); `candidate(run_dir, cid)` is one candidate's code, scores and diffs to its
parents. `version(run_dir)` changes whenever a file the page reads changes, so the page asks for the
overview again only then. Reading goes through `Lineage`/`Archive`, which skip a torn last line; a
code file not written yet reads as none. Nothing here writes: not even the diversity cache that
`status` and the report keep in the run.
"""

from __future__ import annotations

import os
from pathlib import Path

from generator.archive import CANDIDATES, CONFIG, EXCHANGES, GENERATIONS, RACES, STATUS
from generator.config.stored import RunHeader
from generator.review.lineage import Lineage
from generator.review.report import candidate_view, lineage_layout  # what the report shows, shared

TOP = 15  # rows of the leaderboard
WATCHED = (CANDIDATES, RACES, STATUS, EXCHANGES, GENERATIONS, CONFIG)


def version(run_dir) -> str:
    """A signature of the files the page reads (size and modification time): equal means nothing new."""
    parts = []
    for name in WATCHED:
        try:
            st = os.stat(Path(run_dir) / name)
            parts.append(f"{st.st_size}.{st.st_mtime_ns}")
        except OSError:
            parts.append("-")
    return ":".join(parts)


def overview(run_dir) -> dict:
    """Everything the page shows of a run but the candidates' code."""
    lineage = Lineage.load(run_dir)
    header = lineage.archive.stored.header
    cands = list(lineage.candidates.values())
    ranked = sorted((c for c in cands if c.ok and not c.duplicate_of), key=lambda c: -c.score)
    path = lineage.best_path()
    return {
        "run": _run(lineage, header, len(cands)),
        "leaderboard": [
            {
                "id": c.id,
                "score": c.score,
                "se": c.se,
                "runs": c.runs,
                "operator": c.operator,
                "generation": c.generation,
                "description": (c.description or "").strip().split("\n")[0][:160],
            }
            for c in ranked[:TOP]
        ],
        "convergence": [
            {"index": p.index, "id": p.id, "score": p.score, "best": p.best, "t": c.created}
            for p, c in zip(lineage.convergence(), cands)
        ],
        "nodes": [_node(lineage, c, path) for c in cands],
        "graph": lineage_layout(lineage),
        "failures": _failures(lineage),
        "usage": lineage.usage(),
        "caps": dict(header.llm.caps),
        "search": _search(lineage),
    }


def _run(lineage: Lineage, header: RunHeader, made: int) -> dict:
    from generator.run_lock import holder

    status = lineage.status()
    held = holder(lineage.run_dir)  # read only: asks the kernel, takes nothing
    state = status.get("state") or "starting"
    if held is None and state in ("running", "waiting", "starting"):
        state = "stopped (no process holds the run)"
    return {
        "dir": str(lineage.run_dir),
        "name": header.name or "",
        "model": header.llm.model or header.model,
        "state": state,
        "reason": status.get("reason") or "",
        "held_by": held,
        "candidates": made,
        "budget": status.get("budget") or header.evolution.budget,
        "best": lineage.best(),
        "best_path": lineage.best_path(),
        "updated": status.get("updated"),
    }


def _node(lineage: Lineage, c, path: list[str]) -> dict:
    return {
        "id": c.id,
        "generation": c.generation,
        "operator": c.operator,
        "parents": lineage.parents(c.id),
        "score": c.score,
        "se": c.se,
        "error": (c.error or {}).get("kind") if c.error else None,
        "duplicate_of": c.duplicate_of,
        "description": (c.description or "").strip().split("\n")[0][:160],
        "on_path": c.id in path,
    }


def _failures(lineage: Lineage) -> dict:
    """Failed candidates by error kind: in total and per generation."""
    per_generation = {str(g): dict(k) for g, k in lineage.error_kinds().items()}
    total: dict[str, int] = {}
    for kinds in per_generation.values():
        for kind, n in kinds.items():
            total[kind] = total.get(kind, 0) + n
    return {"total": dict(sorted(total.items(), key=lambda kv: -kv[1])), "per_generation": per_generation}


def _search(lineage: Lineage) -> dict:
    """The niches and the bandit after the last generation, as `status` says them, and their raw state."""
    from generator.campaign.printing import search_lines

    generations = lineage.archive.generations()
    last = generations[-1] if generations else {}
    return {"lines": search_lines(generations), "niches": last.get("niches"), "bandit": last.get("bandit")}


def candidate(run_dir, cid: str) -> dict | None:
    """One candidate's code, scores, error and diff to each parent (None when the run has no such id)."""
    lineage = Lineage.load(run_dir)
    c = lineage.candidates.get(cid)
    if c is None:
        return None
    ex = lineage.exchange(cid)
    return {
        **candidate_view(lineage, cid),
        "parents": lineage.parents(cid),
        "exchange": None
        if ex is None
        else {
            "model": ex.model,
            "prompt_tokens": ex.prompt_tokens,
            "completion_tokens": ex.completion_tokens,
            "cost_usd": ex.cost_usd,
        },
    }
