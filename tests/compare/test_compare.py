"""`tunesmith compare`: runs grouped into arms by their settings (or labels), final P ± SE per arm, the
tests that tell arms apart, best-P curves with bands, and the JSON and HTML written."""

import json
import math
import statistics

import pytest
from scipy import stats

from generator.archive import Archive, Candidate
from generator.cli import main
from generator.compare.arms import curve, group, step_at
from generator.compare.page import compare
from generator.compare.runs import read_run
from generator.compare.seeds import seeded_copy
from generator.errors import TunesmithError


def make_run(path, name: str, seed: int, scores: list, n_parents: int = 4, model: str = "synth/components"):
    """A run directory whose candidates scored `scores` in order (None: failed), written through the Archive."""
    config = {
        "name": name,
        "llm": {"model": model, "seed": seed},
        "evolution": {"n_parents": n_parents, "seed": seed, "budget": len(scores)},
        "tasks": {"train": ["problem:gemm/H200"]},
        "output": {"run_dir": str(path)},
    }
    archive = Archive.create(path, config, "", name)
    for i, score in enumerate(scores, start=1):
        archive.append_candidate(
            Candidate(
                id=f"c{i:04d}",
                generation=i // 4,
                operator="new",
                fitness=None if score is None else {"score": score, "per_task": {}},
                error={"kind": "runtime"} if score is None else None,
                created=1000.0 + 10 * i,
            )
        )
    archive.write_status({"state": "finished"})
    (path / "run.json").write_text(json.dumps({"created": 1000.0}))  # the candidates came 10 s apart after it
    return path


@pytest.fixture
def runs(tmp_path):
    good = [make_run(tmp_path / f"good-{s}", "good", s, [0.5, 0.7 + s / 100, None, 0.8 + s / 100]) for s in (1, 2, 3)]
    weak = [
        make_run(tmp_path / f"weak-{s}", "weak", s, [0.2, 0.3 + s / 100, 0.4 + s / 100, None], n_parents=1)
        for s in (1, 2, 3)
    ]
    return good, weak


def test_arms_by_settings_merge_seeds_and_split_methods(runs):
    good, weak = runs
    arms = group([read_run(r) for r in good + weak])
    assert [(a.label, len(a.runs)) for a in arms] == [("good", 3), ("weak", 3)]
    assert arms[0].finals == pytest.approx([0.81, 0.82, 0.83])
    assert arms[1].settings["evolution.n_parents"] == 1 and "evolution.seed" not in arms[1].settings


def test_same_settings_are_one_arm_whatever_the_name(tmp_path):
    a = make_run(tmp_path / "a", "first", 1, [0.5])
    b = make_run(tmp_path / "b", "renamed", 2, [0.6])
    assert [(arm.label, len(arm.runs)) for arm in group([read_run(a), read_run(b)])] == [("first/renamed", 2)]


def test_same_name_different_settings_are_two_arms(tmp_path):
    a = make_run(tmp_path / "a", "same", 1, [0.5], n_parents=1)
    b = make_run(tmp_path / "b", "same", 1, [0.6], n_parents=4)
    labels = sorted(arm.label for arm in group([read_run(a), read_run(b)]))
    assert labels == ["same (evolution.n_parents=1)", "same (evolution.n_parents=4)"]


def test_labels_group_runs_and_must_match_the_runs(runs):
    good, weak = runs
    arms = group([read_run(r) for r in good + weak], ["x", "x", "y", "y", "y", "y"])
    assert [(a.label, len(a.runs)) for a in arms] == [("x", 2), ("y", 4)]
    with pytest.raises(TunesmithError, match="one label per run directory"):
        group([read_run(r) for r in good], ["x"])


def test_table_and_tests_of_final_p(runs):
    good, weak = runs
    data = compare(good + weak)
    row = {r["arm"]: r for r in data["table"]}
    finals = [0.81, 0.82, 0.83]
    assert row["good"]["final_p"] == pytest.approx(statistics.fmean(finals))
    assert row["good"]["final_p_se"] == pytest.approx(statistics.stdev(finals) / math.sqrt(3))
    assert row["good"]["failed"] == 1 and row["good"]["wall_s"] == pytest.approx(40.0)
    (test,) = data["tests"]
    assert test["mann_whitney_p"] == pytest.approx(stats.mannwhitneyu(finals, [0.41, 0.42, 0.43]).pvalue)
    assert test["mann_whitney_p"] == pytest.approx(0.1)  # 3 against 3 cannot go lower
    assert test["welch_p"] < 1e-4
    assert "synthesizer" in data["note"] and "not an LLM" in data["note"]


def test_best_so_far_curves_with_bands(runs):
    good, _ = runs
    (arm,) = group([read_run(r) for r in good])
    c = curve(arm, "candidates")
    assert c["x"] == [1, 2, 3, 4]
    assert c["mean"] == pytest.approx([0.5, 0.72, 0.72, 0.82])
    assert c["low"][0] == pytest.approx(0.5) and c["low"][1] < 0.72 < c["high"][1]
    assert step_at([1, 2, 3], [0.1, 0.2, 0.3], 2.5) == 0.2 and step_at([1, 2], [0.1, 0.2], 0.5) is None


def test_command_writes_json_and_html(runs, tmp_path, capsys):
    good, weak = runs
    out = tmp_path / "cmp"
    assert main(["compare", *map(str, good + weak), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| good | 3 | 0.820 ± 0.006 |" in printed and "| weak | 3 | 0.420 ± 0.006 |" in printed
    data = json.loads((out / "compare.json").read_text())
    assert {r["arm"] for r in data["table"]} == {"good", "weak"} and data["command"].startswith("tunesmith compare")
    html = (out / "compare.html").read_text()
    assert html.count("data:image/png;base64,") == 2 and "<script" not in html  # no tokens or cost spent: no plot


def test_seeded_copy_sets_every_seed(tmp_path):
    src = tmp_path / "arm.toml"
    src.write_text('[llm]\nmodel = "synth/components"\nseed = 1\n[evolution]\nseed = 1\n')
    text = seeded_copy(src, 7, tmp_path / "out", model="replay/R").read_text()
    assert text.count("seed = 7") == 2 and 'model = "replay/R"' in text
