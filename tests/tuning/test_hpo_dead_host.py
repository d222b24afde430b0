"""HPO on one storage when a process on another host dies mid-trial (issue 27, item 5).

The dead process is a real one (killed with SIGKILL) whose trial names an owner on another host, so
the same-host recovery (generator.tuning.recovery) cannot tell it is gone: only Optuna's heartbeat
can. The survivor must not count that RUNNING trial toward --trials: on SQLite the heartbeat fails it
and RetryHeartbeatStaleTrialCallback queues it again; journal storage has no heartbeat, and the survivor says so.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from support.fault_fixtures import SAMPLER_SOURCE

optuna = pytest.importorskip("optuna")

TRIALS = 3
HEARTBEAT = 1.0

# A process on "another host": opens the study, starts a trial, then hangs in it until killed.
DEAD = textwrap.dedent(
    """
    import sys, time
    import optuna
    from generator.tuning.storage import open_storage
    from generator.tuning.recovery import OWNER

    url, name, heartbeat = sys.argv[1], sys.argv[2], float(sys.argv[3])
    study = optuna.create_study(study_name=name, storage=open_storage(url, heartbeat), direction="maximize",
                                load_if_exists=True)

    def objective(trial):
        trial.storage.set_trial_system_attr(trial._trial_id, OWNER, "another-host 4242 1")
        print("running", flush=True)
        time.sleep(3600)

    study.optimize(objective, n_trials=1)
    """
)


def _make_run(root, hub_dir):
    from generator.archive import Archive, Candidate

    tasks = {"hub": str(hub_dir), "train": ["hub:convolution_milo/A100"], "test": []}
    archive = Archive.create(
        root / "run", {"name": "hpo-dead-host", "tasks": tasks, "evaluation": {"timeout": 60, "workers": 1}}
    )
    archive.append_candidate(
        Candidate(
            id="c0001",
            generation=0,
            operator="new",
            code_path=archive.write_code("c0001", SAMPLER_SOURCE),
            fitness={"score": 0.3, "per_task": {}},
        )
    )
    return archive.run_dir


def _die_in_a_trial(url: str, name: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", DEAD, url, name, str(HEARTBEAT)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout.readline().strip() == "running"  # "" if it died before its trial started
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    time.sleep(2 * HEARTBEAT)  # it has beaten: its trial looks alive until the beats stop
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)


@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_a_trial_of_a_dead_process_on_another_host_is_not_counted(kind, tmp_path, hub_dir, capsys):
    from generator.tuning.hpo import run_hpo
    from generator.tuning.settings import HpoSettings
    from generator.tuning.study import study_name

    run = _make_run(tmp_path, hub_dir)
    url = f"sqlite:///{tmp_path / 'hpo.db'}" if kind == "sqlite" else f"journal:{tmp_path / 'hpo.journal'}"
    # With a heartbeat, Optuna's own check in study.optimize fails the dead trial once its grace is over,
    # and then nobody has to wait; one trial in all leaves this process nothing to run first, so it
    # always waits (and says so) until the heartbeat fails the dead trial.
    trials = 1 if kind == "sqlite" else TRIALS
    _die_in_a_trial(url, study_name(run, "c0001"))

    start = time.monotonic()
    (result,) = run_hpo(
        run, HpoSettings(trials=trials, repeats=1, storage=url, heartbeat=HEARTBEAT, report_repeats=1), progress=False
    )
    took = time.monotonic() - start
    err = capsys.readouterr().err
    # the owner in words (it read '(another-host 4242 1)': host, process id and start time, unexplained)
    assert "waiting for 1 trial(s) running in other processes (process 4242 on another-host)" in err
    if kind == "sqlite":  # the heartbeat failed it, the callback queued it again: N trials finished
        assert result.trials["complete"] == trials, result.trials
        study = optuna.load_study(study_name=study_name(run, "c0001"), storage=url)
        retried = [t for t in study.trials if t.system_attrs.get("failed_trial") is not None]
        assert len(retried) == 1 and retried[0].state == optuna.trial.TrialState.COMPLETE
    else:  # no heartbeat: said plainly, and not counted as finished
        assert result.trials["complete"] == TRIALS - 1, result.trials
        assert "1 trial(s) still RUNNING may belong to a dead process" in err
    assert took < 120
