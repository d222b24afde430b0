"""How much evaluation time near-copy rejection saves (issue 18, part 3b).

    python -m benchmarks.bench_near_copies [--config campaigns/quickstart.toml] [--budget 48]
        [--repeats 3] [--workers 2] [--out /tmp/near-copies] [--skip-run] [--replies RUN_DIR ...]
        [--json out.json]

1. Runs the synthesizer campaign twice in fresh processes, one candidate at a time
   (`[llm] concurrency = 1`, so that evaluation times are not inflated by sharing the workers):
   "off" counts only layout-identical code as a copy and never asks again (the loop before issue
   18: `[novelty] copies = "layout"`, `max_similarity = 1.0`); "on" uses the defaults (copies up
   to names, docstrings, comments and constants are not evaluated; near-copies are asked again once).
2. On the "off" run (and on every run directory given with --replies, e.g. one written by a real
   LLM), replays the archive in order and finds the candidates that near-copy rejection would not
   have evaluated (the same normalised code as an earlier candidate): the share of the run's
   evaluation time (sum of `eval_s`) they took is the share it saves. It also counts the replies
   that would have been asked again (similarity above the threshold, not a copy).
3. Compares the two runs: evaluation time, candidates evaluated, duplicates, re-asks, best score.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

from benchmarks._lib.paths import ROOT

MODES = {"off": '[novelty]\ncopies = "layout"\nmax_similarity = 1.0\n', "on": ""}


def write_config(base: Path, mode: str, out: Path, repeats: int, workers: int) -> Path:
    """The campaign file with one request at a time, the given repeats/workers, and the mode's [novelty]."""
    text = base.read_text()
    text = re.sub(r"^\[llm\]\s*$", "[llm]\nconcurrency = 1", text, count=1, flags=re.M)
    text = re.sub(r"^repeats\s*=.*$", f"repeats = {repeats}", text, count=1, flags=re.M)
    text = re.sub(r"^workers\s*=.*$", f"workers = {workers}", text, count=1, flags=re.M)
    path = out / f"{mode}.toml"
    path.write_text(text + "\n" + MODES[mode])
    return path


def run(config: Path, run_dir: Path, budget: int) -> float:
    start = time.monotonic()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "generator.cli",
            "run",
            str(config),
            "--run-dir",
            str(run_dir),
            "--budget",
            str(budget),
            "--no-progress",
        ],
        cwd=ROOT,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.monotonic() - start


def counterfactual(run_dir: Path, threshold: float) -> dict:
    """What rejection by normalised code would have done to a run made without it."""
    from generator.archive import Archive
    from generator.campaign.novelty import Shape, ShapeIndex

    archive = Archive.open(run_dir)
    index = ShapeIndex()
    total = saved = 0.0
    copies, near, evaluated, sims = [], [], 0, []
    for c in archive.candidates():
        eval_s = float(c.timings.get("eval_s") or 0.0)
        if c.duplicate_of or not c.code_path:
            continue  # not evaluated in that run either
        evaluated += 1
        total += eval_s
        shape = Shape.of(archive.code(c))
        found = index.nearest(shape)
        if found.id is not None:
            sims.append(found.similarity)
        if found.exact:
            copies.append(c.id)
            saved += eval_s
            continue
        if found.id is not None and found.similarity > threshold:
            near.append(c.id)
        index.add(c.id, shape)
    return {
        "run_dir": str(run_dir),
        "evaluated": evaluated,
        "eval_s": round(total, 1),
        "copies_not_evaluated": len(copies),
        "copy_ids": copies,
        "eval_s_saved": round(saved, 1),
        "share_saved": round(saved / total, 3) if total else 0.0,
        "would_reask": len(near),
        "similarity_quartiles": _quartiles(sims),
    }


def _quartiles(values: list[float]) -> list[float]:
    if not values:
        return []
    import numpy as np

    return [round(float(q), 3) for q in np.quantile(values, [0.25, 0.5, 0.75, 0.9])]


def run_summary(run_dir: Path, wall_s: float | None) -> dict:
    from generator.archive import Archive

    cands = Archive.open(run_dir).candidates()
    evaluated = [c for c in cands if "eval_s" in c.timings and not c.duplicate_of]
    best = Archive.open(run_dir).best(1)
    return {
        "wall_s": round(wall_s, 1) if wall_s else None,
        "candidates": len(cands),
        "evaluated": len(evaluated),
        "eval_s": round(sum(c.timings["eval_s"] for c in evaluated), 1),
        "duplicates": sum(1 for c in cands if c.duplicate_of),
        "reasked": sum(1 for c in cands if (c.novelty or {}).get("reasked")),
        "best": {"id": best[0].id, "score": round(best[0].score, 3)} if best else None,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default=str(ROOT / "campaigns" / "quickstart.toml"))
    p.add_argument("--budget", type=int, default=48)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--out", default="/tmp/tunesmith-near-copies")
    p.add_argument("--skip-run", action="store_true", help="analyse the run directories already in --out")
    p.add_argument("--replies", nargs="*", default=[], help="more run directories to analyse (e.g. a real LLM's)")
    p.add_argument("--json", help="write the results here")
    args = p.parse_args()
    from generator.config import NoveltyConfig

    threshold = NoveltyConfig().max_similarity
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = {
        "date": date.today().isoformat(),
        "machine": f"{platform.machine()}, {_cores()} cores (shared)",
        "budget": args.budget,
        "repeats": args.repeats,
        "workers": args.workers,
        "threshold": threshold,
        "runs": {},
    }
    for mode in MODES:
        run_dir = out / mode
        wall = None
        if not args.skip_run:
            if run_dir.exists():
                raise SystemExit(f"{run_dir} exists; remove it or pass --skip-run")
            wall = run(write_config(Path(args.config), mode, out, args.repeats, args.workers), run_dir, args.budget)
        results["runs"][mode] = run_summary(run_dir, wall)
        print(f"{mode}: {json.dumps(results['runs'][mode])}")
    results["counterfactual"] = [counterfactual(out / "off", threshold)]
    results["counterfactual"] += [counterfactual(Path(r), threshold) for r in args.replies]
    for cf in results["counterfactual"]:
        print(
            f"{cf['run_dir']}: {cf['copies_not_evaluated']} of {cf['evaluated']} evaluated candidates were copies "
            f"of earlier code up to names and constants: {cf['eval_s_saved']} s of {cf['eval_s']} s evaluation "
            f"({100 * cf['share_saved']:.1f}%) saved; {cf['would_reask']} more would be asked again "
            f"(similarity > {threshold}); nearest-similarity quartiles/p90 {cf['similarity_quartiles']}"
        )
    off, on = results["runs"]["off"], results["runs"]["on"]
    print(
        f"evaluation time, off -> on: {off['eval_s']} s -> {on['eval_s']} s over {off['candidates']} candidates "
        f"({off['evaluated']} -> {on['evaluated']} evaluated, {on['duplicates']} duplicates, {on['reasked']} re-asked); "
        f"best {off['best']} -> {on['best']}"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


def _cores() -> int:
    return len(os.sched_getaffinity(0))


if __name__ == "__main__":
    raise SystemExit(main())
