"""Acceptance check of duplicates (issue 22, item 3): is every copy's inherited score one it would earn?

Every candidate a campaign recorded as a duplicate (`duplicate_of`) is evaluated again, in the
sandbox, on the campaign's training tasks with its seed, repeats and aggregate, and its P compared
with the score of the candidate it copied. Exits 1 if any differs (by more than `--tol`).

    python -m benchmarks.check_duplicates results/quickstart [--workers 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def check(run_dir: str, workers: int = 2, tol: float = 1e-12) -> dict:
    """Re-evaluate each duplicate of the run; returns counts and the mismatches."""
    from generator.archive import Archive
    from generator.config import parse_config, with_legacy_values
    from generator.evaluation.evaluate import evaluate_source
    from generator.tasks.entries import load_task_set

    archive = Archive.open(run_dir)
    cfg = parse_config(with_legacy_values(archive.config))
    ev = cfg.evaluation
    seed = ev.seed if ev.seed is not None else cfg.evolution.seed
    tasks = load_task_set(cfg.tasks.train, cfg.tasks)
    cands = archive.candidates()
    dupes = [c for c in cands if c.duplicate_of]
    rows, start = [], time.monotonic()
    for c in dupes:
        original = archive.candidate(c.duplicate_of)
        fit = evaluate_source(
            archive.code(c), tasks, repeats=ev.repeats, seed=seed, timeout_s=ev.timeout, workers=workers
        )
        score = fit.score
        how = getattr(ev, "aggregate", "mean")
        if fit.ok and how != "mean":
            from generator.scoring.degenerate import aggregate

            score = aggregate([t.score for t in fit.per_task.values()], how)
        same = (score is None and original.score is None) or (
            score is not None and original.score is not None and abs(score - original.score) <= tol
        )
        rows.append({"id": c.id, "copy_of": original.id, "inherited": original.score, "earned": score, "same": same})
    mismatched = [r for r in rows if not r["same"]]
    distinct = len({c.code_hash for c in cands if c.code_path and not c.duplicate_of})
    return {
        "run": str(run_dir),
        "candidates": len(cands),
        "duplicates": len(dupes),
        "mismatched": len(mismatched),
        "not_duplicates": distinct,
        "seconds": round(time.monotonic() - start, 1),
        "rows": rows,
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--tol", type=float, default=1e-12)
    p.add_argument("--json", dest="json_out")
    args = p.parse_args(argv)
    out = check(args.run_dir, args.workers, args.tol)
    for r in out["rows"]:
        if not r["same"]:
            print(f"{r['id']} (copy of {r['copy_of']}): inherited {r['inherited']}, earns {r['earned']}")
    print(
        f"{out['duplicates']} duplicates of {out['candidates']} candidates, {out['mismatched']} scored "
        f"otherwise when evaluated ({out['seconds']} s)"
    )
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(out, f, indent=1)
    return 1 if out["mismatched"] else 0


if __name__ == "__main__":
    sys.exit(main())
