"""Racing against fixed repeats with the offline synthesizer (issue 29, item 1).

    python -m benchmarks.bench_racing [--config campaigns/quickstart.toml] [--budget 24] [--seeds 1 2 3]
        [--repeats 6] [--min-repeats 2] [--indifference 0.1] [--check-repeats 20] [--out /tmp/racing] [--json benchmarks/results/racing.json]

Arms, one campaign per seed ([evolution] seed and [llm] seed), the quickstart's tasks:

- fixed:          every candidate gets `--repeats` runs per task (racing = false)
- racing:         racing = true, min_repeats = `--min-repeats`, capped at `--repeats`; the same candidates
- racing-2x:      racing with twice the candidates: about the sandbox runs of `fixed` or fewer

Per run: sandbox runs (task x repeat; a candidate that failed at run time is counted at its first
stage, one that failed the static checks or was a duplicate at none), and the winner (the best mean P
over the training tasks, as `tunesmith status` ranks) measured again with `--check-repeats` fresh
seeds on the training tasks and on the test tasks (other kernels, never seen in the campaign).
Printed and written as mean and standard error over seeds.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import statistics
import sys
import time
from pathlib import Path

from benchmarks._lib.paths import ROOT

CHECK_SEED = 10_000  # seeds no campaign used: the winner's quality, not its luck in the campaign
STATIC = ("llm", "no_code", "syntax", "interface")


def write_config(base: Path, arm: str, seed: int, args, out: Path) -> Path:
    """The base campaign with the arm's evaluation settings and the seed."""
    text = base.read_text()
    text = re.sub(r"^seed\s*=.*$", f"seed = {seed}", text, flags=re.M)  # [llm] seed and [evolution] seed
    text = re.sub(r"^repeats\s*=.*$", f"repeats = {args.repeats}", text, count=1, flags=re.M)
    if arm != "fixed":
        text = re.sub(
            r"^\[evaluation\]\s*$",
            f"[evaluation]\nracing = true\nmin_repeats = {args.min_repeats}\n"
            f"confidence = {args.confidence}\nindifference = {args.indifference}",
            text,
            count=1,
            flags=re.M,
        )
    path = out / f"{arm}-{seed}.toml"
    path.write_text(text)
    return path


def sandbox_runs(archive, n_tasks: int, first: int) -> int:
    """Runs (task x repeat) the campaign made, from its archive."""
    runs = 0
    for c in archive.candidates():
        if c.ok:
            runs += sum(len(t.get("per_repeat") or ()) for t in c.fitness["per_task"].values())
        elif c.error and c.error.get("kind") not in STATIC and not c.duplicate_of:
            runs += n_tasks * first  # stopped at its first failing run: at most its first stage
    return runs


def check(code: str, tasks, repeats: int) -> dict:
    """The winner's P on `tasks` with fresh seeds: mean over tasks and its standard error over repeats."""
    from generator.evaluation.evaluate import evaluate_source

    fit = evaluate_source(code, tasks, repeats=repeats, seed=CHECK_SEED, timeout_s=60.0, workers=2)
    if not fit.ok:
        return {"p": None, "error": str(fit.error)}
    return {"p": fit.score, "se": fit.metadata.get("se"), "per_task": {k: v.score for k, v in fit.per_task.items()}}


