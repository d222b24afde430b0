"""Honest labels (issue 24, item 16): what is shown says what happened, no more."""

from __future__ import annotations

import importlib.util

from generator.archive import Archive, Candidate
from generator.cli import main
from generator.export.exporter import export_run

SOURCE = '''
class Sampler:
    """Random sample."""

    hyperparameters = {"n": {"type": "int", "low": 1, "high": 8, "default": 2}}

    def __init__(self, budget=5000, n=2):
        self.n = n

    def __call__(self, func, searchspace):
        for cfg in searchspace.get_random_sample(self.n):
            func(cfg)
'''


def _untuned_run(tmp_path):
    archive = Archive.create(
        tmp_path / "run",
        {"name": "unit", "llm": {"model": "synth/components"}, "tasks": {"train": ["hub:convolution_milo/A100"]}},
    )
    archive.append_candidate(
        Candidate(
            id="c0001",
            generation=0,
            operator="new",
            description="# Sampler: random",
            code_path=archive.write_code("c0001", SOURCE),
            fitness={"score": 0.4, "per_task": {"t/A": {"score": 0.4}}},
        )
    )
    return archive.run_dir


def test_export_of_a_candidate_never_tuned_says_not_tuned(tmp_path, capsys):
    """No `tunesmith hpo` result: module docstring, Markdown report and CLI say "not tuned", never "failed"."""
    run_dir = _untuned_run(tmp_path)
    exported = export_run(run_dir, "untuned", out_dir=tmp_path / "pkg")
    spec = importlib.util.spec_from_file_location("untuned", exported.module)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    report = exported.report.read_text()
    for text in (module.__doc__, report):
        assert "failed" not in text and "defaults kept" not in text
        assert "not tuned" in text
    assert "default 0.400, not tuned" in module.__doc__
    assert "| t/A | train | 0.400 | not tuned |" in report
    assert main(["export", str(run_dir), "--name", "untuned_cli", "--out", str(tmp_path / "pkg")]) == 0
    out = capsys.readouterr().out
    assert "not tuned" in out and "defaults kept" not in out


def test_report_hpo_table_shows_the_values_used_and_every_trial(tmp_path):
    """Best trial not kept: the table says the defaults are used; trials count complete, pruned and failed."""
    import dataclasses

    from support.run_fixture import build_run

    from generator.review.lineage import Lineage
    from generator.review.report import report_data
    from generator.tuning.results import HpoResult, SplitScores, write_result

    run = build_run(tmp_path)
    base = HpoResult(
        candidate_id="c0005",
        class_name="Search",
        study_name="c0005",
        storage="sqlite:///hpo.db",
        hyperparameters={"restarts": {"type": "int", "low": 1, "high": 8, "default": 2}},
        defaults={"restarts": 2},
        best_params={"restarts": 4},
        best_value=0.61,
        trials={"complete": 5, "pruned": 2, "failed": 1, "interrupted": 1, "requested": 8},
        train=SplitScores(["t/A"], 0.52, 0.50),
        test=SplitScores(["t/B"], 0.40, 0.38),
        repeats=3,
        seed=1,
        report_seed=2,
        wall_s=12.0,
        accepted=False,
    )
    write_result(run, base)
    write_result(
        run,
        dataclasses.replace(
            base, candidate_id="c0003", accepted=True, trials={"complete": 8, "pruned": 0, "failed": 0, "requested": 8}
        ),
    )
    rows = {r[0]: r for r in report_data(Lineage.load(run))["hpo_table"]}
    cid, trials, train, test, values = rows["c0005"]
    assert trials == "8 (5 complete, 2 pruned, 1 failed), 1 interrupted and run again"
    assert values == "defaults kept (best trial's restarts=4 did not beat them on fresh seeds)"
    assert train == "0.520 → 0.500 (not kept)" and test == "0.400 → 0.380 (not kept)"
    assert rows["c0003"][1] == "8 (8 complete)" and rows["c0003"][4] == "restarts=4"
    assert rows["c0003"][2] == "0.520 → 0.500"


def test_operators_chart_does_not_count_duplicates_as_evaluated(tmp_path):
    """A duplicate is recorded with its original's score but never run: its own bar, not "evaluated"."""
    from support.run_fixture import build_run

    from generator.review.lineage import Lineage
    from generator.review.plots import operator_shares

    stats = Lineage.load(build_run(tmp_path)).operator_stats()
    shares = operator_shares(stats)
    refine = [s.operator for s in stats].index("refine")  # c0003 worked, c0006 copies it, c0007 timed out
    assert shares["evaluated without error"][refine] == 1 / 3
    assert shares["duplicate, not evaluated"][refine] == 1 / 3


def test_bench_record_usage_line_does_not_call_the_synthesizer_an_llm(tmp_path):
    """`bench --record` with the offline synthesizer: its usage line names the synthesizer, not an "LLM"."""
    from generator.guided.run import usage_line
    from generator.llm.records import Exchange

    for model, who in (("synth/components", "offline synthesizer (no LLM) ("), ("openai/gpt-4o-mini", "LLM (")):
        archive = Archive.create(tmp_path / model.replace("/", "_"), {"name": "bench"})
        archive.append_exchange(
            Exchange(
                id="x1",
                purpose="llm_guided",
                model=model,
                messages=[],
                reply="[]",
                prompt_tokens=10,
                completion_tokens=5,
            )
        )
        line = usage_line(str(archive.run_dir))
        assert line.startswith(who), line
        assert ": 1 call, " in line, line


def test_long_description_is_cut_at_a_word_with_an_ellipsis():
    """A 400-character first line becomes at most 300 characters, ending at a whole word and "…"."""
    from generator.llm.prompts import extract_reply

    words = " ".join(f"word{i:03d}" for i in range(60))  # 479 characters
    reply = extract_reply(
        f"{words}\n\n```python\nclass A:\n    def __call__(self, func, searchspace):\n        pass\n```\n"
    )
    assert len(reply.description) <= 300 and reply.description.endswith("…")
    kept = reply.description[:-1].split(" ")
    assert kept == words.split(" ")[: len(kept)], "cut inside a word"
    short = extract_reply("A short one.\n\n```python\nclass A:\n    def __call__(self, f, s):\n        pass\n```\n")
    assert short.description == "A short one."


def test_budget_of_one_candidate_is_singular(tmp_path):
    """A finished one-candidate campaign says "budget of 1 candidate spent"."""
    import json

    from generator.campaign.run import run_campaign

    campaign = tmp_path / "one.toml"
    campaign.write_text(f"""name = "one"
[llm]
model = "synth/components"
[evolution]
budget = 1
[tasks]
train = ["problem:gemm/H200"]
[evaluation]
repeats = 1
[output]
run_dir = "{tmp_path / "run"}"
""")
    summary = run_campaign(campaign, progress=False)
    assert summary.state == "finished"
    assert json.loads((tmp_path / "run" / "status.json").read_text())["reason"] == "budget of 1 candidate spent"
