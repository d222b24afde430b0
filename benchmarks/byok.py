"""Bring your own kernel, measured: templating success, tokens, speed-up over the original kernel, and how close
the tuned template gets to Tunesmith's own hand-written problem of the same kernel (problems/matmul_c), on the CPU.

    python -m benchmarks.byok [--out benchmarks/results/byok.json] [--seeds 10] [--gpu] [--kernel NAME ...]

Each reply set is labelled by who wrote it: `hand-written (not an LLM)` sets were written by a person to show
the pipeline; a model's recording says which model. Everything runs through `tunesmith template`'s code
(walled checks and measurements); problems/matmul_c is measured in the same walls, the same way, right after.
On a GPU (--gpu) the shipped problem's best configuration, from its shipped cache, is timed in the same walls
alternately with the original and the tuned template. --kernel runs only those kernels and keeps the other
kernels' rows of an existing --out file (so that one GPU lease can run them in separate calls).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from benchmarks._lib.paths import ROOT
from generator.kernels.check import cache_summary, measure_original, measure_space, time_configuration
from generator.kernels.template import KernelSpec, Template, load_kernel_spec
from generator.kernels.templating import template_kernel
from generator.kernels.tuning import recommended_optimizer, tune_problem
from generator.tasks.problems import load_problem
from generator.tasks.restrictions import valid_indices

BYOK = ROOT / "benchmarks" / "byok"
# (kernel spec, reply recording, the shipped hand-written problem of the same kernel or None)
ROUNDS = 7  # alternate timings of the original and the tuned template
SETS = [("kernels/matmul_naive_c", "replies/hand_matmul_naive_c", "problems/matmul_c")]
# On the GPU machine (benchmarks/byok_gpu.sh): compared with the shipped caches of the same GPU
GPU_SETS = [
    ("kernels/matmul_naive_cuda", "replies/hand_matmul_naive_cuda", "problems/gemm"),
    ("kernels/transpose_naive_cuda", "replies/hand_transpose_naive_cuda", "problems/transpose"),
]


def shipped_cache_best(path: Path, device: str) -> dict:
    """The optimum of Tunesmith's own problem of the kernel and its configuration, from its shipped cache of
    this GPU, else of another GPU (said in `cache_device`: its best configuration is then only timed here)."""
    from generator.tasks.problems import load_problem_tasks

    try:
        tasks = load_problem_tasks(path / "problem.toml")
    except Exception as exc:  # noqa: BLE001 - no cache at all: said in the results
        return {"best_ms": float("nan"), "note": f"no shipped cache: {exc}"}
    task = next((t for t in tasks if t.info["gpu"] == device), tasks[0])
    best = int(np.nanargmin(task.key.values))
    config = dict(zip(task.space.param_names, task.space.config_of(best)))
    return {
        "configurations": len(task.space.valid),
        "best_ms": float(task.key.values[best]),
        "best_config": config,
        "cache_device": task.info["gpu"],
        "note": f"from the shipped cache problems/caches/{path.name}/{task.info['gpu']}.json.gz",
    }


def shipped_spec(path: Path) -> KernelSpec:
    """Tunesmith's own template problem of the kernel, as a spec the walls can run."""
    problem = load_problem(path / "problem.toml")
    args = problem.make_arguments()
    outputs = [i for i, a in enumerate(problem.answer(args)) if a is not None]
    return KernelSpec(problem.path, problem, {}, problem.kernel_source(), outputs)


def shipped_problem_space(path: Path, out: Path) -> tuple[KernelSpec, dict]:
    """Tunesmith's own template of the kernel, measured in the same walls as the generated one."""
    spec = shipped_spec(path)
    problem = spec.problem
    values = list(problem.tune_params.values())
    configs = [
        tuple(values[j][i] for j, i in enumerate(r))
        for r in valid_indices(problem.tune_params, problem.restrictions).tolist()
    ]
    template = Template(problem.kernel_source(), problem.tune_params, problem.restrictions, "", configs)
    doc = measure_space(spec, template, out)[0]
    ok = {k: e for k, e in doc["cache"].items() if "__error__" not in e}
    best = min(ok.values(), key=lambda e: e["time"])
    return spec, {**cache_summary(doc), "best_config": {p: best[p] for p in problem.tune_params}}


