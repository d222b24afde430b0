"""Leave-one-space-out: the winner of each fold is chosen without the left-out space."""

import math

import pytest

from generator.bench.leave_one_out import leave_one_out, split_gap


def test_each_fold_chooses_on_the_other_spaces_and_scores_on_the_left_out_one():
    # "fit" leads on a, b, c by fitting them and collapses on d; "steady" is good everywhere
    scores = {"fit": {"a": 0.9, "b": 0.9, "c": 0.9, "d": -0.5}, "steady": {"a": 0.6, "b": 0.6, "c": 0.6, "d": 0.6}}
    loo = leave_one_out(scores)
    by_space = {f.held_out: f for f in loo.folds}
    assert by_space["d"].winner == "fit" and by_space["d"].held_out_p == -0.5
    assert by_space["d"].train == pytest.approx(0.9) and by_space["d"].gap == pytest.approx(1.4)
    # leaving a out: fit's training mean (0.9 + 0.9 - 0.5) / 3 = 0.433 < 0.6, so steady wins
    assert by_space["a"].winner == "steady" and by_space["a"].held_out_p == 0.6
    assert by_space["a"].best_held_out == "fit"
    s = loo.summary()
    assert s["folds"] == 4 and s["mean_gap"] == pytest.approx((1.4 + 0 + 0 + 0) / 4)
    assert s["mean_held_out"] == pytest.approx((-0.5 + 0.6 * 3) / 4)
    assert s["mean_regret"] == pytest.approx((0.3 * 3 + 1.1) / 4)
    assert s["median_gap"] == 0.0 and s["median_held_out"] == pytest.approx(0.6)


def test_a_candidate_that_failed_on_a_space_is_never_chosen_for_it_and_scores_are_paired():
    scores = {"broken": {"a": 1.0, "b": float("nan"), "c": 1.0}, "ok": {"a": 0.1, "b": 0.1, "c": 0.1}}
    folds = {f.held_out: f for f in leave_one_out(scores).folds}
    assert folds["a"].winner == "ok" and folds["c"].winner == "ok"  # broken failed on b, a training space
    assert folds["b"].winner == "broken" and folds["b"].held_out_p == -math.inf  # chosen, then fails there
    with pytest.raises(ValueError, match="at least two spaces"):
        leave_one_out({"x": {"a": 1.0}})


def test_split_gap_of_a_shipped_winner():
    g = split_gap({"a": 0.9, "b": 0.8, "c": 0.5, "d": 0.3}, ["a", "b"])
    assert g["train"] == pytest.approx(0.85) and g["held_out"] == pytest.approx(0.4) and g["gap"] == pytest.approx(0.45)
