"""Cross-validation by kernel family and the portfolio rule (generator.bench.crossval, generator.bench.portfolio)."""

import json
import math

import numpy as np
import pytest

from generator.bench.crossval import ScoreTable, cross_validate, markdown, sealed_families
from generator.bench.portfolio import Rule, SpaceFeatures, learn_rule, nested_estimate
from generator.errors import TunesmithError
from generator.tasks.families import families_of, family_of


def table(scores: dict) -> ScoreTable:
    return ScoreTable(scores, {s: {t: 0.01 for t in per} for s, per in scores.items()})


def test_family_of_joins_kernels_that_compute_the_same_thing():
    assert family_of("convolution_milo/A100") == family_of("conv2d/H200") == "convolution"
    assert family_of("dedisp/H200") == family_of("dedispersion_milo/MI250X") == "dedispersion"
    assert family_of("gemm/RTX_Titan") == family_of("batched_gemm/H100") == "gemm"
    assert family_of("softmax/H100") == "softmax"


def test_a_family_with_many_gpus_weighs_as_much_as_a_family_with_one():
    # a: 1.0 on three gemm spaces, 0.0 on the two other families; b: 0.5 everywhere.
    scores = {
        "a": {"gemm/X": 1.0, "gemm/Y": 1.0, "gemm/Z": 1.0, "scan/X": 0.0, "fwht/X": 0.0},
        "b": {"gemm/X": 0.5, "gemm/Y": 0.5, "gemm/Z": 0.5, "scan/X": 0.5, "fwht/X": 0.5},
    }
    cv = cross_validate(table(scores))
    by = {s.label: s for s in cv.strategies}
    assert by["a"].mean == pytest.approx(1 / 3)  # a mean over spaces would say 0.6 and rank a first
    assert cv.winner == "b"
    assert by["a"].diff_to_best == pytest.approx(1 / 3 - 0.5)


def test_selection_estimate_scores_the_pick_made_without_each_family():
    # "lucky" leads on two families by a lot and loses on the third; "steady" is good everywhere.
    scores = {"lucky": {"f1/G": 0.9, "f2/G": 0.9, "f3/G": 0.0}, "steady": {"f1/G": 0.6, "f2/G": 0.6, "f3/G": 0.6}}
    cv = cross_validate(table(scores))
    folds = {f.family: f for f in cv.folds}
    # without f1: lucky 0.45 vs steady 0.6 -> steady, scored on f1 -> 0.6; same for f2; without f3 -> lucky, 0.0
    assert [folds[f].chosen for f in ("f1", "f2", "f3")] == ["steady", "steady", "lucky"]
    mean, se = cv.selection_estimate
    assert mean == pytest.approx((0.6 + 0.6 + 0.0) / 3)
    assert se == pytest.approx(np.std([0.6, 0.6, 0.0], ddof=1) / math.sqrt(3))
    steady = next(s for s in cv.strategies if s.label == "steady")
    assert steady.fold_ranks == {"f1": 1, "f2": 1, "f3": 2} and steady.rank_spread == (1, 1, 2)


def test_sealed_families_never_enter_the_table(tmp_path):
    protocol = tmp_path / "families.toml"
    protocol.write_text('sealed = ["f3"]\n')
    scores = {
        "a": {"f1/G": 0.5, "f2/G": 0.5, "f4/G": 0.5, "f3/G": 9.0},
        "b": {"f1/G": 0.6, "f2/G": 0.6, "f4/G": 0.6, "f3/G": -9.0},
    }
    cv = cross_validate(table(scores), sealed_families(protocol))
    assert "f3" not in cv.families and cv.winner == "b"
    assert "f3" not in markdown(cv).split("Selection")[0]


def test_too_few_families_and_bad_protocols_are_one_line_errors(tmp_path):
    with pytest.raises(TunesmithError, match="at least 3"):
        cross_validate(table({"a": {"gemm/X": 1.0, "gemm/Y": 1.0, "scan/X": 0.0}}))
    bad = tmp_path / "p.toml"
    bad.write_text("sealed = 3\n")
    with pytest.raises(TunesmithError, match="list of family names"):
        sealed_families(bad)


def test_a_strategy_that_failed_a_task_leaves_that_task_out_for_all():
    scores = {"a": {"f1/G": 0.5, "f2/G": 0.5, "f3/G": 0.5}, "b": {"f1/G": 0.6, "f2/G": 0.6}}
    assert table(scores).tasks == ["f1/G", "f2/G"]


def test_bench_results_merge_task_by_task_and_a_later_rerun_replaces_a_task():
    def doc(per_task):
        return {"results": {"a": {"per_task": {t: {"score": p, "se": 0.1} for t, p in per_task.items()}}}}

    # the first bench covered two spaces, a second one a new space and a rerun of one with more repeats
    merged = ScoreTable.from_bench_json([doc({"f1/G": 0.5, "f2/G": 0.5}), doc({"f3/H": 0.7, "f2/G": 0.4})])
    assert merged.scores["a"] == {"f1/G": 0.5, "f2/G": 0.4, "f3/H": 0.7}
    assert merged.tasks == ["f1/G", "f2/G", "f3/H"]


def _features(log2_size):
    return SpaceFeatures(log2_size, 3, 0.5)


