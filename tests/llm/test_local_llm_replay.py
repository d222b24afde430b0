"""A real LLM through the whole pipeline in CI: the 30 exchanges of a campaign written by a local
Qwen2.5-Coder 1.5B (tests/data/local_llm_run, recorded with `tunesmith run campaigns/local-llm.toml`
on 2026-11-23) are replayed (`model = "replay/RUN_DIR"`): extraction, static checks, sandbox,
scoring, archive, lineage. The engine is never built here; the replies are the model's own.

tests/data/local_llm_run/expected.json says what the pipeline must make of each reply (ran, or
failed with which kind of error); it was written from a replay and checked by reading the replies.
"""

import json
from pathlib import Path

from support.paths import TEST_DATA

from generator.archive import Archive
from generator.campaign.run import run_campaign

RUN = TEST_DATA / "local_llm_run"
MODEL = "local/qwen2.5-coder-1.5b"


def _campaign(tmp_path: Path) -> Path:
    cfg = tmp_path / "replay.toml"
    cfg.write_text(f"""
name = "local-llm-replay"
[llm]
model = "replay/{RUN}"
max_tokens = 1200
seed = 1
[evolution]
n_parents = 3
n_offspring = 6
budget = 30
seed = 1
[evolution.operators]
new = 0.3
refine = 0.3
simplify = 0.05
fix = 0.35
[tasks]
train = ["problem:gemm/H200", "problem:hotspot/H200"]
[evaluation]
repeats = 2
timeout = 20
workers = 2
[prompts]
include_application_info = false
max_existing = 3
[output]
run_dir = "{tmp_path / "run"}"
""")
    return cfg


def _outcome(c) -> str:
    if c.duplicate_of:
        return "duplicate"
    return "ran" if c.ok else (c.error or {}).get("kind", "unknown")


def test_the_recording_is_a_real_local_model_campaign():
    recorded = Archive.open(RUN).exchanges()
    assert len(recorded) == 30 and {ex.model for ex in recorded} == {MODEL}
    assert all(ex.reply and ex.cost_usd == 0.0 and ex.completion_tokens > 0 for ex in recorded)
    assert {ex.ref for ex in recorded} == {f"c{i:04d}" for i in range(1, 31)}


def test_recorded_replies_run_through_the_pipeline_as_expected(tmp_path):
    expected = json.loads((RUN / "expected.json").read_text())
    summary = run_campaign(_campaign(tmp_path), progress=False)
    archive = Archive.open(tmp_path / "run")
    made = {c.id: c for c in archive.candidates()}
    assert summary.state == "finished" and len(made) == 30
    by_ref = {ex.ref: ex.reply for ex in Archive.open(RUN).exchanges()}
    served = archive.exchanges()
    assert len(served) == 30 and all(ex.reply == by_ref[ex.ref] for ex in served)  # nothing asked anew
    assert {cid: _outcome(c) for cid, c in made.items()} == expected["outcomes"]
    best = max((c for c in made.values() if c.ok), key=lambda c: c.score)
    assert best.score >= expected["best_train_at_least"]
