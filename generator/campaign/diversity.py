"""The archive's code diversity per generation, from what each candidate added to it, kept in the run.

A candidate's part (is it a new algorithm, how far from the nearest earlier one, the sum of its
distances to all earlier ones) depends only on the candidates before it, and the archive only
grows: so it is computed once, when `status` or the report first needs it, and kept in
RUN_DIR/diversity.json. Without that, every `status` parsed every candidate and compared each with
all before it (7 s of CPU at 100 candidates, growing with the square). The file is a cache: written
whole to a temporary file and renamed (a crash leaves the old file or the new one), checked against
the archive's order of candidates, and rebuilt when it is missing (older runs), damaged or stale.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from generator.campaign.novelty import Shape, ShapeIndex, similarity

FILE = "diversity.json"
VERSION = 1


@dataclass(frozen=True)
class GenerationDiversity:
    """One generation's view of the archive's diversity."""

    generation: int
    candidates: int  # made in this generation
    duplicates: int  # of them, copies not evaluated
    reasked: int  # of them, re-asked once because they nearly copied an archived candidate
    novelty: float | None  # mean distance (1 - similarity) of its new code to the nearest earlier code
    distinct: int  # distinct algorithms (fingerprints) in the archive after this generation
    diversity: float | None  # mean pairwise distance between the archive's distinct algorithms


def diversity_by_generation(candidates, code_of) -> list[GenerationDiversity]:
    """Per generation: duplicates, re-asks, novelty of the new code, the archive's diversity after it.

    `candidates` in archive order; `code_of(candidate)` returns its source (or None). Computed from
    scratch; `run_diversity` keeps each candidate's part in the run."""
    return by_generation(candidates, parts(candidates, code_of))


def parts(candidates, code_of, known: dict | None = None) -> dict[str, dict]:
    """Per candidate id (archive order): {"new": a distinct algorithm, "distance": to the nearest earlier
    one (None for the first), "pair_sum" and "pairs": its distances to every earlier one}. `known`: parts
    already computed for a prefix of `candidates`; only the rest is computed (earlier code is parsed again
    only then, to compare with)."""
    known = dict(known or {})
    if all(c.id in known for c in candidates):
        return known
    index = ShapeIndex()
    for c in candidates:
        if c.id in known and not known[c.id]["new"]:
            continue
        shape = None if c.duplicate_of else Shape.of(code_of(c))
        if c.id not in known:
            known[c.id] = _part(shape, index)
        if known[c.id]["new"] and shape is not None:
            index.add(c.id, shape)
    return known


def _part(shape, index: ShapeIndex) -> dict:
    if shape is None or shape.fingerprint in index.by_fingerprint:
        return {"new": False}
    sims = [similarity(shape, o) for o in index.shapes.values()]
    return {
        "new": True,
        "distance": 1.0 - max(sims) if sims else None,
        "pair_sum": sum(1.0 - s for s in sims),
        "pairs": len(sims),
    }


def by_generation(candidates, known: dict) -> list[GenerationDiversity]:
    """Per generation: made, duplicates, re-asks, novelty of the new code, distinct algorithms and the
    archive's diversity (mean pairwise distance) after it."""
    gens: dict[int, list] = {}
    for c in candidates:
        gens.setdefault(c.generation, []).append(c)
    pair_sum, pairs, distinct, out = 0.0, 0, 0, []
    for g in sorted(gens):
        distances = []
        for c in gens[g]:
            part = known[c.id]
            if not part["new"]:
                continue
            if part["distance"] is not None:
                distances.append(part["distance"])
            pair_sum, pairs, distinct = pair_sum + part["pair_sum"], pairs + part["pairs"], distinct + 1
        out.append(
            GenerationDiversity(
                g,
                len(gens[g]),
                sum(1 for c in gens[g] if c.duplicate_of),
                sum(1 for c in gens[g] if (getattr(c, "novelty", None) or {}).get("reasked")),
                round(sum(distances) / len(distances), 4) if distances else None,
                distinct,
                round(pair_sum / pairs, 4) if pairs else None,
            )
        )
    return out


def run_diversity(run_dir, candidates, code_of) -> list[GenerationDiversity]:
    """`by_generation` of a run, with the candidates' parts read from (and new ones added to) its file."""
    path = Path(run_dir) / FILE
    ids = [c.id for c in candidates]
    known = _read(path, ids)
    found = parts(candidates, code_of, known)
    if len(found) != len(known):
        _write(path, ids, found)
    return by_generation(candidates, found)


def _read(path: Path, ids: list[str]) -> dict:
    """The kept parts, if they were computed for a prefix of today's candidates; else nothing."""
    try:
        doc = json.loads(path.read_text())
        order, kept = doc["order"], doc["parts"]
        if doc.get("version") != VERSION or order != ids[: len(order)] or set(kept) != set(order):
            return {}
        return {cid: kept[cid] for cid in order}
    except (OSError, ValueError, KeyError, TypeError):
        return {}  # missing (a run made before this file), damaged or stale: computed again


def _write(path: Path, ids: list[str], found: dict) -> None:
    order = [cid for cid in ids if cid in found]
    tmp = path.with_name(f".{FILE}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps({"version": VERSION, "order": order, "parts": {c: found[c] for c in order}}))
        os.replace(tmp, path)
    except OSError:  # a run directory we may not write (someone else's): computed again next time
        tmp.unlink(missing_ok=True)


def format_diversity(rows: list[GenerationDiversity]) -> list[str]:
    """Terminal table of `diversity_by_generation`."""
    if not rows:
        return []
    lines = [
        "diversity per generation (distance = 1 - similarity of normalised code; 0 = copies, 1 = unrelated):",
        f"  {'gen':>3} {'made':>4} {'dup':>4} {'re-asked':>8} {'novelty':>8} {'distinct':>8} {'diversity':>9}",
    ]
    for r in rows:
        nov = f"{r.novelty:.3f}" if r.novelty is not None else "-"
        div = f"{r.diversity:.3f}" if r.diversity is not None else "-"
        lines.append(
            f"  {r.generation:>3} {r.candidates:>4} {r.duplicates:>4} {r.reasked:>8} {nov:>8} {r.distinct:>8} {div:>9}"
        )
    return lines
