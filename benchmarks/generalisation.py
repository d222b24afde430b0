"""Generalisation table: exported winners vs Kernel Tuner's strategies, training vs test tasks.

    python -m benchmarks.generalisation RUN_DIR --modules generated_algorithms/x.py[,...] \
        [--baselines default|none|a,b] [--extra hub:APP/GPU] [--repeats 10] [--workers N]
        [--merge earlier.json] [--md out.md] [--json out.json]

The tasks are the run's own `[tasks] train` and `test` (add more held-out ones with --extra
hub:APP/GPU). Every strategy gets the same tasks, the same time budget per task and the same seed
per repeat (generator.bench.command), and is scored with the methodology score P.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from generator.archive import Archive
from generator.bench.generalisation import DEFAULT_BASELINES, Generalisation, compare, markdown, write
from generator.config import TasksConfig
from generator.tasks.entries import load_task_set


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir", help="campaign run directory (its train/test tasks are used)")
    p.add_argument("--modules", default="", help="comma-separated exported modules (generated_algorithms/x.py)")
    p.add_argument(
        "--baselines", default="default", help="'default', 'none' or comma-separated Kernel Tuner strategies"
    )
    p.add_argument("--extra", action="append", default=[], help="more held-out task entries (own columns)")
    p.add_argument("--merge", help="a generalisation JSON made with the same tasks/repeats/seed: add its rows")
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--md", help="write the Markdown table here")
    p.add_argument("--json", help="write the full result here (default RUN_DIR/hpo/generalisation.json)")
    args = p.parse_args(argv)

    archive = Archive.open(args.run_dir)
    tasks_cfg = TasksConfig.model_validate(archive.config["tasks"])
    train = load_task_set(tasks_cfg.train, tasks_cfg)
    test = load_task_set(list(tasks_cfg.test), tasks_cfg)
    extra = load_task_set(args.extra, tasks_cfg)
    baselines = {"default": list(DEFAULT_BASELINES), "none": []}.get(args.baselines)
    if baselines is None:
        baselines = [b for b in args.baselines.split(",") if b]
    strategies = [m for m in args.modules.split(",") if m] + baselines
    note = f"run {args.run_dir}; budgets: the methodology's time budget per task; repeats {args.repeats}"
    g = compare(train, test, strategies, args.repeats, args.seed, args.workers, progress=True, note=note, extra=extra)
    if args.merge:
        g = g.merged(Generalisation.from_dict(json.loads(Path(args.merge).read_text())))
    write(g, args.json or f"{args.run_dir}/hpo/generalisation.json", args.md)
    print(markdown(g))
    return 0


if __name__ == "__main__":
    sys.exit(main())