def test_portfolio_learns_a_split_that_holds_across_families_and_beats_the_single_best():
    # "small" wins on spaces below 2^8, "large" above, in six families (three on each side).
    small = {f"s{i}/G": _features(5 + i) for i in range(3)}
    large = {f"l{i}/G": _features(10 + i) for i in range(3)}
    feats = {**small, **large}
    scores = {
        "small": {**{t: 0.9 for t in small}, **{t: 0.3 for t in large}},
        "large": {**{t: 0.2 for t in small}, **{t: 0.8 for t in large}},
    }
    rule = learn_rule(table(scores), feats, ["small", "large"])
    assert rule.feature == "log2_size" and 7 < rule.threshold < 10
    assert rule.pick(_features(4)) == "small" and rule.pick(_features(12)) == "large"
    # nested: with one family left out, each side still has at least... two families; the split needs three,
    # so the rule learned without a family may be a single member: the estimate says what the procedure gives
    nested = nested_estimate(table(scores), feats, ["small", "large"])
    est = nested.estimates()
    assert est["portfolio"] >= est["single"] - 1e-12
    from generator.bench.portfolio import PortfolioCV

    assert PortfolioCV.from_dict(nested.to_dict()).to_dict() == nested.to_dict()  # as the docs page reads it back


def test_portfolio_is_a_single_member_when_no_split_helps():
    feats = {f"f{i}/G": _features(5 + i) for i in range(6)}
    scores = {"good": {t: 0.7 for t in feats}, "bad": {t: 0.1 for t in feats}}
    rule = learn_rule(table(scores), feats, ["good", "bad"])
    assert rule == Rule("good")


def test_space_features_from_tune_params():
    f = SpaceFeatures.of({"a": [1, 2, 4, 8], "b": [0, 1], "c": [7]}, 4)
    assert (f.log2_size, f.dims, f.density) == (2.0, 2, 0.5)


def test_crossval_command_writes_json_and_markdown(tmp_path, capsys):
    from generator.cli import main

    doc = {
        "results": {
            s: {"score": 0.0, "per_task": {t: {"score": v, "se": 0.02} for t, v in per.items()}}
            for s, per in {
                "a": {"f1/G": 0.1, "f2/G": 0.2, "f3/G": 0.3},
                "b": {"f1/G": 0.4, "f2/G": 0.5, "f3/G": 0.6},
            }.items()
        }
    }
    res = tmp_path / "bench.json"
    res.write_text(json.dumps(doc))
    assert main(["crossval", str(res), "--json", str(tmp_path / "cv.json"), "--md", str(tmp_path / "cv.md")]) == 0
    out = json.loads((tmp_path / "cv.json").read_text())
    assert out["winner"] == "b" and out["selection_estimate"]["mean"] == pytest.approx(0.5)
    assert "Selection estimate" in (tmp_path / "cv.md").read_text() and "| b |" in capsys.readouterr().out
    from generator.bench.crossval import CrossValidation

    assert markdown(CrossValidation.from_dict(out)) + "\n" == (tmp_path / "cv.md").read_text()
    assert families_of(["f1/G", "f1/H", "f2/G"]) == {"f1": ["f1/G", "f1/H"], "f2": ["f2/G"]}


def test_crossval_drops_a_duplicate_row_and_refuses_an_unknown_one(tmp_path, capsys):
    from generator.cli import main

    # "b20" is b's lucky 20-repeat copy: left in, it wins; dropped, b (its 100-repeat row) is the pick
    rows = {
        "a": {"f1/G": 0.5, "f2/G": 0.5, "f3/G": 0.5},
        "b": {"f1/G": 0.45, "f2/G": 0.45, "f3/G": 0.45},
        "b20": {"f1/G": 0.6, "f2/G": 0.6, "f3/G": 0.6},
    }
    doc = {
        "results": {s: {"per_task": {t: {"score": v, "se": 0.02} for t, v in per.items()}} for s, per in rows.items()}
    }
    res = tmp_path / "bench.json"
    res.write_text(json.dumps(doc))
    assert main(["crossval", str(res), "--drop", "b20", "--json", str(tmp_path / "cv.json")]) == 0
    out = json.loads((tmp_path / "cv.json").read_text())
    assert out["winner"] == "a" and out["dropped"] == ["b20"]
    assert "b20" not in [s["label"] for s in out["strategies"]]
    assert main(["crossval", str(res), "--drop", "c"]) == 2
    assert "--drop c: no such strategy" in capsys.readouterr().err


def test_bench_with_a_protocol_never_runs_sealed_families_unless_opened(tmp_path):
    from types import SimpleNamespace

    from generator.bench.crossval import split_sealed

    protocol = tmp_path / "families.toml"
    protocol.write_text('sealed = ["spmv"]\n')
    tasks = [SimpleNamespace(name=n) for n in ("spmv/H100", "gemm/H200", "conv2d/H200")]
    assert [t.name for t in split_sealed(tasks, protocol)] == ["gemm/H200", "conv2d/H200"]
    assert [t.name for t in split_sealed(tasks, protocol, open_sealed=True)] == ["spmv/H100"]
    with pytest.raises(TunesmithError, match="no task in the sealed families"):
        split_sealed(tasks[1:], protocol, open_sealed=True)
    with pytest.raises(TunesmithError, match="needs --protocol"):
        split_sealed(tasks, None, open_sealed=True)
