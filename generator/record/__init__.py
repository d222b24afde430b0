"""Recording a campaign elsewhere as it runs: MLflow, an optional extra (`pip install 'tunesmith[mlflow]'`).

The record follows the run directory as `tunesmith serve` does: it reads what the archive holds and
sends what it has not sent yet, so the campaign loop knows nothing of it and a resumed run continues
the same MLflow run (its id is kept in RUN_DIR/mlflow.json). `recording(...)` wraps a campaign
(`tunesmith run` and `resume` use it); `mlflow_record.MlflowRecord` is the MLflow side.
May import the archive, config and review rooms; nothing imports it but the command line.
"""

from generator.record.follow import recording

__all__ = ["recording"]
