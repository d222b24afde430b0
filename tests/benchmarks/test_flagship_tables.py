"""benchmarks/_lib/gaps.py (flagship_tables.py's and target2_table.py's per-space comparison): a space counts as 'more than 0.10 below' Kernel Tuner's best only outside noise."""

import pytest


@pytest.fixture(scope="module")
def tables():
    from benchmarks._lib import gaps

    return gaps


def bench_json(per_strategy: dict) -> dict:
    """A `tunesmith bench --json` document with per-task (score, se) for each strategy."""
    return {
        "results": {
            name: {"score": 0.0, "se": 0.0, "per_task": {t: {"score": p, "se": se} for t, (p, se) in tasks.items()}}
            for name, tasks in per_strategy.items()
        }
    }


def test_a_shortfall_beyond_noise_counts_and_one_within_noise_does_not(tables):
    data = bench_json(
        {
            "w.py": {"clear": (0.30, 0.02), "noisy": (0.30, 0.50), "ahead": (0.90, 0.02)},
            "dual_annealing": {"clear": (0.70, 0.02), "noisy": (0.70, 0.50), "ahead": (0.50, 0.02)},
            "diff_evo": {"clear": (0.60, 0.02), "noisy": (0.10, 0.02), "ahead": (0.80, 0.02)},
        }
    )
    gaps = tables.gaps(data, "w.py")
    assert gaps["clear"]["best_kt"] == "dual_annealing"
    assert gaps["clear"]["below_best_kt"] == pytest.approx(0.40)
    assert gaps["clear"]["more_than_0.10_below"] is True
    assert gaps["noisy"]["below_se"] == pytest.approx((0.5**2 * 2) ** 0.5)
    assert gaps["noisy"]["more_than_0.10_below"] is False  # 0.40 below, but the SE is 0.71
    assert gaps["ahead"]["best_kt"] == "diff_evo"
    assert gaps["ahead"]["below_best_kt"] == pytest.approx(-0.10)
    assert gaps["ahead"]["more_than_0.10_below"] is False
