"""An HPO trial killed by kill -9 is run again when the study resumes (issue 15, item 6).

It used to be lost: on restart the stale RUNNING trial still counted toward --trials (or, once
Optuna's heartbeat failed it, its retry waited forever and counted), so the study ended with fewer
finished trials than asked and said nothing. The worker here is the real `tunesmith hpo` command in
its own process, killed with SIGKILL in the middle of a trial; the evaluation is a stand-in that
sleeps, since only Optuna's bookkeeping is under test.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from support.fault_fixtures import ROOT, SAMPLER_SOURCE

optuna = pytest.importorskip("optuna")

TRIALS = 4

WORKER = textwrap.dedent(
    """
    import os, sys, time, types
    import generator.tuning.hpo as hpo
    from generator.cli import main

    run, storage, log, delay = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])

    def evaluate(source, tasks, repeats, seed, timeout_s, params, workers):
        with open(log, "a") as f:
            f.write(f"evaluate {params}\\n")
        time.sleep(delay)
        score = -abs((params or {"batch": 8})["batch"] - 20) / 20
        return types.SimpleNamespace(score=score, error=None,
                                     per_task={t.name: types.SimpleNamespace(score=score) for t in tasks})

    make_objective = hpo.make_objective

    def logged_objective(*args, **kwargs):
        objective = make_objective(*args, **kwargs)

        def call(trial):
            with open(log, "a") as f:
                f.write(f"start {trial.number} {os.getpid()}\\n")
            return objective(trial)
        return call

    hpo._evaluate, hpo.make_objective = evaluate, logged_objective
    sys.exit(main(["hpo", run, "--storage", storage, "--trials", sys.argv[5], "--repeats", "1",
                   "--report-repeats", "1", "--quiet"]))
    """
)

SOURCE = SAMPLER_SOURCE  # fast and honest: the sample size is the only hyperparameter


def _make_run(root, hub_dir):
    from generator.archive import Archive, Candidate

    tasks = {"hub": str(hub_dir), "train": ["hub:convolution_milo/A100"], "test": []}
    archive = Archive.create(
        root / "run", {"name": "hpo-killed", "tasks": tasks, "evaluation": {"timeout": 60, "workers": 1}}
    )
    archive.append_candidate(
        Candidate(
            id="c0001",
            generation=0,
            operator="new",
            code_path=archive.write_code("c0001", SOURCE),
            fitness={"score": 0.3, "per_task": {}},
        )
    )
    return archive.run_dir


def _worker(run, storage, log, delay):
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, str(run), storage, str(log), str(delay), str(TRIALS)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_trial_killed_by_sigkill_is_run_again_and_reported(kind, tmp_path, hub_dir):
    import generator.tuning.hpo as hpo
    from generator.tuning.storage import open_storage

    run = _make_run(tmp_path, hub_dir)
    storage = f"sqlite:///{tmp_path / 'hpo.db'}" if kind == "sqlite" else f"journal:{tmp_path / 'hpo.journal'}"
    log = tmp_path / "calls.log"
    worker = _worker(run, storage, log, delay=0.3)
    deadline = time.monotonic() + 120
    # kill while the third trial is being evaluated
    while "evaluate" not in (log.read_text() if log.exists() else "").partition("start 2 ")[2]:
        assert worker.poll() is None and time.monotonic() < deadline, worker.communicate()
        time.sleep(0.02)
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait(10)

    again = _worker(run, storage, log, delay=0.0)  # restarted at once: well inside Optuna's grace period
    out, _ = again.communicate(timeout=120)
    assert again.returncode == 0, out

    study = optuna.load_study(study_name=hpo.study_name(run, "c0001"), storage=open_storage(storage))
    trials = study.get_trials(deepcopy=False)
    states = [t.state.name for t in trials]
    assert "RUNNING" not in states and "WAITING" not in states, states
    killed = trials[2]
    assert killed.state.name == "FAIL" and "error" not in killed.user_attrs
    retries = [t for t in trials if t.system_attrs.get("failed_trial") == 2]
    assert len(retries) == 1 and retries[0].state.name == "COMPLETE" and retries[0].params == killed.params
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    assert len(complete) == TRIALS  # as many finished trials as asked, the killed one among them
    started = [line.split()[1] for line in log.read_text().splitlines() if line.startswith("start")]
    assert started.count(str(retries[0].number)) == 1

    result = hpo.load_results(run)["c0001"]
    assert result.trials["complete"] == TRIALS and result.trials["failed"] == 0
    assert result.trials["interrupted"] == 1
    assert "1 interrupted and run again" in out, out