def campaign(cfg_path: Path, run_dir: Path, budget: int) -> None:
    """One campaign in a process of its own: the offline synthesizer remembers every prompt it answered in
    a process (a repeated prompt gets another design), so campaigns run one after another in one process
    would depend on the arms and seeds run before them, and the arms of a seed would not share their start."""
    import subprocess

    subprocess.run(
        [
            sys.executable,
            "-m",
            "generator.cli",
            "run",
            str(cfg_path),
            "--run-dir",
            str(run_dir),
            "--budget",
            str(budget),
            "--no-progress",
        ],
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def one_run(arm: str, seed: int, args, out: Path) -> dict:
    from generator.archive import Archive
    from generator.config import load_config
    from generator.tasks.entries import load_task_set, resolve_paths

    cfg_path = write_config(Path(args.config), arm, seed, args, out)
    run_dir = out / f"{arm}-{seed}"
    budget = args.budget * (2 if arm == "racing-2x" else 1)
    start = time.monotonic()
    campaign(cfg_path, run_dir, budget)
    wall = time.monotonic() - start
    cfg, _ = resolve_paths(load_config(cfg_path), cfg_path.parent)
    train, test = load_task_set(cfg.tasks.train, cfg.tasks), load_task_set(cfg.tasks.test, cfg.tasks)
    archive = Archive.open(run_dir)
    [winner] = archive.best(1)
    first = args.min_repeats if arm != "fixed" else args.repeats
    return {
        "seed": seed,
        "candidates": budget,
        "wall_s": round(wall, 1),
        "sandbox_runs": sandbox_runs(archive, len(train), first),
        "winner": winner.id,
        "winner_campaign_p": winner.score,
        "winner_campaign_se": winner.fitness["metadata"].get("se"),
        "winner_repeats": winner.fitness["metadata"].get("repeats"),
        "train": check(archive.code(winner), train, args.check_repeats),
        "test": check(archive.code(winner), test, args.check_repeats),
    }


def what_if(run_dir: Path, mu: int, settings) -> dict:
    """Racing replayed on a fixed-repeats run's field: the runs it would have used and the top mu it would keep.

    Every candidate of the run raced as one pool (its first repeats are exactly what racing would have seen:
    repeat r has the same seed either way), then the top mu for the first place, as the campaign ends."""
    from dataclasses import replace

    import numpy as np

    from generator.archive import Archive
    from generator.racing.rule import Entrant, race_round, repeat_blocks

    full = {c.id: c.fitness["per_task"] for c in Archive.open(run_dir).candidates() if c.ok and not c.duplicate_of}
    have = {cid: settings.min_repeats for cid in full}

    def mean(cid, n):
        return float(np.mean([np.mean(t["per_repeat"][:n]) for t in full[cid].values()]))

    def entrant(cid):
        seen = {k: {**t, "per_repeat": t["per_repeat"][: have[cid]]} for k, t in full[cid].items()}
        return Entrant(cid, mean(cid, have[cid]), repeat_blocks(seen), have[cid])

    while more := race_round([entrant(c) for c in have], mu, settings):
        have.update(more)
    final = replace(settings, indifference=0.0)  # the winner is raced without the zone, as the campaign does
    top = lambda: sorted(have, key=lambda c: -mean(c, have[c]))[:mu]  # noqa: E731  (chosen again each round)
    while more := race_round([entrant(c) for c in top()], 1, final):
        have.update(more)
    raced = top()
    fixed = sorted(have, key=lambda c: -mean(c, settings.max_repeats))[:mu]
    return {
        "min_repeats": settings.min_repeats,
        "confidence": settings.confidence,
        "indifference": settings.indifference,
        "runs_per_task": sum(have.values()),
        "fixed_runs_per_task": len(have) * settings.max_repeats,
        "same_top_mu": len(set(raced) & set(fixed)),
        "same_best": raced[0] == fixed[0],
        # P the raced winner gives up against fixed repeats' winner, both by their mean over all the runs
        "winner_loss": mean(fixed[0], settings.max_repeats) - mean(raced[0], settings.max_repeats),
    }


def what_ifs(run_dirs: list[Path], mu: int, max_repeats: int) -> list[dict]:
    from generator.racing.rule import RaceSettings

    return [
        {"run": str(d), **what_if(d, mu, RaceSettings(2, max_repeats, conf, delta))}
        for d in run_dirs
        for delta in (0.0, 0.05, 0.1)
        for conf in (0.75, 0.9)
    ]


def hpo_arm(run_dir: Path, racing: bool, args, out: Path) -> dict:
    """HPO of a run's best candidate, trials racing or not (a copy of the run each, its own study)."""
    import shutil

    import optuna

    from generator.tuning.hpo import run_hpo
    from generator.tuning.settings import HpoSettings

    copy = out / f"hpo-{'racing' if racing else 'fixed'}-{run_dir.name}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns("hpo*", ".lock"))
    settings = HpoSettings(
        trials=args.hpo_trials,
        repeats=args.repeats,
        report_repeats=args.check_repeats,
        racing=racing,
        min_repeats=args.min_repeats,
        confidence=args.confidence,
    )
    start = time.monotonic()
    [result] = run_hpo(copy, settings, progress=False)
    study = optuna.load_study(study_name=result.study_name, storage=f"sqlite:///{copy / 'hpo.db'}")
    tasks = len(result.train.tasks)
    if racing:  # a racing trial records its runs
        runs = sum(int(t.user_attrs.get("runs") or 0) for t in study.trials)
    else:  # a trial reports once per task, each step `repeats` runs of one task
        runs = sum(len(t.intermediate_values) * args.repeats for t in study.trials)
    return {
        "run": run_dir.name,
        "racing": racing,
        "trials": result.trials,
        "trial_runs": runs,
        "fixed_trial_runs": len(study.trials) * args.repeats * tasks,
        "wall_s": round(time.monotonic() - start, 1),
        "train_after": result.train.after,
        "train_after_se": result.train.se_after,
        "test_after": result.test.after if result.test else None,
        "test_after_se": result.test.se_after if result.test else None,
        "best_params": result.best_params,
    }


def versus_fixed(fixed: list[dict], arm: list[dict]) -> dict:
    """Seed by seed against fixed repeats (the same seed: the same first generation): runs' share, winner P's gain."""
    pairs = list(zip(fixed, arm))

    def gain(key):
        return mean_se(
            [a[key]["p"] - f[key]["p"] for f, a in pairs if a[key]["p"] is not None and f[key]["p"] is not None]
        )

    return {
        "runs_share": mean_se([a["sandbox_runs"] / f["sandbox_runs"] for f, a in pairs]),
        "train_p_gain": gain("train"),
        "test_p_gain": gain("test"),
    }


def mean_se(values: list[float]) -> tuple[float, float | None]:
    values = [v for v in values if v is not None]
    se = statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else None
    return statistics.fmean(values), se


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(ROOT / "campaigns" / "quickstart.toml"))
    ap.add_argument("--budget", type=int, default=24)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--repeats", type=int, default=6)
    ap.add_argument("--min-repeats", type=int, default=2)
    ap.add_argument("--confidence", type=float, default=0.9)
    ap.add_argument("--indifference", type=float, default=0.1)
    ap.add_argument("--check-repeats", type=int, default=20)
    ap.add_argument(
        "--arms", nargs="+", default=["fixed", "racing", "racing-2x"], choices=["fixed", "racing", "racing-2x"]
    )
    ap.add_argument("--out", default="/tmp/racing")
    ap.add_argument("--json", default=None)
    ap.add_argument(
        "--what-if",
        nargs="+",
        default=None,
        metavar="RUN_DIR",
        help="only replay racing on these fixed-repeats runs' fields and add it to --json",
    )
    ap.add_argument(
        "--hpo",
        nargs="+",
        default=None,
        metavar="RUN_DIR",
        help="only tune these runs' best candidates with and without racing and add it to --json",
    )
    ap.add_argument("--hpo-trials", type=int, default=12)
    args = ap.parse_args(argv)
    if args.hpo:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        rows = [hpo_arm(Path(d), racing, args, out) for d in args.hpo for racing in (False, True)]
        for row in rows:
            print(json.dumps(row, default=str))
        if args.json:
            doc = json.loads(Path(args.json).read_text()) if Path(args.json).exists() else {}
            doc["hpo"] = {
                "command": "python -m " + " ".join(["benchmarks.bench_racing"] + (argv or sys.argv[1:])),
                "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                "rows": rows,
            }
            Path(args.json).write_text(json.dumps(doc, indent=1, default=str) + "\n")
        return 0
    if args.what_if:
        rows = what_ifs([Path(d) for d in args.what_if], 4, args.repeats)
        for row in rows:
            print(json.dumps(row))
        if args.json:
            doc = json.loads(Path(args.json).read_text()) if Path(args.json).exists() else {}
            earlier = doc.get("what_if") or []
            doc["what_if"] = ([earlier] if isinstance(earlier, dict) else earlier) + [
                {
                    "command": "python -m " + " ".join(["benchmarks.bench_racing"] + (argv or sys.argv[1:])),
                    "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                    "mu": 4,
                    "repeats": args.repeats,
                    "rows": rows,
                }
            ]
            Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows: dict[str, list[dict]] = {arm: [] for arm in args.arms}
    start = time.monotonic()
    for seed in args.seeds:
        for arm in args.arms:
            row = one_run(arm, seed, args, out)
            rows[arm].append(row)
            print(f"{arm:10} seed {seed}: {json.dumps(row)}", file=sys.stderr)
    summary = {}
    for arm, runs in rows.items():
        summary[arm] = {
            "sandbox_runs": mean_se([r["sandbox_runs"] for r in runs]),
            "winner_train_p": mean_se([r["train"]["p"] for r in runs]),
            "winner_test_p": mean_se([r["test"]["p"] for r in runs]),
        }
    if "fixed" in rows:
        compared = {arm: versus_fixed(rows["fixed"], runs) for arm, runs in rows.items() if arm != "fixed"}
    print(
        f"\n{Path(args.config).name}: {args.budget} candidates (racing-2x: {2 * args.budget}), seeds {args.seeds}, "
        f"fixed repeats {args.repeats}, racing {args.min_repeats}..{args.repeats} at {args.confidence}, indifference "
        f"{args.indifference}; winners "
        f"checked with {args.check_repeats} fresh repeats"
    )
    print(f"{'arm':10} {'sandbox runs':>16} {'winner P train':>18} {'winner P test':>18}")
    for arm, s in summary.items():
        cells = [f"{m:9.3f} ± {se if se is not None else float('nan'):.3f}" for m, se in s.values()]
        print(f"{arm:10} {cells[0]:>16} {cells[1]:>18} {cells[2]:>18}")
    if "fixed" in rows:
        print("seed by seed against fixed: runs' share, winner P gain on training and test tasks (mean ± SE)")
        for arm, c in compared.items():
            cells = [f"{m:.3f} ± {se if se is not None else float('nan'):.3f}" for m, se in c.values()]
            print(f"{arm:10} {'  '.join(cells)}")
    if args.json:
        doc = {
            "command": "python -m " + " ".join(["benchmarks.bench_racing"] + (argv or sys.argv[1:])),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": f"{platform.node()} ({platform.machine()}, shared 2-core box)",
            "wall_s": round(time.monotonic() - start, 1),
            "settings": vars(args),
            "summary": {arm: {k: {"mean": m, "se": se} for k, (m, se) in s.items()} for arm, s in summary.items()},
            "versus_fixed": {arm: {k: {"mean": m, "se": se} for k, (m, se) in c.items()} for arm, c in compared.items()}
            if "fixed" in rows
            else None,
            "runs": rows,
        }
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
