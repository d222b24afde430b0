"""The score P against autotuning_methodology 1.1.0: the same basis and the same P on identical traces, and where the package refuses runs Tunesmith holds."""

import gzip
import warnings

import numpy as np
import pytest
from support.score_traces import _hillclimb_traces, _random_traces

from generator.scoring.basis import score_basis
from generator.scoring.score import Trace, budget_for, score_traces

T4_KEYS = ["compilation", "runtimes", "framework", "search_algorithm", "validation"]


class _FakeResultsDescription:
    """Just what the package's Curve reads from a ResultsDescription."""

    def __init__(self, task, time_keys):
        self.group_name = self.group_display_name = "strategy"
        self.application_name, self.device_name = task.name.split("/")
        self.stochastic = True
        self.minimization = not task.objective.higher_is_better
        self.objective_time_keys = time_keys
        self.objective_performance_keys = [task.objective.name]
        self._arrays = None

    def set_results(self, arrays):
        self._arrays = arrays

    def get_results(self):
        from autotuning_methodology.caching import Results

        return Results(
            [
                self._arrays[k]
                for k in (
                    "fevals_results",
                    "objective_time_results",
                    "objective_performance_results",
                    "objective_performance_best_results",
                    "objective_performance_stds",
                    "objective_time_results_per_key",
                    "objective_performance_results_per_key",
                )
            ]
        )


def _t4_results(task, trace):
    """A trace as the T4 results the package's runner collects from Kernel Tuner (seconds)."""
    out = []
    for row, sec in zip(trace.rows, trace.seconds):
        value = task.key.values[row]
        out.append(
            {
                "invalidity": "correct" if np.isfinite(value) else "runtime",
                "times": {
                    "compilation": float(sec),
                    "runtimes": [],
                    "framework": 0.0,
                    "search_algorithm": 0.0,
                    "validation": 0.0,
                },
                "measurements": [
                    {
                        "name": task.objective.name,
                        "value": float(value) if np.isfinite(value) else "RuntimeFailedConfig",
                    }
                ],
            }
        )
    return out


def _package_score(task, stats, traces, seed):
    """P computed by the package's own code (write_results -> curve -> baseline -> mean)."""
    from autotuning_methodology.baseline import RandomSearchCalculatedBaseline
    from autotuning_methodology.curves import StochasticOptimizationAlgorithm
    from autotuning_methodology.report_experiments import get_strategies_aggregated_performance
    from autotuning_methodology.runner import write_results

    desc = _FakeResultsDescription(task, T4_KEYS)
    write_results([_t4_results(task, t) for t in traces], desc, compressed=False)
    fs, fe, ts, te = stats.cutoff_point_fevals_time_start_end(0.01, 0.95)
    time_range = np.linspace(ts, te, 1000)
    data = [
        (
            RandomSearchCalculatedBaseline(stats),
            [StochasticOptimizationAlgorithm(desc)],
            stats,
            time_range,
            np.arange(fs, fe + 1),
        )
    ]
    np.random.seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        perf, _, _, _ = get_strategies_aggregated_performance(data, confidence_level=0.95)
    return float(np.mean(perf[0]))


@pytest.fixture(scope="module")
def package_stats(hub_dir, tmp_path_factory):
    """The package's SearchspaceStatistics for two convolution spaces (from the hub's T4 files)."""
    from autotuning_methodology.searchspace_statistics import SearchspaceStatistics

    tmp = tmp_path_factory.mktemp("t4")
    stats = {}
    for gpu in ("A100", "MI250X"):
        t4 = tmp / f"{gpu}_T4.json"
        t4.write_bytes(
            gzip.decompress((hub_dir / "cachefiles" / "convolution_milo" / f"{gpu}_T4.json.gz").read_bytes())
        )
        stats[gpu] = SearchspaceStatistics("convolution_milo", gpu, True, T4_KEYS, ["time"], t4, full_validate=False)
    return stats


@pytest.fixture(scope="module")
def conv_tasks(hub_tasks):
    return {t.name.split("/")[1]: t for t in hub_tasks if t.name.startswith("convolution_milo/")}


@pytest.mark.parametrize("gpu", ["A100", "MI250X"])
def test_basis_matches_package_statistics(gpu, conv_tasks, package_stats):
    from autotuning_methodology.baseline import RandomSearchCalculatedBaseline

    task, stats = conv_tasks[gpu], package_stats[gpu]
    b = score_basis(task)
    fs, fe, ts, te = stats.cutoff_point_fevals_time_start_end(0.01, 0.95)
    assert (b.fevals_start, b.fevals_end) == (fs, fe)
    assert b.t_start == pytest.approx(ts, rel=1e-12) and b.t_end == pytest.approx(te, rel=1e-12)
    assert b.time_per_feval == pytest.approx(stats.get_time_per_feval("mean_per_feval"), rel=1e-12)
    assert np.array_equal(b.dist, stats.objective_performances_total_sorted)
    base = RandomSearchCalculatedBaseline(stats).get_curve(np.linspace(ts, te, 1000), "time")
    np.testing.assert_allclose(b.baseline_time, base, rtol=1e-12)
    assert budget_for(task).seconds == pytest.approx(te * 1.1)


@pytest.mark.parametrize("gpu,kind", [("A100", "random"), ("A100", "hillclimb"), ("MI250X", "hillclimb")])
def test_score_matches_package_on_identical_traces(gpu, kind, conv_tasks, package_stats):
    task = conv_tasks[gpu]
    make = _random_traces if kind == "random" else _hillclimb_traces
    traces = make(task, 8, seed=11)
    expected = _package_score(task, package_stats[gpu], traces, seed=123)
    np.random.seed(123)  # the package bags with numpy's global RNG; give ours the same state
    got = score_traces(task, traces, random_state=None)
    assert got.score == pytest.approx(expected, abs=1e-9)
    assert got.note == ""


def test_failed_configurations_count_as_time_but_not_as_best(conv_tasks, package_stats):
    task = conv_tasks["A100"]
    failed = np.flatnonzero(task.key.failed)[:30]
    good = [t for t in _random_traces(task, 6, seed=3)]
    # put failed configurations first: the curve starts late, like a strategy that wastes its start
    traces = [
        Trace(np.concatenate([failed, t.rows]), np.concatenate([task.key.eval_seconds[failed], t.seconds]))
        for t in good
    ]
    expected = _package_score(task, package_stats["A100"], traces, seed=5)
    np.random.seed(5)
    assert score_traces(task, traces, random_state=None).score == pytest.approx(expected, abs=1e-9)


def test_the_package_refuses_runs_that_stop_early_which_tunesmith_holds(conv_tasks, package_stats):
    """Runs that stop before the time range: the package raises; Tunesmith holds their best-so-far."""
    task = conv_tasks["A100"]
    best = int(np.nanargmin(task.key.values))
    stopped = [Trace([best], [task.key.eval_seconds[best]])] * 3
    held = score_traces(task, stopped)
    assert held.score == 1.0 and held.note == ""
    with pytest.raises(ValueError, match="overlap"):
        _package_score(task, package_stats["A100"], stopped, seed=1)
