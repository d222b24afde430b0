"""Every output says what it means (issue 40, items 10 and 12): no text cut mid-word or mid-sentence,
values spelled as the user wrote them, the synthesizer never called an LLM, usage errors from the
subcommand that was mistyped, and `status` of a kernel campaign in a kernel campaign's terms."""

from __future__ import annotations

import pytest

from generator.archive import Candidate
from generator.cli import main
from generator.config import ConfigError, parse_config

LONG = (
    "SpreadIndexStepBoundedThresholdTabuAdaptiveSearch: single-point local search with a spread initial "
    "sample and strictly adjacent neighbours"
)


def test_leaderboard_descriptions_are_cut_after_a_whole_word_and_say_so():
    from generator.campaign.printing import _leaderboard_lines

    board = [
        Candidate(
            id="c0001",
            generation=0,
            operator="new",
            code_path="code/c0001.py",
            description=LONG,
            fitness={"score": 0.9, "per_task": {"gemm/H200": 0.9}},
        )
    ]
    shown = _leaderboard_lines(board)[1].split("new       ", 1)[1]
    assert shown.endswith("…") and len(shown) <= 60, shown
    assert LONG.startswith(shown[:-1]) and LONG[len(shown) - 1] in " :", shown  # the last word shown is whole
    one_word = "SpreadPackBroodIteratedMemeticIndexStepKnnAnnealingEvolution: population search"
    board[0].description = one_word  # a class name longer than the column is shown whole, not cut inside
    assert _leaderboard_lines(board)[1].endswith("  SpreadPackBroodIteratedMemeticIndexStepKnnAnnealingEvolution…")


def test_a_template_rejection_line_says_why_in_whole_sentences():
    from generator.kernels.templating import headline

    compile_failure = (
        "It does not compile (configuration tile_i=8, tile_j=8):\nIn function 'void matmul':\n"
        "matmul.cpp:12:5: error: 'tile_k' was not declared in this scope\n   12 | tile_k++;"
    )
    assert headline(compile_failure) == (
        "It does not compile (configuration tile_i=8, tile_j=8): matmul.cpp:12:5: "
        "error: 'tile_k' was not declared in this scope"
    )
    wrong = (
        "Configuration tile_i=32, tile_j=16, loop_order=1, unroll_k=4 is wrong: output C differs from the "
        "reference at 4096 of 65536 elements (first at index (0, 17): 25.5343 instead of 26.1875)."
    )
    assert headline(wrong) == wrong


def test_a_wrong_toml_value_is_quoted_as_toml_spells_it():
    with pytest.raises(ConfigError) as refused:
        parse_config({"evolution": {"budget": True}, "tasks": {"train": ["problem:gemm/H200"]}}, "c.toml")
    assert "(got true)" in str(refused.value) and "True" not in str(refused.value), refused.value


def test_the_reports_axes_call_the_synthesizer_no_llm(tmp_path, monkeypatch):
    from support.run_fixture import build_run

    from generator.review import plots
    from generator.review.lineage import Lineage

    labels = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: labels.extend(ax.get_xlabel() for ax in fig.axes) or path)
    lineage = Lineage.load(build_run(tmp_path, torn_tail=False))
    plots.convergence(lineage, tmp_path / "c.png")
    plots.usage(lineage, tmp_path / "u.png")
    assert labels and not [label for label in labels if label.startswith("LLM")], labels
    assert any("synthesizer (no LLM)" in label for label in labels), labels


def test_a_mistyped_flag_after_a_subcommand_shows_that_subcommands_usage(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["status", str(tmp_path), "--kk", "3"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.startswith("usage: tunesmith status "), err
    assert "unrecognized arguments: --kk 3" in err


def test_status_of_a_kernel_campaign_speaks_of_templates_and_speed_ups(tmp_path, capsys):
    """Issue 40, item 10: it printed 'run: ... ()', '3 of None generated', 'mean P' for speed-ups, '± ?', 'runs 0'."""
    from generator.archive import Archive

    archive = Archive.create(
        tmp_path / "run",
        {
            "kind": "kernel_campaign",
            "kernel": "kernels/matmul_naive_c",
            "model": "replay/hand",
            "replies": "hand-written (not an LLM)",
        },
    )
    fitness = {
        "score": 1.053,
        "best_ms": 0.3123,
        "original_ms": 0.3289,
        "optimum_ms": 0.31,
        "fevals": 4,
        "optimizer": "knn_late_acceptance",
    }
    archive.append_candidate(
        Candidate(
            id="c0001",
            generation=0,
            operator="new",
            description="tiles keep B in L1",
            code_path=archive.write_code("c0001", "// kernel"),
            fitness=fitness,
        )
    )
    archive.append_candidate(
        Candidate(
            id="c0002",
            generation=1,
            operator="refine",
            description="vectorise j",
            code_path=archive.write_code("c0002", "// kernel"),
            error={"kind": "check", "message": "It does not compile"},
        )
    )
    archive.write_status({"state": "finished", "reason": "", "usage": {"calls": 2, "tokens": 0}, "best": "c0001"})
    assert main(["status", str(archive.run_dir)]) == 0
    text = capsys.readouterr().out
    for stale in ("()", "None", "mean P", "± ?", "runs", "LLM :"):
        assert stale not in text, (stale, text)
    assert "candidates: 2 templates made, 1 failed (check: 1)" in text, text
    assert "replies: hand-written (not an LLM): 2 calls" in text, text
    assert "speed-up over the original kernel" in text and " 1.05x " in text and "knn_late_acceptance, 4 evals" in text
