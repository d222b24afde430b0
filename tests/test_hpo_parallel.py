"""Parallel HPO: two worker processes on one Optuna study lose no trial and run none twice.

Until `tunesmith hpo` lands this drives Optuna directly with the storage and study settings that
`hpo.py` uses (a storage URL, a named study, load_if_exists), so what it checks is the storage's
guarantee that parallel workers rely on.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

optuna = pytest.importorskip("optuna")

TRIALS_PER_WORKER = 6

# One HPO worker: joins the study, runs its trials, logs each objective call (trial number, pid).
WORKER = textwrap.dedent(
    """
    import os, sys, time
    import optuna
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    url, log, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    storage = JournalStorage(JournalFileBackend(url[len("journal:"):])) if url.startswith("journal:") else url
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name="hpo", storage=storage, load_if_exists=True,
                                sampler=optuna.samplers.TPESampler(seed=os.getpid()))

    def objective(trial):
        x = trial.suggest_float("x", -2.0, 2.0)
        with open(log, "a") as f:
            f.write(f"{trial.number} {os.getpid()}\\n")
        time.sleep(0.05)  # long enough that the two workers' trials interleave
        return x * x

    study.optimize(objective, n_trials=n)
    """
)


def _storage_url(kind: str, tmp_path: Path) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'hpo.db'}"
    return f"journal:{tmp_path / 'hpo.journal'}"


def _load(url: str):
    if url.startswith("journal:"):
        from optuna.storages.journal import JournalFileBackend, JournalStorage

        return optuna.load_study(study_name="hpo", storage=JournalStorage(JournalFileBackend(url[8:])))
    return optuna.load_study(study_name="hpo", storage=url)


@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_two_workers_one_study(kind, tmp_path):
    """Two processes at once: trial numbers unique, count == requested, each objective ran once."""
    url = _storage_url(kind, tmp_path)
    log = tmp_path / "calls.log"
    # Create the study first so the two workers race on trials, not on study creation.
    subprocess.run([sys.executable, "-c", WORKER, url, str(log), "0"], check=True, timeout=60)
    workers = [
        subprocess.Popen([sys.executable, "-c", WORKER, url, str(log), str(TRIALS_PER_WORKER)])
        for _ in range(2)
    ]
    assert [w.wait(timeout=90) for w in workers] == [0, 0]

    trials = _load(url).get_trials(deepcopy=False)
    requested = 2 * TRIALS_PER_WORKER
    assert len(trials) == requested
    assert sorted(t.number for t in trials) == list(range(requested))
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in trials)
    calls = [line.split() for line in log.read_text().splitlines()]
    assert sorted(int(n) for n, _ in calls) == list(range(requested))  # each trial ran exactly once
    assert len({pid for _, pid in calls}) == 2  # both workers took part
