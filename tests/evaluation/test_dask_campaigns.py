"""Campaigns and resumes in a row on `executor = "dask-local"` (issue 40, item 2), as the quickstart runs:
the offline synthesizer, parses of every reply in the campaign's process while Dask's client and
scheduler threads run beside them. On Python 3.11 one of those parses used to fail with `SystemError:
AST constructor recursion depth mismatch` (CPython gh-106905); the campaign's parses now run in a
child process (generator.parsing)."""

from __future__ import annotations

import pytest

from generator import parsing
from generator.archive import Archive
from generator.campaign.run import resume, run_campaign

pytest.importorskip("distributed")


def _campaign(path, run_dir, executor: str, budget: int):
    path.write_text(f'''name = "dask-in-a-row"
[llm]
model = "synth/components"
seed = 1
concurrency = 3
[evolution]
n_parents = 2
n_offspring = 3
budget = {budget}
seed = 1
[tasks]
train = ["problem:gemm/H200"]
[evaluation]
repeats = 1
timeout = 10
workers = 2
executor = "{executor}"
[output]
run_dir = "{run_dir}"
''')
    return path


def _digest(run):
    return [
        (c.id, c.operator, c.code_hash, c.score, (c.error or {}).get("kind")) for c in Archive.open(run).candidates()
    ]


def test_campaigns_and_resumes_in_a_row_on_dask_local(tmp_path):
    for name in ("first", "second"):  # two runs, each started and resumed: four Dask clusters in a row
        run = tmp_path / name
        summary = run_campaign(_campaign(tmp_path / f"{name}.toml", run, "dask-local", 3), progress=False)
        assert summary.state == "finished" and summary.candidates == 3
        summary = resume(run, budget=6, progress=False)
        assert summary.state == "finished" and summary.candidates == 6
        assert not any("recursion depth" in str(c.error) for c in Archive.open(run).candidates())
    assert parsing._ISOLATED  # the campaign's parses went to the parser's child process
