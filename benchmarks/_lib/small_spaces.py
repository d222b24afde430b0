"""The small-spaces runner: synthesizer compositions, Kernel Tuner's strategies and the shipped winner on a set of
spaces at the methodology's budget, P ± standard error per space, written as JSON and printed as a table.

`benchmarks/bench_small_spaces.py` runs it on its own variants; bench_screened_init, bench_screened_restart,
bench_switch_explore, bench_switch_pool and bench_repair run it on theirs (`main_on_variants`, or `main` with
other defaults)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._lib.paths import ROOT
from generator.bench.command import bench
from generator.bench.results import standard_error
from generator.bench.runner import parse_strategy
from generator.config import TasksConfig
from generator.llm.synth.compose import Composition, render
from generator.llm.synth.profile import Profile
from generator.tasks.entries import load_task_set

SPACES = [
    "problem:reduction/H100",
    "problem:transpose/H100",
    "problem:nbody/H100",
    "problem:conv2d/H200",
    "hub:convolution_milo/MI250X",
    "hub:convolution_milo/A4000",
]
KERNEL_TUNER = ["diff_evo", "dual_annealing", "genetic_algorithm", "pso", "random_sample"]
SHIPPED = ["knn_late_acceptance"]
BEFORE = {
    "init": "spread",
    "neighbourhood": "Hamming",
    "screening": "knn",
    "acceptance": "greedy",
    "memory": "visited",
    "jump": "none",
    "restart": "perturb",
}
VARIANTS = {
    "synth_before": {},
    "synth_design": {"init": "design"},
    "synth_lcb": {"screening": "lcb"},
    "synth_switching": {"jump": "adaptive"},
    "synth_small": {"init": "design", "screening": "lcb", "jump": "adaptive"},
}
PROFILE = Profile(budget=50, fdc=0.1, optima=0.005)  # a small, rugged space: the defaults the synthesizer gives


def source_of(label: str, comp: Composition) -> str:
    """The optimizer a variant runs: the synthesizer's rendering of its composition (a script reusing this one
    may change the rendered text, as bench_repair.py does)."""
    return render(comp)[2]


def compositions() -> dict[str, Composition]:
    """Each variant: the 'before' design with some slots replaced, defaults from PROFILE."""
    out = {}
    for label, change in VARIANTS.items():
        comp = Composition("trajectory", {**BEFORE, **change}, {})
        comp.hp = {h: PROFILE.default(h) for h in comp.hyperparameter_names()}
        out[label] = comp.normalised()
    return out


def main(argv=None, defaults: dict | None = None, command: str | None = None) -> int:
    script_doc = sys.modules["__main__"].__doc__ or __doc__  # the script running this describes itself
    p = argparse.ArgumentParser(
        description=script_doc.splitlines()[0],
        epilog="More options: see the script's docstring." if script_doc != __doc__ else None,
    )
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "small_spaces.json"))
    p.add_argument("--space", action="append", help="task entries instead of the default spaces (repeatable)")
    p.add_argument("--kernel-tuner", default=",".join(KERNEL_TUNER), help="comma-separated Kernel Tuner strategies")
    p.set_defaults(**(defaults or {}))  # a script reusing this one (main_on_variants) sets its own
    args = p.parse_args(argv)
    hub = os.environ.get("TUNESMITH_BENCHMARK_HUB") or str(ROOT.parent / "shared" / "data" / "benchmark_hub")
    spaces = args.space or SPACES
    tasks = load_task_set(spaces, TasksConfig(hub=hub, train=spaces[:1]))
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        specs, labels = [], {}
        for label, comp in compositions().items():
            source = source_of(label, comp)
            path = Path(tmp) / f"{label}.py"
            path.write_text(source)
            specs.append(parse_strategy(str(path)))
            labels[specs[-1].label] = label
        specs += [parse_strategy(s) for s in args.kernel_tuner.split(",") if s]
        specs += [parse_strategy(str(ROOT / "generated_algorithms" / "archive" / f"{m}.py")) for m in SHIPPED]
        results = bench(tasks, specs, repeats=args.repeats, seed=args.seed, workers=args.workers, progress=True)
    rows = {}
    for r in results:
        label = labels.get(r.label, Path(r.label).stem)
        per = {t: {"P": s.score, "se": standard_error(s)} for t, s in r.per_task.items()}
        ses = [v["se"] for v in per.values()]
        rows[label] = {
            "per_task": per,
            "mean": r.score,
            "mean_se": float(sum(x * x for x in ses) ** 0.5 / len(ses)) if ses else None,
            "failed": r.failed,
            "wall_s": round(r.wall_s, 1),
        }
    script = Path(sys.argv[0]).stem if sys.argv[0].endswith(".py") else "bench_small_spaces"  # the script running it
    command = command or f"python -m benchmarks.{script} " + " ".join(argv if argv is not None else sys.argv[1:])
    doc = {
        "command": command,
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "machine": f"{platform.node()} ({os.cpu_count()} cores, shared)",
        "wall_s": round(time.time() - start, 1),
        "repeats": args.repeats,
        "seed": args.seed,
        "spaces": [t.name for t in tasks],
        "compositions": {k: json.loads(c.to_json()) for k, c in compositions().items()},
        "results": rows,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(doc, indent=1))
    names = [t.name for t in tasks]
    print(f"{'strategy':22}" + "".join(f"{n[-22:]:>24}" for n in names) + f"{'mean':>16}")
    for label, row in sorted(rows.items(), key=lambda kv: -kv[1]["mean"]):
        cells = "".join(
            f"{row['per_task'][n]['P']:>13.3f} ± {row['per_task'][n]['se']:<8.3f}"
            if n in row["per_task"]
            else f"{'failed':>24}"
            for n in names
        )
        print(f"{label:22}{cells}{row['mean']:>8.3f} ± {row['mean_se'] or 0:.3f}")
    print(f"wrote {args.json}")
    return 0


def main_on_variants(base: Path, variants: dict, spaces: list[str], json_name: str) -> int:
    """main() for a script that benches variants of one shipped module (bench_screened_init.py and
    bench_screened_restart.py): the module's composition (its marker line) with some slots and defaults
    replaced, each variant, on the script's spaces, without Kernel Tuner or shipped baselines."""
    global compositions, SPACES, SHIPPED
    from generator.llm.synth.compose import read_composition

    base_comp = read_composition(base.read_text())

    def variants_of_base() -> dict[str, Composition]:
        return {
            label: Composition(base_comp.scheme, {**base_comp.slots, **slots}, {**base_comp.hp, **hp}).normalised()
            for label, (slots, hp) in variants.items()
        }

    compositions, SPACES, SHIPPED = variants_of_base, spaces, []  # what main() reads
    return main(
        sys.argv[1:],
        defaults={"json": str(ROOT / "benchmarks" / "results" / json_name), "kernel_tuner": "", "repeats": 20},
    )
