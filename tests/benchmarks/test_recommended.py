"""generated_algorithms/recommended.py is the protocol's pick, as benched (issue 38)."""

import json

import numpy as np
from support.paths import ROOT

import generated_algorithms
from generator.bench.runner import parse_strategy, run_once

CROSSVAL = ROOT / "benchmarks" / "results" / "protocol" / "crossval.json"


def test_recommended_is_the_protocols_winner_and_searches_exactly_as_it_was_benched(conv_task):
    """The module is the protocol's winner, benched under its own name at 100 repeats, and it is the archived
    variant that was picked (the row the table drops as its duplicate): the same runs, seed for seed."""
    doc = json.loads(CROSSVAL.read_text())
    assert doc["winner"] == "generated_algorithms/recommended.py"
    (variant,) = doc["dropped"]
    recommended = parse_strategy(str(generated_algorithms.recommended_path()))
    benched = parse_strategy(str(ROOT / variant))
    for seed in (1, 2):
        a, b = run_once(conv_task, recommended, seed=seed), run_once(conv_task, benched, seed=seed)
        assert np.array_equal(a.rows, b.rows) and a.rows.size > 10


def test_every_command_that_picks_an_optimizer_picks_the_recommended_one():
    from generator.kernels.tuning import recommended_optimizer

    assert recommended_optimizer() == generated_algorithms.recommended_path()
    assert generated_algorithms.available() == ["recommended"]
    assert (ROOT / "generated_algorithms" / "kernel_tuner" / "gen_recommended.py").is_file()
