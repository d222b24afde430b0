"""A campaign as one MLflow run, each candidate as a nested run under it.

The campaign's run holds the configuration as parameters (flattened, `evolution.n_parents`, ...) and,
per candidate in generation order (step = its position), the metrics `P`, `best_P`, `tokens_total`,
`cost_usd_total` and `failed_total`; at the end the report (`report/report.html` with its figures).
Each candidate's nested run (named by its id, tag `tunesmith.candidate`) holds its operator, parents,
generation, model, error kind and duplicate as parameters; its P, SE, runs, per-task P (`P_task.<task>`), tokens,
cost and timings as metrics; its code as `code/<id>.py`.

RUN_DIR/mlflow.json keeps the tracking URI, experiment and run id, so `tunesmith resume` continues
the same MLflow run. Which candidates were sent is read back from MLflow itself (the nested runs'
tags) when the record opens, so a crash between sending a candidate and noting it sends nothing twice.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from generator.archive import CANDIDATES, EXCHANGES, RACES, Archive, Candidate, write_atomic
from generator.config import RecordConfig
from generator.errors import TunesmithError

STATE = "mlflow.json"
CANDIDATE_TAG = "tunesmith.candidate"
PARENT_TAG = "mlflow.parentRunId"
MAX_PARAM = 500  # characters of a parameter value kept (MLflow's own limit is larger; this keeps them readable)


def default_uri(run_dir: Path) -> str:
    """sqlite:///PARENT/mlflow.db: one local store for the runs that sit side by side in PARENT."""
    return f"sqlite:///{Path(run_dir).resolve().parent / 'mlflow.db'}"


def _import_mlflow():
    # MLflow 3 reports its use to its makers unless told not to; Tunesmith sends nothing anywhere unasked
    # (MLFLOW_DISABLE_TELEMETRY=false in the environment turns it back on)
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    try:
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise TunesmithError(
            "[record] mlflow = true needs MLflow, which is not installed; pip install 'tunesmith[mlflow]' "
            "(or set mlflow = false)"
        ) from None
    return MlflowClient


def metric_name(text: str) -> str:
    """A metric name every MLflow store takes: letters, digits, _ - . ('P_task.gemm_milo_A100'; no '/', which
    the file store makes a folder, clashing with a metric of the folder's name)."""
    return re.sub(r"[^A-Za-z0-9_\-.]", "_", text)


