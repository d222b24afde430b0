"""Results pages rendered from the JSON files the benchmark scripts write: tables (Markdown) and
figures (matplotlib PNG). Each fragment names its file, and the command, machine and date the file
records, so a re-run of the benchmark updates the page and no number is typed by hand.

`RESULTS` maps each generated fragment (docs/_generated/<name>) to the function that writes it; the docs pages
pull the fragments in with MyST's `{include}`. benchmarks/README.md indexes which script writes which JSON for
which page (tests/project/test_benchmarks_index.py holds it against the JSON these fragments cite).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from .campaigns import (
    GENERALISATION,
    QUALITY,
    concurrency_page,
    edits_page,
    generalisation_page,
    generalisation_tasks,
    local_llm_page,
    near_copies_page,
    quality_page,
)
from .common import bar_chart, load
from .flagship import (
    FLAGSHIP4,
    FLAGSHIP5,
    flagship2_page,
    flagship_page,
    flagship_page_as_recorded,
    gemv_histogram_page,
    h100_page,
    target2_page,
)
from .protocol import protocol_page
from .speed import convergence_figures, convergence_page, live_page, sampler_page, space_page, throughput_page

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
    "results-protocol.md": protocol_page,
}


def figures(out: Path) -> list[Path]:
    """Every figure of the results pages."""
    written = []
    for name, (rel, _) in QUALITY.items():
        c = load(rel)["compare"]
        written.append(
            bar_chart(
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
        bar_chart(
            [(r["label"].replace("generated_algorithms.", ""), r["per_task"]) for r in keep],
            generalisation_tasks(g),
            out / "generalisation.png",
            "P per space",
        )
    )
    return written + convergence_figures(out)
