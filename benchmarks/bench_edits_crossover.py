"""Diff edits and crossover with the offline synthesizer (issue 28, items 2 and 3).

    python -m benchmarks.bench_edits_crossover [--config campaigns/quickstart.toml] [--budget 24]
        [--seeds 1 2 3] [--repeats 2] [--out /tmp/edits-crossover] [--json out.json]

Four arms, each the same campaign at the same number of candidates (and so of sandbox runs:
tasks x repeats per evaluated candidate), one run per seed ([evolution] seed and [llm] seed):

- full:            the defaults (complete code every time, no crossover)
- diff:            [evolution] edit = "diff"
- crossover:       [evolution.operators] crossover = 0.3 (the others as configured)
- diff+crossover:  both

Per arm: the winner's P (best mean P over the training tasks, mean and standard error over seeds),
candidates that failed, duplicates; for the diff arms the share of diff answers whose blocks applied,
and for every arm the completion tokens per refine (all exchanges of refine candidates, re-asks and
full-code fallbacks included). The synthesizer's tokens are counted as characters / 4.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

from benchmarks._lib.paths import ROOT

ARMS = {
    "full": {},
    "diff": {"edit": "diff"},
    "crossover": {"crossover": 0.3},
    "diff+crossover": {"edit": "diff", "crossover": 0.3},
}


def write_config(base: Path, arm: str, seed: int, repeats: int, out: Path) -> Path:
    """The base campaign with the arm's switches, the seed and fewer repeats."""
    text = base.read_text()
    text = re.sub(r"^seed\s*=.*$", f"seed = {seed}", text, flags=re.M)  # [llm] seed and [evolution] seed
    text = re.sub(r"^repeats\s*=.*$", f"repeats = {repeats}", text, count=1, flags=re.M)
    opts = ARMS[arm]
    if "edit" in opts:
        text = re.sub(r"^\[evolution\]\s*$", f'[evolution]\nedit = "{opts["edit"]}"', text, count=1, flags=re.M)
    if "crossover" in opts:
        text = re.sub(
            r"^\[evolution\.operators\]\s*$",
            f"[evolution.operators]\ncrossover = {opts['crossover']}",
            text,
            count=1,
            flags=re.M,
        )
    path = out / f"{arm.replace('+', '_')}-{seed}.toml"
    path.write_text(text)
    return path


def measure(run_dir: Path) -> dict:
    """Winner's P, failures, duplicates, diff statistics and completion tokens per refine of one run."""
    from generator.archive import Archive

    archive = Archive.open(run_dir)
    cands = archive.candidates()
    exchanges = archive.exchanges()
    refine = {c.id for c in cands if c.operator == "refine"}
    tokens = sum(x.completion_tokens or 0 for x in exchanges if x.ref and x.ref.split(":")[0] in refine)
    asked = [c.edit for c in cands if c.edit]
    with_blocks = [e for e in asked if e.get("blocks")]
    best = max((c.score for c in cands if c.ok), default=None)
    return {
        "best_p": best,
        "candidates": len(cands),
        "failed": sum(1 for c in cands if c.error),
        "duplicates": sum(1 for c in cands if c.duplicate_of),
        "crossovers": sum(1 for c in cands if c.operator == "crossover"),
        "diffs_asked": len(asked),
        "diffs_with_blocks": len(with_blocks),
        "diffs_applied": sum(1 for e in with_blocks if e.get("applied")),
        "refines": len(refine),
        "completion_tokens_per_refine": tokens / len(refine) if refine else None,
    }


def mean_se(values: list[float]) -> tuple[float, float]:
    if not values:
        return float("nan"), float("nan")
    se = statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else float("nan")
    return statistics.fmean(values), se


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(ROOT / "campaigns" / "quickstart.toml"))
    ap.add_argument("--budget", type=int, default=24)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    ap.add_argument("--out", default="/tmp/edits-crossover")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    from generator.campaign.run import run_campaign

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows: dict[str, list[dict]] = {arm: [] for arm in args.arms}
    for seed in args.seeds:
        for arm in args.arms:
            cfg = write_config(Path(args.config), arm, seed, args.repeats, out)
            run_dir = out / f"{arm.replace('+', '_')}-{seed}"
            start = time.monotonic()
            run_campaign(cfg, run_dir=str(run_dir), budget=args.budget, progress=False)
            row = {"seed": seed, "wall_s": round(time.monotonic() - start, 1), **measure(run_dir)}
            rows[arm].append(row)
            print(f"{arm:15} seed {seed}: {json.dumps(row)}", file=sys.stderr)
    print(f"\n{args.budget} candidates per run, seeds {args.seeds}, repeats {args.repeats}, {Path(args.config).name}")
    print(
        f"{'arm':15} {'winner P':>16} {'failed':>7} {'dupes':>6} {'x-overs':>7} {'diffs applied':>14} "
        f"{'tokens/refine':>13}"
    )
    for arm, runs in rows.items():
        p, se = mean_se([r["best_p"] for r in runs if r["best_p"] is not None])
        blocks = sum(r["diffs_with_blocks"] for r in runs)
        applied = f"{sum(r['diffs_applied'] for r in runs)}/{blocks}" if blocks else "-"
        tok = [r["completion_tokens_per_refine"] for r in runs if r["completion_tokens_per_refine"] is not None]
        print(
            f"{arm:15} {p:>9.3f} ± {se:<5.3f} {statistics.fmean(r['failed'] for r in runs):>7.1f} "
            f"{statistics.fmean(r['duplicates'] for r in runs):>6.1f} {statistics.fmean(r['crossovers'] for r in runs):>7.1f} "
            f"{applied:>14} {statistics.fmean(tok) if tok else float('nan'):>13.0f}"
        )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "budget": args.budget,
                    "seeds": args.seeds,
                    "repeats": args.repeats,
                    "config": Path(args.config).name,
                    "runs": rows,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
