"""Campaign results: quality against Kernel Tuner (quickstart, hub), the shipped winners' generalisation,
local code models, and campaign speed (concurrency, near-copies, diff edits and crossover)."""

from __future__ import annotations

from .common import load, p, short, source

QUALITY = {
    "quickstart": (
        "benchmarks/results/synth_quickstart_results.json",
        "python -m benchmarks.synth_quickstart --repeats 20 --workers 2 --json benchmarks/results/synth_quickstart_results.json",
    ),
    "hub": (
        "benchmarks/results/synth_hub_results.json",
        "python -m benchmarks.synth_quickstart --config campaigns/hub.toml --repeats 20 --workers 2 --json benchmarks/results/synth_hub_results.json",
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


# ---------------------------------------------------------------- generalisation of the shipped winners

GENERALISATION = (
    "generated_algorithms/archive/reports/generalisation.json",
    "python -m benchmarks.generalisation RUN_DIR --modules generated_algorithms/archive/knn_late_acceptance.py,... "
    "--baselines default --extra hub:convolution_milo/MI250X --extra hub:dedispersion_milo/MI250X --repeats 10",
)


def generalisation_tasks(d: dict) -> list[str]:
    extra = [t for t in d["rows"][0]["per_task"] if t not in d["train"] + d["test"]]
    return d["train"] + d["test"] + extra


def generalisation_page() -> str:
    rel, command = GENERALISATION
    d = load(rel)
    tasks = generalisation_tasks(d)
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
    ("local/qwen2.5-coder-1.5b", "benchmarks/results/local_llm_1.5b_results.json"),
    ("local/qwen2.5-coder-0.5b", "benchmarks/results/local_llm_0.5b_results.json"),
    ("offline synthesizer (not an LLM), same settings", "benchmarks/results/local_llm_synth30_results.json"),
]
LOCAL_CMD = (
    "tunesmith run campaigns/local-llm.toml (model set per row), then python -m benchmarks.synth_quickstart "
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
    rel = "benchmarks/results/local_llm_speed.json"
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
    out += ["", source(rel, f"python -m benchmarks.bench_local_llm --out {rel}", d), ""]
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
    out += ["", source(rel, f"python -m benchmarks.bench_concurrency --delay {d['delay_s']:.0f} --json {rel}", d), ""]
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
            "python -m benchmarks.bench_near_copies --repeats 5 --replies tests/data/local_llm_run --json {}",
        ),
        (
            "benchmarks/results/near_copies_100.json",
            "python -m benchmarks.bench_near_copies --repeats 5 --budget 100 --json {}",
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
    cmd = f"python -m benchmarks.bench_edits_crossover --budget {d['budget']} --seeds {seeds} --json {rel}"
    out += [
        "",
        f"Source: `{rel}`, written by `{cmd}`; {d['budget']} candidates per run on `{d['config']}`, "
        f"{d['repeats']} repeats; machine and date not recorded in the file.",
        "",
    ]
    return "\n".join(out)
