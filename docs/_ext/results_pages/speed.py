"""Speed and cost pages: executor throughput, live tuning on a GPU, the Optuna sampler, convergence curves and
the search space's per-call overhead."""

from __future__ import annotations

from pathlib import Path

from .common import ROOT, load, source

# ---------------------------------------------------------------- throughput of the executors


def throughput_page() -> str:
    out = []
    for rel in ("benchmarks/results/throughput_2core.json", "benchmarks/results/throughput_16core.json"):
        d = load(rel)
        out += [
            f"**{d['machine']}**, load average {d['loadavg_before'][0]:.1f} before, {d['loadavg_after'][0]:.1f} after:",
            "",
            "| executor mode | evaluations | s / evaluation | evaluations / min |",
            "| --- | ---: | ---: | ---: |",
        ]
        for r in d["results"] + d.get("generation", []):
            per = f"{r['per_eval_s']:.2f}" if "per_eval_s" in r else ""
            out.append(f"| `{r['mode']}` | {r['evals']} | {per} | {r['evals_per_min']:.1f} |")
        modes = ",".join(r["mode"] for r in d["results"])
        out += [
            "",
            source(
                rel, f"python3 -m benchmarks.bench_throughput --repeats {d['repeats']} --modes {modes} --generation", d
            ),
            "",
        ]
    return "\n".join(out)


# ---------------------------------------------------------------- live tuning on a GPU


def live_page() -> str:
    rel = "benchmarks/results/bench_live_H200.json"
    d = load(rel)
    out = [
        "| problem | optimizer | median evaluations to within 5% of the optimum | runs that reached it | each run |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    for prob in d["problems"]:
        for name, s in prob["summary"].items():
            each = ", ".join(
                str(r["fevals_to_target"]) if r["fevals_to_target"] is not None else f"not in {r['evaluations']}"
                for r in prob["runs"]
                if r["optimizer"] == name
            )
            out.append(
                f"| {prob['problem']} ({prob['n_within_5pct']} of {prob['n_valid']} within 5%) | {name} | "
                f"{s['median_fevals_to_5pct']} | {s['reached']} of {s['runs']} | {each} |"
            )
    demo = d.get("sandbox_demo") or {}
    if demo:
        out += [
            "",
            f"Through the sandbox on `{demo['task']}`: P = {demo['score']:.2f} against the cache "
            f"(per repeat {', '.join(f'{x:.2f}' for x in demo['per_repeat'])}) in {demo['wall_s']} s.",
        ]
    cmd = (
        "python3 -m benchmarks.bench_live benchmarks/bench_live_optimizer.py --problems conv2d dedisp --repeats 7 "
        "--max-fevals 200 500 --time-limit 440 --sandbox-demo dedisp"
    )
    out += ["", f"Source: `{rel}`, written by `{cmd}` on one NVIDIA H200; {d['date']}.", ""]
    return "\n".join(out)


# ---------------------------------------------------------------- the Optuna sampler's cost


def sampler_page() -> str:
    rel = "benchmarks/results/sampler_wide_space.json"
    d = load(rel)
    s = d["seconds_per_trial"]
    out = [
        f"`GeneratedSampler` ({d['winner']}) {1000 * s['GeneratedSampler']:.1f} ms per trial against "
        f"`TPESampler` {1000 * s['TPESampler']:.1f} ms ({d['ratio_to_tpe']:.2f}x), {d['trials']} trials.",
        "",
        "| configurations in the space | peak memory of the sampler |",
        "| ---: | ---: |",
    ]
    for size, peak in d["peak_bytes"].items():
        out.append(f"| {int(size):,} | {peak / 1e6:.1f} MB |")
    out += [
        "",
        f"Source: `{rel}`, written by `python -m benchmarks.bench_sampler_wide_space`; "
        "machine and date not recorded in the file.",
        "",
    ]
    return "\n".join(out)


# ---------------------------------------------------------------- convergence curves

CONVERGENCE = "benchmarks/results/convergence.json"


def convergence_page() -> str:
    path = ROOT / CONVERGENCE
    if not path.is_file():
        return "No convergence data yet: run `python -m benchmarks.convergence`.\n"
    d = load(CONVERGENCE)
    out = [
        f"Best-so-far objective (median over {d['repeats']} runs, seed {d['seed']}) against the simulated tuning "
        "time, on the methodology's time budget of each space; the dashed line is the optimum.",
        "",
    ]
    for task in d["tasks"]:
        out.append(f"![convergence on {task}](../_generated/convergence_{task.replace('/', '_')}.png)")
        out.append("")
    out.append(source(CONVERGENCE, d["command"], d))
    return "\n".join(out) + "\n"


def convergence_figures(out: Path) -> list[Path]:
    path = ROOT / CONVERGENCE
    if not path.is_file():
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = load(CONVERGENCE)
    written = []
    for task, curves in d["tasks"].items():
        fig, ax = plt.subplots(figsize=(7, 3.4), dpi=110)
        for strategy, c in curves["strategies"].items():
            best = [float("nan") if v is None else v for v in c["best_median"]]
            ax.step(c["time_s"], best, where="post", label=strategy)
        ax.axhline(curves["optimum"], color="black", linestyle="--", linewidth=0.8, label="optimum")
        ax.set_xlabel("simulated tuning time (s)")
        ax.set_ylabel(f"best {curves.get('objective', 'time')} so far")
        ax.set_title(task, fontsize=10)
        ax.legend(fontsize=7)
        fig.tight_layout()
        target = out / f"convergence_{task.replace('/', '_')}.png"
        fig.savefig(target)
        plt.close(fig)
        written.append(target)
    return written


def space_page() -> str:
    rel = "benchmarks/results/space_2core.json"
    d = load(rel)
    out = [
        "| space | Tunesmith, µs per objective call | Kernel Tuner simulation, µs per call | speed-up |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, t in d["tasks"].items():
        pc = t["per_call"]
        out.append(
            f"| {name} | {pc['tunesmith']['us_per_call']:.1f} | {pc['kerneltuner']['us_per_call']:.1f} | "
            f"{pc['speedup']:.1f}x |"
        )
    first = next(iter(d["tasks"]))
    calls = d["tasks"][first]["space_calls_us"]
    out += [
        "",
        f"The search-space calls alone on {first}, µs per call, best of 3 on fresh spaces "
        "(Tunesmith / `kernel_tuner.searchspace.Searchspace`):",
        "",
        "| call | Tunesmith | Kernel Tuner |",
        "| --- | ---: | ---: |",
    ]
    for call, us in calls["tunesmith"].items():
        out.append(f"| `{call}` | {us:.1f} | {calls['kerneltuner'].get(call, float('nan')):.1f} |")
    cmd = f"python3 -m benchmarks.bench_space --repeats {d['repeats']} --json {rel}"
    out += ["", source(rel, cmd, d), ""]
    return "\n".join(out)
