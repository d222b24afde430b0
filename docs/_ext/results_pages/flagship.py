"""The flagship campaigns' pages: each winner on its test spaces and on every space against Kernel Tuner's best,
the second target at 100 repeats, and the H100 / gemv-histogram bench tables."""

from __future__ import annotations

from pathlib import Path

from .common import bench_table, load, p, short, source

H100 = (
    "benchmarks/results/h100_spaces.json",
    "tunesmith bench --tasks problem:transpose/H100 --tasks problem:reduction/H100 --tasks problem:nbody/H100 "
    "--tasks problem:stencil3d/H100 --strategies genetic_algorithm,dual_annealing,random_sample,"
    "generated_algorithms/archive/knn_late_acceptance.py,generated_algorithms/archive/knn_annealing_ils.py,"
    "generated_algorithms/archive/knn_tabu_late_acceptance.py --repeats 50 --se --workers 2 --json benchmarks/results/h100_spaces.json",
)


def h100_page() -> str:
    return bench_table(*H100)


FLAGSHIP = "benchmarks/results/flagship"
FLAGSHIP_CMD = "python -m benchmarks.flagship_tables --winner generated_algorithms/archive/knn_vns_annealing.py --test-repeats 100 --all-repeats 5"
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
    "python -m benchmarks.flagship_tables --winner generated_algorithms/archive/lcb_annealing_ils.py "
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
