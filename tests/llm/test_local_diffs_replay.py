"""Real local-model diff edits replayed with no model (issue 28: record real exchanges with diffs).

tests/data/local_diffs/ holds exchanges recorded by `benchmarks/bench_search_local.py` (a local
Qwen2.5-Coder answering refine, simplify or fix prompts in `[evolution] edit = "diff"`): the
parent's code, the model's diff reply, its full-code answer when the blocks did not apply, and
the child's code as the run recorded it. A case is one of: blocks that applied; blocks that did
not apply, or a piece of the class without blocks (`reason`: asked again for full code); full code
without blocks (read as any reply). Each case goes through the diff path twice: the applier
alone, and a two-candidate campaign whose stand-in server answers with the recorded replies.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from support.fake_llm_server import FakeLLMServer
from support.paths import TEST_DATA

from generator.archive import Archive
from generator.campaign.run import run_campaign
from generator.llm.edits import apply_reply
from generator.scoring.fitness import CandidateError, Fitness, TaskFitness

DATA = TEST_DATA / "local_diffs"
CASES = sorted(p for p in DATA.iterdir() if p.is_dir())
FAKE_KEY = "sk-fake-local-diffs-0123456789"


def _spec(case: Path) -> dict:
    return tomllib.loads((case / "case.toml").read_text())


def test_the_fixtures_hold_real_replies_of_every_kind():
    specs = [_spec(c) for c in CASES]
    assert all(s["model"].startswith("local/") and s["origin"] for s in specs)
    assert any(s["applied"] for s in specs), "a diff that applied"
    assert any(not s["applied"] and "reason" in s for s in specs), "a diff that did not apply"
    assert any(not s["applied"] and "reason" not in s for s in specs), "full code without blocks"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_recorded_diff_applies_as_it_did_in_the_run(case):
    spec = _spec(case)
    outcome = apply_reply((case / "diff.txt").read_text(), (case / "parent.py").read_text())
    assert outcome.blocks == spec["blocks"]
    if spec["applied"]:
        assert outcome.code == (case / "child.py").read_text()
    elif "reason" in spec:
        assert outcome.code is None and spec["reason"] in outcome.error
    else:  # full code: no edit, and nothing refused
        assert outcome.code is None and outcome.error is None


def _campaign(tmp_path: Path, server: FakeLLMServer, operator: str) -> Path:
    ops = {"new": 0.0, "refine": 0.0, "simplify": 0.0, "fix": 0.0, operator: 1.0}
    if operator == "fix":
        ops["refine"] = 1.0  # a positive new/refine/simplify weight is required; a failed parent gets only its fix
    path = tmp_path / "replay.toml"
    path.write_text(
        f'''name = "local-diff-replay"
[llm]
model = "openai/fake"
api_base = "{server.base_url}"
retries = 0
timeout = 10
[evolution]
n_parents = 1
n_offspring = 1
budget = 2
edit = "diff"
[evolution.operators]
'''
        + "".join(f"{k} = {v}\n" for k, v in ops.items())
        + f'''
[tasks]
train = ["hub:convolution_milo/A100"]
[evaluation]
repeats = 1
[output]
run_dir = "{tmp_path / "run"}"
'''
    )
    return path


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_recorded_exchange_replays_through_the_campaigns_diff_path(case, tmp_path, hub_dir, monkeypatch):
    spec = _spec(case)
    parent, diff = (case / "parent.py").read_text(), (case / "diff.txt").read_text()

    def answer(body: dict) -> str:
        prompt = body["messages"][-1]["content"]
        if "## Diff not applied" in prompt:
            return (case / "full.txt").read_text()
        if "answer: diff" in prompt:
            return diff
        return f"# The recorded parent\n```python\n{parent}```\n"

    def evaluate(code, tasks, *args):
        if code == parent and spec["operator"] == "fix":
            return Fitness(None, {}, 0.0, CandidateError("exception", "recorded failure", "", "", 1))
        return Fitness(0.5, {t.name: TaskFitness(0.5, 0.0, 50.0) for t in tasks}, 0.01)

    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with FakeLLMServer(answer) as server:
        assert (
            run_campaign(_campaign(tmp_path, server, spec["operator"]), progress=False, evaluate=evaluate).state
            == "finished"
        )
    archive = Archive.open(tmp_path / "run")
    first, child = archive.candidates()
    assert archive.code(first) == parent and child.operator == spec["operator"]
    assert child.edit["blocks"] == spec["blocks"] and child.edit["applied"] == spec["applied"]
    exchange = next(x for x in archive.exchanges() if x.id == child.exchange_id)
    if spec["applied"] or "reason" not in spec:  # the edited parent, or the full code as it came
        assert archive.code(child) == (case / "child.py").read_text() and exchange.reply == diff
        assert "reason" not in child.edit
    else:  # asked again for full code, quoting why; never a silent copy of the parent
        assert spec["reason"] in child.edit["reason"] and exchange.ref.endswith(":full")
        assert spec["reason"] in exchange.messages[-1]["content"]
        assert archive.code(child) != parent