def run_set(kernel: str, replies: str, shipped: str | None, seeds: int, work: Path, rounds: int = ROUNDS) -> dict:
    """One reply set through the whole pipeline, then the tuning repeated over seeds, then alternate timings."""
    out = work / Path(replies).name
    t0 = time.monotonic()
    run = template_kernel(
        BYOK / kernel, out, model=f"replay/{BYOK / replies}", log=lambda line: print(line, flush=True)
    )
    row = {
        "kernel": run.kernel,
        "replies": run.replies,
        "recording": f"benchmarks/byok/{replies}",
        "attempts": len(run.attempts),
        "accepted_attempts": sum(a.accepted for a in run.attempts),
        "success_rate": sum(a.accepted for a in run.attempts) / len(run.attempts),
        "accepted": run.accepted,
        "feedback": [a.feedback for a in run.attempts],
        "tokens": None
        if run.replies.startswith("hand")
        else sum(a.prompt_tokens + a.completion_tokens for a in run.attempts),
        "pipeline_s": round(time.monotonic() - t0, 1),
    }
    if not run.accepted:
        return row
    spec = load_kernel_spec(BYOK / kernel)
    device = run.space["device"]
    tunings = [tune_problem(Path(run.problem), run.original_ms, seed=s, device=device) for s in range(seeds)]
    tuned = [t["best_ms"] for t in tunings]
    configs = [json.dumps(t["best_config"], sort_keys=True) for t in tunings]
    best_config = json.loads(max(set(configs), key=configs.count))  # the configuration most seeds found
    problem = load_problem(run.problem)
    grid_div = {k: v for k, v in problem.grid_div.items() if v}
    row.update(
        space=run.space,
        optimizer=tunings[0]["optimizer"],
        fevals=tunings[0]["fevals"],
        tuned_best_ms_from_cache_median=float(np.median(tuned)),
        seeds_that_found_the_optimum=sum(t == run.space["best_ms"] for t in tuned),
        tuned_config=best_config,
    )
    ref_spec, ref = None, None
    if shipped and device.startswith("CPU"):  # "CPU_<model>"
        ref_spec, ref = shipped_problem_space(ROOT / shipped, work / "shipped")
    elif shipped:
        ref = shipped_cache_best(ROOT / shipped, device)
        ref_spec = shipped_spec(ROOT / shipped) if ref.get("best_config") else None
    # The original, the tuned template configuration and the shipped problem's best configuration, timed
    # alternately, `rounds` times each, in the same walls.
    timings = {"original": [], "template": [], "shipped": []}
    for _ in range(rounds):
        timings["original"].append(measure_original(spec, repeats=1))
        timings["template"].append(time_configuration(spec, problem.kernel_source(), best_config, grid_div))
        if ref_spec is not None:
            timings["shipped"].append(
                time_configuration(
                    ref_spec,
                    ref_spec.source,
                    ref["best_config"],
                    {k: v for k, v in ref_spec.problem.grid_div.items() if v},
                )
            )
    # A disturbed timing here is 5-15x the undisturbed one (2 cores, load ~15), and more than half of them
    # can be disturbed: the minimum estimates the undisturbed time, the median is reported beside it.
    best = {k: float(np.min(v)) for k, v in timings.items() if v}
    med = {k: float(np.median(v)) for k, v in timings.items() if v}
    row.update(
        timings_ms=timings,
        min_ms=best,
        medians_ms=med,
        speedup_tuned=best["original"] / best["template"],
        speedup_tuned_medians=med["original"] / med["template"],
        speedup_optimum_from_cache=best["original"] / run.space["best_ms"],
        # what one tuning run of `fevals` evaluations gets, typically: the median over seeds (cache times)
        speedup_median_seed_from_cache=best["original"] / float(np.median(tuned)),
    )
    row["pipeline_and_timings_s"] = round(time.monotonic() - t0, 1)
    if ref is not None:
        row["shipped_problem"] = {"problem": shipped, **ref}
        if ref.get("cache_device", device) == device:  # two caches of one device: their optima compare
            row["shipped_problem"]["template_optimum_over_shipped_optimum_cache"] = (
                run.space["best_ms"] / ref["best_ms"]
            )
        if "shipped" in best:
            row["shipped_problem"]["tuned_template_over_shipped_best"] = best["template"] / best["shipped"]
    return row