class MlflowRecord:
    """The MLflow side of a campaign's record; `sync()` sends what the archive holds and MLflow not."""

    def __init__(self, run_dir, settings: RecordConfig, name: str):
        self.run_dir = Path(run_dir)
        state = self._state()
        self.uri = state.get("tracking_uri") or settings.tracking_uri or default_uri(self.run_dir)
        self.experiment = state.get("experiment") or settings.experiment or name
        self.run_id: str | None = state.get("run_id")
        self.sent: set[str] = set()
        self._opened = False
        self._seen: tuple | None = None
        client = _import_mlflow()
        try:
            self.client = client(self.uri)
            self.experiment_id = self._experiment()
        except Exception as exc:  # MLflow raises its own and its stores' errors
            raise TunesmithError(
                f"[record] tracking_uri {self.uri!r}: MLflow refused it ({str(exc).splitlines()[0][:200]}); "
                "give a URI such as sqlite:///PATH/mlflow.db or http://HOST:5000"
            ) from None

    # -- opening --------------------------------------------------------------------------------
    def _state(self) -> dict:
        try:
            return json.loads((self.run_dir / STATE).read_text())
        except (OSError, ValueError):
            return {}

    def _experiment(self) -> str:
        found = self.client.get_experiment_by_name(self.experiment)
        if found is not None:
            return found.experiment_id
        location = None
        if self.uri.startswith("sqlite:///"):  # artifacts beside the database, not in the current folder
            location = (Path(self.uri[len("sqlite:///") :]).parent / "mlartifacts").as_uri()
        return self.client.create_experiment(self.experiment, artifact_location=location)

    def _open_run(self, archive: Archive) -> None:
        """Create the campaign's MLflow run (once; a resumed campaign finds its id in mlflow.json)."""
        if self.run_id is not None:
            self.client.update_run(self.run_id, status="RUNNING")
            self.client.set_tag(self.run_id, "tunesmith.resumed", "true")
            self.sent = self._sent_before()
            return
        stored = archive.stored
        run = self.client.create_run(
            self.experiment_id,
            run_name=self.run_dir.name,
            tags={
                "tunesmith.run_dir": str(self.run_dir.resolve()),
                "tunesmith.model": stored.header.llm.model or stored.header.model,
            },
        )
        self.run_id = run.info.run_id
        write_atomic(
            self.run_dir / STATE,
            json.dumps({"tracking_uri": self.uri, "experiment": self.experiment, "run_id": self.run_id}, indent=1),
        )
        self._log_params(self.run_id, flatten(stored.as_dict()))

    def _sent_before(self) -> set[str]:
        runs = self.client.search_runs(
            [self.experiment_id], filter_string=f"tags.{PARENT_TAG} = '{self.run_id}'", max_results=50000
        )
        return {r.data.tags.get(CANDIDATE_TAG) for r in runs if r.data.tags.get(CANDIDATE_TAG)}

    def _log_params(self, run_id: str, params: dict) -> None:
        from mlflow.entities import Param

        items = [Param(k, str(v)[:MAX_PARAM]) for k, v in params.items()]
        for i in range(0, len(items), 100):  # MLflow takes at most 100 parameters per batch
            self.client.log_batch(run_id, params=items[i : i + 100])

    # -- sending --------------------------------------------------------------------------------
    def sync(self) -> int:
        """Send the candidates not sent yet (none before the run directory holds a run); returns how many."""
        if not Archive.exists(self.run_dir):
            return 0
        seen = _signature(self.run_dir)
        if seen == self._seen:  # nothing landed since the last look: the archive is not read again
            return 0
        from generator.review.lineage import Lineage

        lineage = Lineage.load(self.run_dir)
        if not self._opened:
            self._open_run(lineage.archive)
            self._opened = True
        points = lineage.convergence()
        tokens = {x.id: x for x in lineage.exchanges}
        new = 0
        for step, (point, cand) in enumerate(zip(points, lineage.candidates.values()), start=1):
            if cand.id in self.sent:
                continue
            self._send(
                cand, step, point, tokens.get(cand.exchange_id), lineage.code(cand.id), failed=_failed(lineage, step)
            )
            self.sent.add(cand.id)
            new += 1
        self._seen = seen
        return new

    def _send(self, cand: Candidate, step: int, point, exchange, code: str | None, failed: int) -> None:
        from mlflow.entities import Metric

        child = self.client.create_run(
            self.experiment_id,
            run_name=cand.id,
            tags={PARENT_TAG: self.run_id, CANDIDATE_TAG: cand.id},
        )
        cid = child.info.run_id
        self._log_params(cid, candidate_params(cand))
        metrics = candidate_metrics(cand, exchange)
        now = int(1000 * (cand.created or 0)) or None
        self.client.log_batch(cid, metrics=[Metric(k, v, now or 0, 0) for k, v in metrics.items()])
        if code is not None:
            self.client.log_text(cid, code, f"code/{cand.id}.py")
        self.client.set_terminated(cid, status="FINISHED" if cand.ok or cand.duplicate_of else "FAILED")
        campaign = {
            "tokens_total": float(point.tokens),
            "cost_usd_total": float(point.cost_usd),
            "failed_total": failed,
        }
        if point.best is not None:
            campaign["best_P"] = float(point.best)
        if cand.score is not None:
            campaign["P"] = float(cand.score)
        self.client.log_batch(self.run_id, metrics=[Metric(k, v, now or 0, step) for k, v in campaign.items()])

    def close(self) -> None:
        """End the campaign's MLflow run with the run's state; a finished run also gets its report."""
        if self.run_id is None:
            return
        state = Archive.open(self.run_dir).status().get("state")
        if state == "finished":
            self.log_report()
        self.client.set_tag(self.run_id, "tunesmith.state", str(state))
        self.client.set_terminated(self.run_id, status="FINISHED" if state == "finished" else "KILLED")

    def log_report(self) -> None:
        """The HTML report and its figures, built in a temporary folder (the run directory is not written)."""
        from generator.review.report import build_report

        with tempfile.TemporaryDirectory(prefix="tunesmith-report-") as tmp:
            result = build_report(self.run_dir, os.path.join(tmp, "report.html"))
            self.client.log_artifacts(self.run_id, tmp, "report")
            return result


def _signature(run_dir: Path) -> tuple:
    """Sizes of the files a candidate's record comes from: equal means no candidate landed."""
    out = []
    for name in (CANDIDATES, EXCHANGES, RACES):
        try:
            out.append(os.stat(run_dir / name).st_size)
        except OSError:
            out.append(-1)
    return tuple(out)


def _failed(lineage, step: int) -> int:
    return sum(1 for c in list(lineage.candidates.values())[:step] if c.error)


def flatten(config: dict, prefix: str = "") -> dict:
    """The configuration as dotted keys: {'evolution.n_parents': 4, ...}."""
    out = {}
    for key, value in config.items():
        if isinstance(value, dict):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def candidate_params(c: Candidate) -> dict:
    return {
        "id": c.id,
        "operator": c.operator,
        "parents": ",".join(c.parent_ids) or "none",
        "generation": c.generation,
        "model": c.model or "",
        "error_kind": (c.error or {}).get("kind") or "none",
        "duplicate_of": c.duplicate_of or "none",
        "description": (c.description or "").strip()[:MAX_PARAM] or "none",
    }


def candidate_metrics(c: Candidate, exchange) -> dict:
    out = {
        "tokens": float(exchange.tokens if exchange else 0),
        "prompt_tokens": float(exchange.prompt_tokens if exchange else 0),
        "completion_tokens": float(exchange.completion_tokens if exchange else 0),
        "cost_usd": float(exchange.cost_usd if exchange else 0.0),
        "runs": float(c.runs),
    }
    if c.score is not None:
        out["P"] = float(c.score)
    if c.se is not None:
        out["SE"] = float(c.se)
    for task, score in c.per_task.items():
        if score is not None:
            out[metric_name(f"P_task.{task}")] = float(score)
    for key, value in (c.timings or {}).items():
        if isinstance(value, (int, float)):
            out[metric_name(f"time.{key}")] = float(value)
    return out
