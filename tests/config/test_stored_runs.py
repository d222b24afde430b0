"""Run directories made by earlier Tunesmiths keep working, and every command reads a stored run's
configuration through one reader (generator.config.stored.StoredRun).

tests/data/runs/synth-0.1.0 is a run directory made by Tunesmith 0.1.0 (main at 8842943) from
tests/data/runs/synth-0.1.0.toml: format 1 (run.json has no "format"). tests/data/local_llm_run is another.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from support.paths import ROOT

from generator.archive import Archive
from generator.cli import main
from generator.config import CampaignConfig
from generator.config.stored import FORMAT, StoredRun, StoredRunError

FROZEN = ROOT / "tests" / "data" / "runs" / "synth-0.1.0"
LOCAL_LLM = ROOT / "tests" / "data" / "local_llm_run"


@pytest.fixture
def frozen(tmp_path) -> Path:
    """A copy of the format-1 run directory (commands may write into it)."""
    run = tmp_path / "synth-0.1.0"
    shutil.copytree(FROZEN, run)
    return run


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err and err.startswith("tunesmith: error: "), err
    return err


def test_a_run_of_format_1_reads_as_the_campaign_it_was(frozen):
    stored = StoredRun.open(frozen)
    assert stored.format == 1 and stored.kind == "campaign"
    cfg = stored.config
    assert isinstance(cfg, CampaignConfig)
    assert cfg.name == "frozen-synth" and cfg.evolution.budget == 4 and cfg.tasks.validation
    assert stored.model == "synth/components" and stored.has_validation


def test_the_old_local_llm_run_reads_with_its_legacy_values():
    stored = StoredRun.open(LOCAL_LLM)
    assert stored.format == 1
    raw = json.loads((LOCAL_LLM / "config.json").read_text())
    assert "planning" not in raw["evolution"]  # made before the key: it continues as it was made
    assert stored.config.evolution.planning == "serial"


def test_a_new_run_directory_records_its_format(tmp_path):
    archive = Archive.create(tmp_path / "run", {"name": "x"}, "", "x")
    info = json.loads((archive.run_dir / "run.json").read_text())
    assert info["format"] == FORMAT == 2


def test_status_report_and_export_read_a_format_1_run(frozen, tmp_path, capsys):
    assert main(["status", str(frozen)]) == 0
    out = capsys.readouterr().out
    assert f"run: {frozen} (frozen-synth)" in out and "4 of 4" in out, out
    assert "synth" in out and "winner" in out  # the model's usage line and the validation choice
    assert main(["report", str(frozen), "-o", str(tmp_path / "r.html")]) == 0
    assert "synth" in (tmp_path / "r.html").read_text()
    assert main(["export", str(frozen), "--name", "frozen_winner", "--out", str(tmp_path / "pkg")]) == 0
    module = (tmp_path / "pkg" / "frozen_winner.py").read_text()
    assert "frozen-synth" in module and "offline synthesizer" in module


def test_a_format_1_run_resumes(frozen, capsys):
    assert main(["resume", str(frozen), "--budget", "5", "--no-progress"]) == 0
    archive = Archive.open(frozen)
    assert len(archive.candidates()) == 5
    assert "format" not in json.loads((frozen / "run.json").read_text())  # its record is left as it was


def test_a_newer_format_is_refused_in_one_line_and_nothing_is_written(frozen, capsys):
    info = json.loads((frozen / "run.json").read_text())
    (frozen / "run.json").write_text(json.dumps({**info, "format": FORMAT + 1, "tunesmith_version": "9.0.0"}))
    before = {p: p.read_bytes() for p in frozen.rglob("*") if p.is_file()}
    assert main(["resume", str(frozen), "--budget", "5", "--no-progress"]) == 2
    err = _one_line(capsys)
    assert f"format {FORMAT + 1}" in err and "9.0.0" in err and "upgrade Tunesmith" in err, err
    after = {p: p.read_bytes() for p in frozen.rglob("*") if p.is_file() and p.name != ".lock"}
    assert after == {p: b for p, b in before.items()}
    with pytest.raises(StoredRunError, match="upgrade Tunesmith"):
        StoredRun.open(frozen)


def test_records_that_are_not_campaigns_read_by_their_kind(tmp_path):
    kernel = Archive.create(tmp_path / "k", {"kind": "kernel_campaign", "kernel": "/k/problem.toml", "model": "m"})
    assert kernel.stored.kind == "kernel_campaign" and kernel.settings.kernel == "/k/problem.toml"
    recording = ROOT / "benchmarks" / "byok" / "replies" / "hand_matmul_naive_c"
    assert StoredRun.open(recording).config.written_by == "hand"
    guided = Archive.create(tmp_path / "g", {"kind": "llm_guided exchanges", "bench_seed": 3})
    assert guided.settings.bench_seed == 3
    with pytest.raises(StoredRunError, match="not a campaign's"):
        guided.stored.campaign  # noqa: B018 - the property's error is what is tested


# reads of a stored configuration as a raw dict: `archive.config.get(...)`, `x.config["tasks"]`
# a raw read of a stored configuration: `.config.get(` / `.config[`, or Archive.config (the plain dict) taken
# into a name to read later (`config = archive.config`)
RAW_READ = re.compile(r"\.config\s*(\.get\(|\[)|\barchive\.config\b(?!\s*\()")


def test_no_command_reads_a_stored_configuration_as_a_raw_dict():
    reader = ROOT / "generator" / "config" / "stored.py"
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in sorted((ROOT / "generator").rglob("*.py"))
        if path != reader
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if RAW_READ.search(line)
    ]
    assert not found, "read the model (Archive.stored / Archive.settings) instead:\n" + "\n".join(found)


def test_resume_rules_come_from_the_fields_and_match_the_lists_0_1_kept_by_hand():
    from generator.config import LEGACY_VALUES, RESUMABLE_CHANGES

    assert RESUMABLE_CHANGES == {
        "llm.caps",
        "llm.timeout",
        "llm.retries",
        "llm.backoff",
        "llm.api_base",
        "llm.concurrency",
        "evolution.budget",
        "evaluation.workers",
        "evaluation.executor",
        "evaluation.worker_wait",
        "output.run_dir",
        "description",
        "hpo",
        "tasks.hub",
        "record",  # added by issue 42 (the MLflow record) to the hand-kept list of main
    }
    assert LEGACY_VALUES == {
        "evolution.planning": "serial",
        "evaluation.aggregate": "mean",
        "evolution.edit": "full",
        "evolution.operators.crossover": 0.0,
        "evolution.niches.islands": 1,
        "evolution.niches.migration_interval": 3,
        "evolution.niches.map_elites": False,
        "evolution.niches.bins": 3,
        "evolution.bandit.enabled": False,
        "evolution.bandit.discount": 0.9,
        "evolution.bandit.exploration": 0.5,
        "llm.models": [],
        "tasks.validation": [],
        "tasks.finalists": 5,
        "evaluation.racing": False,
        "evaluation.indifference": 0.0,
    }


def test_the_run_timeout_has_one_default(capsys):
    import inspect

    from generator.config import RUN_TIMEOUT_S, EvaluationConfig
    from generator.evaluation.evaluate import evaluate_file, evaluate_source
    from generator.sandbox.jobs import SandboxConfig

    assert EvaluationConfig().timeout == SandboxConfig().timeout_s == RUN_TIMEOUT_S == 60.0
    for function in (evaluate_source, evaluate_file):
        assert inspect.signature(function).parameters["timeout_s"].default == RUN_TIMEOUT_S
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    assert "seconds per run (default 60)" in " ".join(capsys.readouterr().out.split())