def run_campaign(work: Path) -> dict:
    """The kernel campaign file (hand-written replies, labelled) into a scratch run directory: its candidates."""
    from generator.kernels.evolve import run_kernel_campaign

    path = BYOK / "campaign_matmul_naive_c.toml"
    text = path.read_text().replace(
        'run_dir = "../../results/kernel_campaign_matmul_naive_c"', f'run_dir = "{work / "kernel_campaign"}"'
    )
    copy = BYOK / "_bench_campaign.toml"  # beside the original: its paths are relative to the file
    copy.write_text(text)
    try:
        archive = run_kernel_campaign(copy, log=lambda line: print(line, flush=True))
    finally:
        copy.unlink()
    status = archive.status()
    return {
        "file": "benchmarks/byok/campaign_matmul_naive_c.toml",
        "replies": status["replies"],
        "state": status["state"],
        "best": status["best"],
        "candidates": [
            {
                "id": c.id,
                "operator": c.operator,
                "parents": c.parent_ids,
                "hypothesis": c.description,
                "speedup": c.score,
                "error": (c.error or {}).get("kind"),
                "best_ms": (c.fitness or {}).get("best_ms"),
                "optimum_ms": (c.fitness or {}).get("optimum_ms"),
                "original_ms": (c.fitness or {}).get("original_ms"),
            }
            for c in archive.candidates()
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "byok.json"))
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--gpu", action="store_true", help="the CUDA kernels (on the GPU machine)")
    parser.add_argument(
        "--kernel",
        action="append",
        help="only this kernel (repeatable); other kernels' rows of an existing --out file are kept",
    )
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="alternate timings of each configuration")
    args = parser.parse_args()
    sets = [s for s in (GPU_SETS if args.gpu else SETS) if not args.kernel or Path(s[0]).name in args.kernel]
    if not sets:
        raise SystemExit(
            f"--kernel {args.kernel}: no such kernel; choose from "
            f"{[Path(s[0]).name for s in (GPU_SETS if args.gpu else SETS)]}"
        )
    out = Path(args.out)
    kept = []
    if args.kernel and out.is_file():
        kept = [r for r in json.loads(out.read_text())["sets"] if r["kernel"] not in {Path(s[0]).name for s in sets}]
    rows = []
    with tempfile.TemporaryDirectory(prefix="byok-bench-") as tmp:
        for k, r, s in sets:  # written after each set: a run cut short keeps what it measured
            rows.append(run_set(k, r, s, args.seeds, Path(tmp), args.rounds))
            _write(out, args, kept + rows, None)
        campaign = None if args.gpu else run_campaign(Path(tmp))
    _write(out, args, kept + rows, campaign)
    print(f"wrote {out}")


def _write(out: Path, args, rows: list, campaign: dict | None) -> None:
    command = shlex.join(["python", "-m", "benchmarks.byok", *sys.argv[1:]])  # as it was run
    machine = f"{platform.machine()}, {os.cpu_count()} cores shared with other jobs (load {os.getloadavg()[0]:.1f})"
    local_run = ROOT / "benchmarks" / "results" / "byok_local_qwen15_template_run.json"
    models = "none run by this script (a local model's reply takes about a minute on 2 cores); " + (
        f"a real local model's templating run is recorded in {local_run.relative_to(ROOT)} and replayed "
        "by tests/kernels/test_template.py"
        if local_run.is_file()
        else "no model's recording exists yet"
    )
    if args.gpu:
        devices = sorted({r["space"]["device"] for r in rows if r.get("space")})
        machine = f"{platform.machine()}, {os.cpu_count()} cores, GPU {', '.join(devices) or 'none measured'}"
        models = "none: the GPU machine reaches no network and no model travels there; the replies are hand-written"
    doc = {
        "command": command,
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine,
        "optimizer": recommended_optimizer().stem,
        "seeds": args.seeds,
        "rounds": args.rounds,
        "local_models": models,
        "sets": rows,
        "kernel_campaign": campaign,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
