"""Results pages rendered from the JSON files the benchmark scripts write: tables (Markdown) and
figures (matplotlib PNG). Each fragment names its file, and the command, machine and date the file
records, so a re-run of the benchmark updates the page and no number is typed by hand."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load(rel: str) -> dict:
    """One benchmark JSON, by its path in the repository."""
    return json.loads((ROOT / rel).read_text(encoding="utf-8"))


def p(x) -> str:
    """A score P as the tables show it."""
    return "—" if x is None else f"{x:.3f}"


def short(task: str) -> str:
    """A task name short enough for a table header (the hub's apps carry a `_milo` suffix)."""
    return task.replace("_milo", "")


def source(rel: str, command: str, data: dict) -> str:
    """The line under a table: which file, which command, which machine and date."""
    machine = data.get("machine") or (f"{data['cores']} cores" if "cores" in data else "machine not recorded")
    return f"Source: `{rel}`, written by `{command}`; {machine}; {data.get('date', 'date not recorded')}."


# ---------------------------------------------------------------- campaign quality vs Kernel Tuner

QUALITY = {
    "quickstart": (
        "benchmarks/synth_quickstart_results.json",
        "python benchmarks/synth_quickstart.py --repeats 20 --workers 2 --json benchmarks/synth_quickstart_results.json",
    ),
    "hub": (
        "benchmarks/synth_hub_results.json",
        "python benchmarks/synth_quickstart.py --config campaigns/hub.toml --repeats 20 --workers 2 --json benchmarks/synth_hub_results.json",
    ),
}


def compare_table(rel: str, command: str) -> str:
    """A campaign's best candidate beside Kernel Tuner's strategies (synth_quickstart.py's JSON)."""
    d = load(rel)
    c, n = d["compare"], d["counts"]
    tasks = c["train"] + c["test"]
    out = [
        f"Campaign `{d['config']}`: {n['generated']} candidates in {d['campaign_wall_s'] / 60:.1f} min, "
        f"{n['distinct']} distinct, {n['ran']} ran without error, {n['duplicates']} duplicates. "
        f"Best: {c['best']['id']} (campaign score {c['best']['campaign_score']:.3f}), "
        f"re-scored at {d['repeats']} repeats, seed {d['seed']}.",
        "",
        "| strategy | train mean P | test mean P | " + " | ".join(short(t) for t in tasks) + " |",
        "| --- | ---: | ---: | " + " | ".join("---:" for _ in tasks) + " |",
    ]
    for row in c["rows"]:
        out.append(
            f"| {row['strategy']} | {p(row['train'])} | {p(row['test'])} | "
            + " | ".join(p(row["per_task"].get(t)) for t in tasks)
            + " |"
        )
    out += ["", source(rel, command, d), ""]
    return "\n".join(out)


def quality_page() -> str:
    return "\n".join(
        [
            "## Quickstart campaign (our H200 spaces)",
            "",
            compare_table(*QUALITY["quickstart"]),
            "![P per space, quickstart](../_generated/quality_quickstart.png)",
            "",
            "## Benchmark-hub campaign (A100 train, A4000 test)",
            "",
            compare_table(*QUALITY["hub"]),
            "![P per space, hub](../_generated/quality_hub.png)",
            "",
        ]
    )


def _bar_chart(rows: list[tuple[str, dict]], tasks: list[str], path: Path, title: str) -> Path:
    """Grouped bars: P per task, one colour per strategy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(9, 3.6), dpi=110)
    width = 0.8 / max(1, len(rows))
    x = np.arange(len(tasks))
    for i, (label, per_task) in enumerate(rows):
        ax.bar(x + i * width - 0.4 + width / 2, [per_task.get(t) or 0.0 for t in tasks], width, label=label)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xticks(x, [short(t) for t in tasks], fontsize=8, rotation=20, ha="right")
    ax.set_ylabel("score P (0 = random search, 1 = optimum)")
    ax.set_ylim(max(-1.0, ax.get_ylim()[0]), 1.05)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, ncol=1, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


# ---------------------------------------------------------------- generalisation of the shipped winners

GENERALISATION = (
    "generated_algorithms/archive/reports/generalisation.json",
    "python benchmarks/generalisation.py RUN_DIR --modules generated_algorithms/archive/knn_late_acceptance.py,... "
    "--baselines default --extra hub:convolution_milo/MI250X --extra hub:dedispersion_milo/MI250X --repeats 10",
)


def _generalisation_tasks(d: dict) -> list[str]:
    extra = [t for t in d["rows"][0]["per_task"] if t not in d["train"] + d["test"]]
    return d["train"] + d["test"] + extra


def generalisation_page() -> str:
    rel, command = GENERALISATION
    d = load(rel)
    tasks = _generalisation_tasks(d)
    out = [
        "| strategy | train P | test P | further GPU P | " + " | ".join(short(t) for t in tasks) + " |",
        "| --- | ---: | ---: | ---: | " + " | ".join("---:" for _ in tasks) + " |",
    ]
    for row in sorted(d["rows"], key=lambda r: -r["test"]):
        name = row["label"].replace("generated_algorithms.", "")
        name = f"**{name}**" if row.get("generated") else name
        out.append(
            f"| {name} | {p(row['train'])} | {p(row['test'])} | {p(row.get('extra'))} | "
            + " | ".join(p(row["per_task"].get(t)) for t in tasks)
            + " |"
        )
    out += [
        "",
        "Generated modules in bold. " + source(rel, command, d),
        "",
        "![P per space of the shipped winners and the baselines](../_generated/generalisation.png)",
        "",
    ]
    return "\n".join(out)


# ---------------------------------------------------------------- local code models

LOCAL = [
    ("local/qwen2.5-coder-1.5b", "benchmarks/local_llm_1.5b_results.json"),
    ("local/qwen2.5-coder-0.5b", "benchmarks/local_llm_0.5b_results.json"),
    ("offline synthesizer (not an LLM), same settings", "benchmarks/local_llm_synth30_results.json"),
]
LOCAL_CMD = (
    "tunesmith run campaigns/local-llm.toml (model set per row), then python benchmarks/synth_quickstart.py "
    "--skip-run --run-dir RUN --config campaigns/local-llm.toml --repeats 20 --json FILE"
)


def local_llm_page() -> str:
    out = [
        "| writer (30-candidate campaign) | distinct candidates that ran | duplicates | wall time | best, train P | best, test P |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    sources = []
    baselines = None
    for label, rel in LOCAL:
        d = load(rel)
        n, best = d["counts"], d["compare"]["rows"][0]
        out.append(
            f"| `{label}` | {n['ran']} of {n['distinct']} ({100 * n['success_rate']:.0f}%) | {n['duplicates']} | "
            f"{d['campaign_wall_s'] / 60:.1f} min | {p(best['train'])} | {p(best['test'])} |"
        )
        sources.append(f"`{rel}` ({d['machine']}, {d['date']})")
        baselines = d["compare"]["rows"][1:]
    for row in baselines or []:
        out.append(f"| Kernel Tuner `{row['strategy']}` | | | | {p(row['train'])} | {p(row['test'])} |")
    out += [
        "",
        f"Sources: {', '.join(sources)}; each written by `{LOCAL_CMD}`. The baseline rows are from the last file.",
        "",
    ]
    return "\n".join(out) + "\n" + local_speed_table()


def local_speed_table() -> str:
    rel = "benchmarks/local_llm_speed.json"
    d = load(rel)
    out = [
        "| model | server ready | prompt | prompt tokens processed | time to first token | prompt tok/s | generation tok/s | memory (RSS) |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for m in d["models"]:
        r = m["requests"]

        def join(key, fmt, r=r):
            return " / ".join(fmt.format(q[key]) for q in r)

        out.append(
            f"| `{m['model']}` | {m['ready_s']:.1f} s | {join('operator', '{}')} | {join('prompt_tokens', '{:,}')} | "
            f"{join('ttft_s', '{:.1f}')} s | {join('prompt_tok_s', '{:.1f}')} | {join('gen_tok_s', '{:.1f}')} | "
            f"{max(q['rss_mb'] for q in r) / 1000:.2f} GB |"
        )
    out += ["", source(rel, f"python benchmarks/bench_local_llm.py --out {rel}", d), ""]
    return "\n".join(out)


# ---------------------------------------------------------------- campaign speed: concurrency, near-copies, diffs


def concurrency_page() -> str:
    rel = "benchmarks/results/concurrency_2core.json"
    d = load(rel)
    out = [
        f"The quickstart cut to {d['budget']} candidates, its LLM a local server that answers every request after "
        f"{d['delay_s']:.0f} s with a recorded reply.",
        "",
        "| `[llm] concurrency` | wall time | speed-up | requests | most in flight | same archive as concurrency 1 |",
        "| ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in d["runs"]:
        out.append(
            f"| {r['concurrency']} | {r['wall_s']:.0f} s | {r['speedup']:.2f}x | {r['requests']} | "
            f"{r['most_in_flight']} | {'yes' if r['same_archive'] else '**no**'} |"
        )
    out += ["", source(rel, f"python benchmarks/bench_concurrency.py --delay {d['delay_s']:.0f} --json {rel}", d), ""]
    return "\n".join(out)


def near_copies_page() -> str:
    out = [
        "| campaign | copies in the off run (share of evaluation time) | evaluated, off -> on | evaluation time, off -> on | re-asked (on) | best P, off / on |",
        "| --- | --- | --- | --- | ---: | --- |",
    ]
    notes = []
    for rel, cmd in [
        (
            "benchmarks/results/near_copies_48.json",
            "python benchmarks/bench_near_copies.py --repeats 5 --replies tests/data/local_llm_run --json {}",
        ),
        (
            "benchmarks/results/near_copies_100.json",
            "python benchmarks/bench_near_copies.py --repeats 5 --budget 100 --json {}",
        ),
    ]:
        d = load(rel)
        off, on, cf = d["runs"]["off"], d["runs"]["on"], d["counterfactual"][0]
        out.append(
            f"| synthesizer, {d['budget']} candidates | {cf['copies_not_evaluated']} of {cf['evaluated']} "
            f"(**{100 * cf['share_saved']:.1f}%**) | {off['evaluated']} -> {on['evaluated']} | "
            f"{off['eval_s']:.1f} s -> {on['eval_s']:.1f} s ({100 * (on['eval_s'] / off['eval_s'] - 1):+.0f}%) | "
            f"{on['reasked']} | {off['best']['score']:.3f} / {on['best']['score']:.3f} |"
        )
        for extra in d["counterfactual"][1:]:
            out.append(
                f"| recorded replies (`{extra['run_dir']}`) | {extra['copies_not_evaluated']} of {extra['evaluated']} "
                f"(**{100 * extra['share_saved']:.1f}%**) | - | - | would be {extra['would_reask']} | - |"
            )
        notes.append(source(rel, cmd.format(rel), d))
    return "\n".join(out + [""] + notes + [""])


def edits_page() -> str:
    import numpy as np

    rel = "benchmarks/results/edits_crossover.json"
    d = load(rel)
    out = [
        "| arm | winner's P (mean ± SE over seeds) | duplicates | crossovers | diffs applied | completion tokens per refine |",
        "| --- | --- | ---: | ---: | --- | ---: |",
    ]
    for arm, runs in d["runs"].items():
        best = np.array([r["best_p"] for r in runs])
        se = best.std(ddof=1) / np.sqrt(len(best)) if len(best) > 1 else 0.0
        asked = sum(r["diffs_asked"] for r in runs)
        applied = sum(r["diffs_applied"] for r in runs)
        out.append(
            f"| {arm} | {best.mean():.3f} ± {se:.3f} | {np.mean([r['duplicates'] for r in runs]):.1f} | "
            f"{np.mean([r['crossovers'] for r in runs]):.1f} | {f'{applied}/{asked}' if asked else '-'} | "
            f"{np.mean([r['completion_tokens_per_refine'] for r in runs]):.0f} |"
        )
    seeds = " ".join(str(s) for s in d["seeds"])
    cmd = f"python benchmarks/bench_edits_crossover.py --budget {d['budget']} --seeds {seeds} --json {rel}"
    out += [
        "",
        f"Source: `{rel}`, written by `{cmd}`; {d['budget']} candidates per run on `{d['config']}`, "
        f"{d['repeats']} repeats; machine and date not recorded in the file.",
        "",
    ]
    return "\n".join(out)


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
                rel, f"python3 benchmarks/bench_throughput.py --repeats {d['repeats']} --modes {modes} --generation", d
            ),
            "",
        ]
    return "\n".join(out)


# ---------------------------------------------------------------- live tuning on a GPU


def live_page() -> str:
    rel = "benchmarks/bench_live_H200.json"
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
        "python3 benchmarks/bench_live.py benchmarks/bench_live_optimizer.py --problems conv2d dedisp --repeats 7 "
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
        f"Source: `{rel}`, written by `python benchmarks/bench_sampler_wide_space.py`; "
        "machine and date not recorded in the file.",
        "",
    ]
    return "\n".join(out)


# ---------------------------------------------------------------- convergence curves

CONVERGENCE = "benchmarks/results/convergence.json"


def convergence_page() -> str:
    path = ROOT / CONVERGENCE
    if not path.is_file():
        return "No convergence data yet: run `python benchmarks/convergence.py`.\n"
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


def _convergence_figures(out: Path) -> list[Path]:
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
    cmd = f"python3 benchmarks/bench_space.py --repeats {d['repeats']} --json {rel}"
    out += ["", source(rel, cmd, d), ""]
    return "\n".join(out)


H100 = (
    "benchmarks/results/h100_spaces.json",
    "tunesmith bench --tasks problem:transpose/H100 --tasks problem:reduction/H100 --tasks problem:nbody/H100 "
    "--tasks problem:stencil3d/H100 --strategies genetic_algorithm,dual_annealing,random_sample,"
    "generated_algorithms/archive/knn_late_acceptance.py,generated_algorithms/archive/knn_annealing_ils.py,"
    "generated_algorithms/archive/knn_tabu_late_acceptance.py --repeats 50 --se --workers 2 --json benchmarks/results/h100_spaces.json",
)


def bench_table(rel: str, command: str) -> str:
    """A `tunesmith bench --se --json` result: P ± standard error per task and the mean."""
    d = load(rel)
    results = d["results"]
    tasks = list(next(iter(results.values()))["per_task"])
    out = [
        "| strategy | " + " | ".join(short(t) for t in tasks) + " | mean |",
        "| --- | " + " | ".join("---:" for _ in tasks) + " | ---: |",
    ]

    def cell(x):
        if x.get("score") is None:
            return "failed"
        return f"{x['score']:.3f} ± {x['se']:.3f}" if x.get("se") is not None else p(x["score"])

    for name, r in results.items():
        label = Path(name).stem if name.endswith(".py") else name
        out.append(f"| {label} | " + " | ".join(cell(r["per_task"][t]) for t in tasks) + f" | {cell(r)} |")
    out += ["", source(rel, command, d), ""]
    return "\n".join(out)


def h100_page() -> str:
    return bench_table(*H100)


FLAGSHIP = "benchmarks/results/flagship"
FLAGSHIP_CMD = "python benchmarks/flagship_tables.py --winner generated_algorithms/archive/knn_vns_annealing.py --test-repeats 100 --all-repeats 5"
GEMV_HISTOGRAM = (
    "benchmarks/results/bench_gemv_histogram_h100.json",
    "tunesmith bench --tasks problem:gemv/H100 --tasks problem:histogram/H100 --strategies "
    "genetic_algorithm,dual_annealing,diff_evo,random_sample,generated_algorithms/archive/knn_late_acceptance.py,"
    "generated_algorithms/archive/knn_annealing_ils.py,generated_algorithms/archive/knn_tabu_late_acceptance.py "
    "--repeats 50 --se --json benchmarks/results/bench_gemv_histogram_h100.json",
)


def flagship_page(folder: str = FLAGSHIP, command: str = FLAGSHIP_CMD) -> str:
    """A flagship campaign's winner: test spaces at 100 repeats, every space against Kernel Tuner's best."""
    summary = load(f"{folder}/summary.json")
    diff = summary["test"]["winner_minus_old"]
    with_se = all("below_se" in g for g in summary["gaps"].values())  # the first flagship's summary had none
    gaps = [
        "| space | winner P | best Kernel Tuner strategy | its P | winner below it by |"
        + (" more than 0.10 below (outside 2 SE)? |" if with_se else ""),
        "| --- | ---: | --- | ---: | ---: |" + (" --- |" if with_se else ""),
    ]
    for task, g in sorted(summary["gaps"].items(), key=lambda kv: -kv[1]["below_best_kt"]):
        if with_se:
            gaps.append(
                f"| {short(task)} | {g['winner']:.3f} ± {g['winner_se']:.3f} | {g['best_kt']} | "
                f"{g['best_kt_p']:.3f} ± {g['best_kt_se']:.3f} | {g['below_best_kt']:.3f} ± {g['below_se']:.3f} | "
                f"{'yes' if g['more_than_0.10_below'] else 'no'} |"
            )
        else:
            gaps.append(
                f"| {short(task)} | {p(g['winner'])} | {g['best_kt']} | {p(g['best_kt_p'])} | {p(g['below_best_kt'])} |"
            )
    return "\n".join(
        [
            "### Test spaces (never seen by evolution, HPO or the validation choice)",
            "",
            bench_table(f"{folder}/test.json", command),
            f"Winner minus `knn_late_acceptance` (the best shipped optimizer before) on the test spaces' mean: "
            f"{diff['diff']:+.3f} ± {diff['se']:.3f} (standard errors of the tasks combined, unpaired, so "
            f"conservative); {'outside' if diff['outside_2se'] else 'inside'} two standard errors.",
            "",
            "### Every space: how far below Kernel Tuner's best strategy there",
            "",
            *gaps,
            "",
            source(f"{folder}/summary.json", command, summary),
            "",
            "The whole table of that run:",
            "",
            bench_table(f"{folder}/all_spaces.json", command),
        ]
    )


FLAGSHIP2 = "benchmarks/results/flagship2"
FLAGSHIP2_CMD = (
    "python benchmarks/flagship_tables.py --winner generated_algorithms/archive/lcb_annealing_ils.py "
    "--campaign benchmarks/campaigns/flagship2.toml --test-repeats 100 --all-repeats 8 --out benchmarks/results/flagship2"
)


def flagship2_page() -> str:
    return flagship_page(FLAGSHIP2, FLAGSHIP2_CMD)


FLAGSHIP4 = "benchmarks/results/flagship4"
FLAGSHIP5 = "benchmarks/results/flagship5"


def flagship_page_as_recorded(folder: str) -> str:
    """A flagship page whose command is the one its summary recorded (flagship4 on)."""
    return flagship_page(folder, load(f"{folder}/summary.json")["command"])


TARGET2 = "benchmarks/results/target2_100.json"


def target2_page(rel: str = TARGET2) -> str:
    """Issue 29's second target at 100 repeats (benchmarks/target2_table.py): the winner against the Kernel Tuner
    strategies that led each space, the largest shortfall first."""
    d = load(rel)
    n = len(d["results"][d["settings"]["winner"]]["per_task"])
    out = [
        f"Winner: `{Path(d['settings']['winner']).stem}`; on each of the {n} spaces, the "
        f"{d['settings']['top']} Kernel Tuner strategies with the highest P there in `{d['settings']['reference']}`; "
        f"{d['settings']['repeats']} repeats each, the same seeds.",
        "",
        "| space | winner P | best of those Kernel Tuner strategies | its P | winner below it by |",
        "| --- | ---: | --- | ---: | ---: |",
    ]
    for task, g in sorted(d["gaps"].items(), key=lambda kv: -kv[1]["below_best_kt"]):
        out.append(
            f"| {short(task)} | {g['winner']:.3f} ± {g['winner_se']:.3f} | {g['best_kt']} | "
            f"{g['best_kt_p']:.3f} ± {g['best_kt_se']:.3f} | {g['below_best_kt']:.3f} ± {g['below_se']:.3f} |"
        )
    out += [
        "",
        f"Spaces more than 0.10 below, outside two standard errors: "
        f"{', '.join(map(short, d['spaces_more_than_0.10_below'])) or 'none'}. Spaces behind by more than 0.10 "
        f"at all: {', '.join(map(short, d['spaces_behind_by_more_than_0.10'])) or 'none'}.",
        "",
        source(rel, d["command"], d),
        "",
    ]
    return "\n".join(out)


def gemv_histogram_page() -> str:
    return bench_table(*GEMV_HISTOGRAM)


RESULTS = {
    "results-flagship.md": flagship_page,
    "results-flagship2.md": flagship2_page,
    "results-flagship4.md": partial(flagship_page_as_recorded, FLAGSHIP4),
    "results-flagship5.md": partial(flagship_page_as_recorded, FLAGSHIP5),
    # the winner by the rule for tied finalists (docs/results/flagship5.md)
    "results-flagship5-runner-up.md": partial(flagship_page_as_recorded, FLAGSHIP5 + "_runner_up"),
    # flagship5's winner re-rendered after the campaign (docs/results/flagship6.md), and flagship6's winner
    "results-flagship5-pool8.md": partial(flagship_page_as_recorded, FLAGSHIP5 + "_pool8"),
    "results-flagship5-wide.md": partial(flagship_page_as_recorded, FLAGSHIP5 + "_wide"),
    "results-flagship6.md": partial(flagship_page_as_recorded, "benchmarks/results/flagship6"),
    # the flagship winner re-rendered with the closest-neighbour repair (docs/results/histogram-repair.md)
    "results-flagship5-nearest.md": partial(flagship_page_as_recorded, FLAGSHIP5 + "_nearest"),
    "results-gemv-histogram.md": gemv_histogram_page,
    "results-target2.md": target2_page,
    "results-quality.md": quality_page,
    "results-generalisation.md": generalisation_page,
    "results-local-llm.md": local_llm_page,
    "results-concurrency.md": concurrency_page,
    "results-near-copies.md": near_copies_page,
    "results-edits.md": edits_page,
    "results-throughput.md": throughput_page,
    "results-live.md": live_page,
    "results-sampler.md": sampler_page,
    "results-convergence.md": convergence_page,
    "results-space.md": space_page,
    "results-h100.md": h100_page,
}


def figures(out: Path) -> list[Path]:
    """Every figure of the results pages."""
    written = []
    for name, (rel, _) in QUALITY.items():
        c = load(rel)["compare"]
        written.append(
            _bar_chart(
                [(r["strategy"], r["per_task"]) for r in c["rows"]],
                c["train"] + c["test"],
                out / f"quality_{name}.png",
                f"{name}: P per space (train | test)",
            )
        )
    g = load(GENERALISATION[0])
    keep = [
        r
        for r in g["rows"]
        if r.get("generated")
        or r["label"] in ("adaptive_tabu_greywolf", "hybrid_vndx", "genetic_algorithm", "random_sample")
    ]
    written.append(
        _bar_chart(
            [(r["label"].replace("generated_algorithms.", ""), r["per_task"]) for r in keep],
            _generalisation_tasks(g),
            out / "generalisation.png",
            "P per space",
        )
    )
    return written + _convergence_figures(out)


# ---------------------------------------------------------------- the generalisation protocol (issue 38)

PROTOCOL = ("benchmarks/results/protocol/crossval.json", "bash benchmarks/protocol/table.sh")


def protocol_page(rel: str = PROTOCOL[0], command: str = PROTOCOL[1]) -> str:
    """The protocol's cross-validated table, folds and portfolio rule, from `tunesmith crossval --json`."""
    from generator.bench.crossval import CrossValidation, markdown
    from generator.bench.crossval_report import portfolio_markdown
    from generator.bench.portfolio import PortfolioCV

    d = load(rel)
    inputs = "; ".join(
        f"`{i['file']}` ({i.get('strategies')} strategies, {i.get('tasks')} tasks, {i.get('repeats')} "
        f"repeats, seed {i.get('seed')})"
        for i in d.get("inputs", [])
    )
    out = [markdown(CrossValidation.from_dict(d)), ""]
    if d.get("portfolio"):
        out += [portfolio_markdown(PortfolioCV.from_dict(d["portfolio"])), ""]
    out += [
        f"Source: `{rel}`, written by `{command}` on {d.get('date')}, from {inputs}.",
        "",
        "### The one look at the sealed test families",
        "",
        sealed_table(SEALED),
        "",
    ]
    return "\n".join(out)


SEALED = "benchmarks/results/protocol/sealed/sealed20.json"


def sealed_table(rel: str) -> str:
    """P ± SE per sealed space and its mean, for every strategy of the one look (benchmarks/results/protocol/sealed/)."""
    d = load(rel)
    tasks = d["tasks"]
    out = [
        "| strategy | mean P | ± SE | " + " | ".join(tasks) + " |",
        "| --- | ---: | ---: | " + "---: | " * len(tasks),
    ]
    for label, r in sorted(d["results"].items(), key=lambda kv: -(kv[1]["score"] or -9)):
        cells = [f"{r['per_task'][t]['score']:.3f} ± {r['per_task'][t]['se']:.3f}" for t in tasks]
        out.append(
            f"| {label.split('/')[-1].removesuffix('.py')} | {p(r['score'])} | {p(r['se'])} | "
            + " | ".join(cells)
            + " |"
        )
    out += [
        "",
        f"Source: `{rel}` ({d['repeats']} repeats, seed {d['seed']}); when and how it was opened: "
        "`benchmarks/results/protocol/sealed/LOOK.md`.",
        "",
    ]
    return "\n".join(out)


RESULTS["results-protocol.md"] = protocol_page
