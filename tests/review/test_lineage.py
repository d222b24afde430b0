"""Lineage queries and the terminal views (`tunesmith lineage`, `tunesmith show`) on a tiny run."""

import re

import pytest
from support.run_fixture import XSS, build_run

from generator.cli import main
from generator.review.lineage import Lineage
from generator.review.views import render_show, render_tree, safe_text


@pytest.fixture
def run(tmp_path):
    return build_run(tmp_path)


def test_reads_a_run_cut_short_mid_line(run):
    lineage = Lineage.load(run)
    assert list(lineage.candidates) == [f"c000{i}" for i in range(1, 8)]  # the torn c0008 is skipped
    assert lineage.exchange("c0005").prompt_tokens == 500


def test_ancestry_best_path_and_improvement(run):
    lineage = Lineage.load(run)
    assert lineage.best() == "c0005"
    assert lineage.best_path() == ["c0001", "c0003", "c0005"]
    assert lineage.ancestors("c0007") == ["c0001", "c0003", "c0005"]
    assert lineage.children("c0003") == ["c0005", "c0006"]
    assert lineage.delta("c0005") == pytest.approx(0.07)
    assert lineage.improved("c0004")  # a working fix of a failed parent counts as an improvement
    assert not lineage.improved("c0006")  # a duplicate never does


def test_operator_stats_convergence_errors_usage(run):
    lineage = Lineage.load(run)
    stats = {s.operator: s for s in lineage.operator_stats()}
    assert (stats["refine"].candidates, stats["refine"].succeeded, stats["refine"].improved) == (3, 1, 1)
    assert stats["refine"].duplicates == 1  # c0006 copies c0003: recorded, never evaluated
    assert stats["new"].with_parent == 0 and stats["new"].new_best == 1
    assert stats["simplify"].new_best == 1 and stats["fix"].improved == 1
    points = lineage.convergence()
    assert [p.best for p in points] == [0.30, 0.30, 0.45, 0.45, 0.52, 0.52, 0.52]
    assert points[-1].cost_usd == pytest.approx(sum(0.001 * n for n in range(1, 8)))
    assert points[0].tokens == 150
    kinds = lineage.error_kinds()
    assert kinds[0]["runtime"] == 1 and kinds[3]["timeout"] == 1 and not kinds[1]
    assert lineage.usage()["calls"] == 7


def test_diff_against_parent(run):
    diff = Lineage.load(run).diff("c0003", "c0001")
    assert diff.startswith("--- c0001.py\n+++ c0003.py")
    assert "-        for cfg in searchspace.get_random_sample(10):" in diff
    assert "+        for cfg in searchspace.get_random_sample(20):" in diff


def test_tree_marks_the_best_path_and_colours_only_when_asked(run):
    lineage = Lineage.load(run)
    plain = render_tree(lineage)
    lines = plain.splitlines()
    marked = [re.search(r"c\d{4}", line[20:]).group() for line in lines[1:] if line.startswith("*")]
    assert marked == ["c0001", "c0003", "c0005"]
    assert "\033[" not in plain and "failed:timeout" in plain and "dup:c0003" in plain
    assert "\033[1m\033[32m" in render_tree(lineage, color=True)
    one = render_tree(lineage, "c0004")
    assert "c0002" in one and "c0004" in one and "c0001" not in one


def test_show_prints_code_scores_error_prompt_and_diff(run):
    lineage = Lineage.load(run)
    text = render_show(lineage, "c0005", diff=True)
    for needle in (
        "operator simplify",
        "+0.070 against the best parent",
        "gemm_milo/A100",
        "0.540 ± 0.050",
        "── diff c0003 -> c0005 ──",
        "── prompt (x0005",
        "Write <one> & only one.",
        XSS,
    ):
        assert needle in text
    failed = render_show(lineage, "c0007")
    assert "kind: timeout" in failed and "line: 9" in failed


def test_show_gives_a_duplicates_score_as_a_number_and_says_whose_it_is(run):
    # `show` of a near-copy printed "score: dup:c0003 ± 0.050 (2 runs)": a label where a number belongs
    header = render_show(Lineage.load(run), "c0006").split("\n── ", 1)[0]
    score = next(line for line in header.splitlines() if line.startswith("score:"))
    assert score.startswith("score: 0.450"), score
    assert "copied from c0003" in score and "not run again" in score


def test_show_diff_of_a_candidate_without_parents_says_there_is_none(run):
    """`show c0042 --diff` of a `new` candidate printed no diff section at all, with nothing to say why."""
    text = render_show(Lineage.load(run), "c0001", diff=True)
    assert "── diff ──\n(no parent: a `new` candidate is written from scratch)" in text, text


def test_terminal_output_cannot_carry_escape_sequences():
    assert safe_text("ok\033[2J\033]0;title\007 done\tx\n") == "ok[2J]0;title done\tx\n"


def test_missing_code_file_reads_as_no_code(run):
    (run / "code" / "c0007.py").unlink()
    lineage = Lineage.load(run)
    assert lineage.code("c0007") is None
    assert "(no code)" in render_show(lineage, "c0007", diff=True)


def test_cli_lineage_and_show(run, capsys):
    assert main(["lineage", str(run)]) == 0
    assert "c0007" in capsys.readouterr().out
    assert main(["lineage", str(run), "--id", "c0003"]) == 0
    out = capsys.readouterr().out
    assert "c0001" in out and "c0005" not in out.split("\n", 1)[1]
    assert main(["show", str(run), "c0003", "--diff"]) == 0
    assert "── diff c0001 -> c0003 ──" in capsys.readouterr().out
    assert main(["show", str(run), "c9999"]) == 2
    assert "no candidate 'c9999'" in capsys.readouterr().err
    assert main(["lineage", str(run.parent)]) == 2
    assert "not a Tunesmith run directory" in capsys.readouterr().err
