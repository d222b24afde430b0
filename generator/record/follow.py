"""`recording(...)`: follow a campaign's run directory while it runs and send new candidates to the record.

A thread looks at the archive every `interval` seconds and sends the candidates it has not sent; when
the campaign ends (finished, stopped, Ctrl-C) one last look sends the rest and closes the record
with the run's state, plus the report when the run finished. A record that fails (a tracking server
gone) is warned about once and the campaign goes on: the record is a copy, the run directory the truth.
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager, nullcontext
from pathlib import Path

from generator.archive import Archive
from generator.config import RecordConfig, campaign_file, load_config
from generator.errors import TunesmithError

INTERVAL_S = 2.0


def settings_for(config=None, run_dir=None) -> tuple[RecordConfig, Path, str]:
    """The [record] settings, run directory and campaign name of `tunesmith run CONFIG` or `resume RUN_DIR`."""
    if config is not None:
        cfg = load_config(campaign_file(config))
        return cfg.record, Path(run_dir or cfg.output.run_dir), cfg.name
    stored = Archive.open(run_dir).stored
    record = RecordConfig.model_validate(stored.as_dict().get("record") or {})
    return record, Path(run_dir), stored.name or "campaign"


def recording(config=None, run_dir=None, interval: float = INTERVAL_S):
    """A context around a campaign that records it where [record] says (nothing when it says nothing).

    A campaign file or run directory that cannot be read records nothing here: the campaign itself
    then refuses it, with its own message, as without a record."""
    try:
        settings, run_dir, name = settings_for(config, run_dir)
    except TunesmithError:
        return nullcontext()
    if not settings.mlflow:
        return nullcontext()
    from generator.record.mlflow_record import MlflowRecord

    record = MlflowRecord(run_dir, settings, name)  # a missing MLflow or a bad URI fails here, before the run
    return _following(record, interval)


@contextmanager
def _following(record, interval: float):
    stop = threading.Event()
    failed: list[str] = []

    def sync() -> None:
        try:
            record.sync()
        except Exception as exc:  # noqa: BLE001  (the record is a copy: its failure must not stop the campaign)
            if not failed:
                print(f"tunesmith: warning: MLflow record: {str(exc).splitlines()[0][:300]}", file=sys.stderr)
            failed.append(str(exc))

    def loop() -> None:
        while not stop.wait(interval):
            sync()

    thread = threading.Thread(target=loop, name="tunesmith-record", daemon=True)
    thread.start()
    try:
        yield record
    finally:
        stop.set()
        thread.join(timeout=interval + 5)
        sync()
        try:
            record.close()
        except Exception as exc:  # noqa: BLE001  (as in sync: a broken record never hides the campaign's result)
            print(f"tunesmith: warning: MLflow record not closed: {str(exc).splitlines()[0][:300]}", file=sys.stderr)
