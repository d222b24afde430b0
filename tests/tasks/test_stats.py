"""Search-space statistics: exact on a hand-made space, consistent on a real one, printed by the CLI."""

import numpy as np
import pytest

import generator.scoring.statistics as stats
from generator.tasks.cache import AnswerKey, Objective, SpaceSpec, Task


def _task(values, higher=False):
    params = {"x": [1, 2, 3], "y": [1, 2, 3]}
    valid = np.array([(i, j) for i in range(3) for j in range(3) if (i, j) != (2, 2)], dtype=np.int32)
    values = np.asarray(values, dtype=float)
    return Task(
        "t/G",
        SpaceSpec(params, ("x*y<9",), valid),
        AnswerKey(values, np.isnan(values), np.ones(8)),
        Objective("time", higher),
    )


@pytest.fixture()
def fixed_budget(monkeypatch):
    """A made-up budget for hand-made tasks (not cached: these tests call _compute directly)."""
    monkeypatch.setattr(stats, "_budget", lambda task: (10.0, 10))


def test_hand_made_space(fixed_budget):
    # rows: (0,0)=1 best, rising away from it; (1,1)=9 is a failed configuration
    s = stats._compute(_task([1, 2, 3, 2, np.nan, 4, 3, 4]))
    assert (s.size, s.cartesian_size, s.n_params) == (8, 9, 2)
    assert s.constraint_density == pytest.approx(1 / 9)
    assert s.failed_fraction == pytest.approx(1 / 8)
    assert s.cardinality == "x=3, y=3"
    assert s.objective_spread == pytest.approx(3.0) and s.worst_over_optimum == pytest.approx(4)
    assert s.fdc > 0.9  # values grow with distance from the optimum: an easy landscape
    assert s.local_optima_share == pytest.approx(1 / 7)  # only the optimum
    assert s.lines()["budget_fevals"] == "10"


def test_rugged_space_and_maximisation(fixed_budget):
    rugged = _task([1, 5, 1, 5, 1, 5, 1, 5])
    assert stats._compute(rugged).local_optima_share == pytest.approx(4 / 8)
    maxi = stats._compute(_task([8, 7, 6, 5, 4, 3, 2, 1], higher=True))
    assert maxi.objective_spread == pytest.approx(8 / 4.5) and maxi.fdc > 0.8


def test_dense_grid_and_sampled_estimate_agree():
    rng = np.random.default_rng(3)
    task = _task(rng.random(8))
    v = stats._minimised(task)
    dense = stats._local_optima_share(task.space.valid, v, [3, 3])
    sampled = stats._sampled_local_optima_share(task.space.valid, v, np.isfinite(v))
    assert dense == pytest.approx(sampled)


def test_real_space(conv_task):
    s = stats.space_statistics(conv_task)
    assert (s.size, s.cartesian_size, s.n_params) == (4362, 10240, 10)
    assert 0.03 < s.failed_fraction < 0.04 and s.objective_spread > 1 and 0 < s.local_optima_share < 0.05
    assert s.budget_fevals == int(s.budget_seconds / conv_task.key.eval_seconds.mean()) > 0
    assert stats.space_statistics(conv_task) is s  # cached


def test_cli_stats(hub_dir, capsys, monkeypatch):
    from generator.cli import main

    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))
    assert main(["stats", "hub:convolution_milo/A100"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("## convolution_milo/A100\n- size: 4362\n- cartesian_size: 10240")
    assert "- fdc: " in out and "- local_optima_share: " in out and "- budget_fevals: " in out
