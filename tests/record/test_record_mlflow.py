"""The MLflow record ([record] mlflow = true): each candidate's scores, operator, parents, tokens, cost and
code, the campaign's best P over candidates, the report at the end; a resumed run continues the same
MLflow run and sends nothing twice. Against local stores: MLflow's file store and the default sqlite file."""

import json
import sys
import textwrap

import pytest
from support.run_fixture import SPEC, build_run, grow_run

from generator.cli import main
from generator.config import RecordConfig
from generator.record.mlflow_record import CANDIDATE_TAG, STATE, MlflowRecord

mlflow = pytest.importorskip("mlflow", reason="MLflow not installed (pip install -e '.[test]' installs it)")
from mlflow.tracking import MlflowClient  # noqa: E402  (after the check that MLflow is there)


def _children(client: MlflowClient, run_id: str) -> dict:
    run = client.get_run(run_id)
    found = client.search_runs([run.info.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{run_id}'")
    return {r.data.tags[CANDIDATE_TAG]: r for r in found}


def test_candidates_land_in_a_file_store_and_a_resume_continues_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow keeps its file store behind this switch
    uri = (tmp_path / "mlruns").as_uri()
    run = build_run(tmp_path, torn_tail=False, upto=3)
    settings = RecordConfig(mlflow=True, tracking_uri=uri)
    record = MlflowRecord(run, settings, "tiny")
    assert record.sync() == 3 and record.sync() == 0
    run_id = json.loads((run / STATE).read_text())["run_id"]

    grow_run(run)  # stopped, then resumed: a new process opens the record again
    again = MlflowRecord(run, settings, "tiny")
    assert again.sync() == len(SPEC) - 3 and again.run_id == run_id
    client = MlflowClient(uri)
    kids = _children(client, run_id)
    assert sorted(kids) == [s[0] for s in SPEC]  # every candidate once
    c3 = kids["c0003"].data
    assert c3.params["operator"] == "refine" and c3.params["parents"] == "c0001"
    assert c3.metrics["P"] == pytest.approx(0.45) and c3.metrics["tokens"] == 3 * 150
    assert c3.metrics["cost_usd"] == pytest.approx(0.003) and c3.metrics["P_task.gemm_milo_A100"] == pytest.approx(0.4)
    assert kids["c0002"].data.params["error_kind"] == "runtime" and kids["c0002"].info.status == "FAILED"
    code = client.download_artifacts(kids["c0003"].info.run_id, "code/c0003.py", str(tmp_path / "dl"))
    assert "get_random_sample(20)" in open(code).read()
    best = [m.value for m in sorted(client.get_metric_history(run_id, "best_P"), key=lambda m: m.step)]
    assert best == pytest.approx([0.30, 0.30, 0.45, 0.45, 0.52, 0.52, 0.52])

    (run / "status.json").write_text(json.dumps({"state": "finished"}))
    again.close()
    closed = client.get_run(run_id)
    assert closed.info.status == "FINISHED" and closed.data.tags["tunesmith.state"] == "finished"
    assert {a.path for a in client.list_artifacts(run_id, "report")} >= {"report/report.html"}
    assert not (run / "report").exists()  # the report was built outside the run directory


CAMPAIGN = """
    name = "recorded"
    [llm]
    model = "synth/components"
    seed = 1
    [evolution]
    n_parents = 1
    n_offspring = 1
    budget = {budget}
    seed = 1
    [tasks]
    train = ["problem:gemm/H200"]
    [evaluation]
    repeats = 1
    timeout = 20
    [output]
    run_dir = "{run}"
    [record]
    mlflow = true
"""


def test_run_and_resume_commands_record_one_mlflow_run(tmp_path):
    run = tmp_path / "runs" / "r1"
    config = tmp_path / "c.toml"
    config.write_text(textwrap.dedent(CAMPAIGN.format(budget=1, run=run)))
    assert main(["run", str(config), "--no-progress"]) == 0
    state = json.loads((run / STATE).read_text())
    assert state["tracking_uri"] == f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}"  # beside the run directory
    assert main(["resume", str(run), "--budget", "2", "--no-progress"]) == 0
    assert json.loads((run / STATE).read_text())["run_id"] == state["run_id"]
    client = MlflowClient(state["tracking_uri"])
    assert sorted(_children(client, state["run_id"])) == ["c0001", "c0002"]
    campaign = client.get_run(state["run_id"])
    assert campaign.info.status == "FINISHED" and campaign.data.params["evolution.n_parents"] == "1"
    assert len(client.get_metric_history(state["run_id"], "best_P")) == 2


def test_a_missing_mlflow_is_named_before_anything_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "mlflow", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "mlflow.tracking", None)
    run = tmp_path / "r"
    config = tmp_path / "c.toml"
    config.write_text(textwrap.dedent(CAMPAIGN.format(budget=2, run=run)))
    assert main(["run", str(config), "--no-progress"]) != 0
    err = capsys.readouterr().err
    assert "pip install 'tunesmith[mlflow]'" in err and err.count("\n") == 1
    assert not run.exists()
