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
    archive = Archive.create(tmp_path / "run", {"name": "unit", "llm": {"model": "synth/components"},
                                                "tasks": {"train": ["hub:convolution_milo/A100"]}})
    archive.append_candidate(Candidate(id="c0001", generation=0, operator="new", description="# Sampler: random",
                                       code_path=archive.write_code("c0001", SOURCE),
                                       fitness={"score": 0.4, "per_task": {"t/A": {"score": 0.4}}}))
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
