"""Parallel HPO: two `tunesmith hpo` processes at once on one study lose no trial and run none twice.

Each worker is the `tunesmith hpo` command (generator.cli.main) in its own process, started at the
same moment on the same run directory and storage; a thin wrapper around the objective logs every
call (trial number, pid) so the test sees what ran where, and holds each process's first trial until the
other has one, so that both take part however unevenly they start. Trials are real sandbox evaluations.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.fault_fixtures import SAMPLER_SOURCE

optuna = pytest.importorskip("optuna")

TRIALS = 4

# One HPO worker: `tunesmith hpo RUN --storage URL --trials N`, with each objective call logged.
WORKER = textwrap.dedent(
    """
    import glob, os, sys, time
    import generator.tuning.hpo as hpo
    from generator.cli import main

    run, storage, trials, log = sys.argv[1:5]
    make_objective = hpo.make_objective

    def both_started():
        # hold this process's first trial until the other process has one too (at most a minute): on a
        # loaded machine one process could otherwise import, start and finish every trial alone
        open(f"{log}.started.{os.getpid()}", "w").close()
        deadline = time.time() + 60
        while len(glob.glob(f"{log}.started.*")) < 2 and time.time() < deadline:
            time.sleep(0.05)

    def logged_objective(*args, **kwargs):
        objective = make_objective(*args, **kwargs)

        def call(trial):
            if not os.path.exists(f"{log}.started.{os.getpid()}"):
                both_started()
            value = objective(trial)
            with open(log, "a") as f:
                f.write(f"{trial.number} {os.getpid()}\\n")
            return value
        return call

    hpo.make_objective = logged_objective
    sys.exit(main(["hpo", run, "--storage", storage, "--trials", trials, "--repeats", "1", "--quiet"]))
    """
)

SOURCE = SAMPLER_SOURCE  # fast and honest: the sample size is the only hyperparameter


def _make_run(root: Path, hub_dir: Path) -> Path:
    from generator.archive import Archive, Candidate

    tasks = {"hub": str(hub_dir), "train": ["hub:convolution_milo/A100"], "test": []}
    archive = Archive.create(
        root / "run", {"name": "hpo-parallel", "tasks": tasks, "evaluation": {"timeout": 60, "workers": 1}}
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


@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_two_hpo_processes_share_one_study(kind, tmp_path, hub_dir):
    """Trial numbers unique, trials that count == requested, each one evaluated exactly once."""
    import generator.tuning.hpo as hpo
    from generator.tuning.storage import open_storage
    from generator.tuning.study import counted

    run = _make_run(tmp_path, hub_dir)
    storage = f"sqlite:///{tmp_path / 'hpo.db'}" if kind == "sqlite" else f"journal:{tmp_path / 'hpo.journal'}"
    log = tmp_path / "calls.log"
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(run), storage, str(TRIALS), str(log)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [w.communicate(timeout=150)[0] for w in workers]
    assert [w.returncode for w in workers] == [0, 0], outputs

    study = optuna.load_study(study_name=hpo.study_name(run, "c0001"), storage=open_storage(storage))
    trials = study.get_trials(deepcopy=False)
    numbers = [t.number for t in trials]
    assert len(set(numbers)) == len(numbers)
    counted = [t for t in trials if counted(t)]
    assert len(counted) == TRIALS  # none lost, none over the budget
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in counted)

    calls = [line.split() for line in log.read_text().splitlines()]
    ran = sorted(int(n) for n, _ in calls)
    assert len(set(ran)) == len(ran)  # no trial evaluated twice
    assert sorted(t.number for t in counted) == [n for n in ran if n in {t.number for t in counted}]
    assert len({pid for _, pid in calls}) == 2  # both processes took trials
    defaults = [t for t in counted if t.params == {"batch": 8}]
    assert len(defaults) >= 1  # the declared defaults were tried first


def test_surplus_trials_are_not_evaluated_or_counted(monkeypatch):
    """The races two processes can lose: a trial created after the budget is full, a second copy of
    the enqueued defaults. Such a trial fails without an "error" (uncounted) and is never evaluated."""
    import types

    import generator.tuning.hpo as hpo
    from generator.tuning.study import counted

    calls = []

    def evaluate(source, tasks, repeats, seed, timeout_s, params, workers):
        calls.append(dict(params))
        return types.SimpleNamespace(
            score=params["batch"] / 64, error=None, per_task={t.name: types.SimpleNamespace(score=0.0) for t in tasks}
        )

    monkeypatch.setattr(hpo, "_evaluate", evaluate)
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    dists = {"batch": optuna.distributions.IntDistribution(1, 64)}
    task = types.SimpleNamespace(name="conv/A100")
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0))
    study.enqueue_trial({"batch": 8})
    study.enqueue_trial({"batch": 8}, skip_if_exists=False)  # both processes enqueued the defaults
    objective = hpo.make_objective(SOURCE, dists, [task], hpo.HpoSettings(trials=3, repeats=1), 60, 1)
    study.optimize(objective, n_trials=5)  # two more than the budget: as if the other process raced us

    states = [(t.number, t.state.name, counted(t)) for t in study.trials]
    assert states == [
        (0, "COMPLETE", True),
        (1, "FAIL", False),
        (2, "COMPLETE", True),
        (3, "COMPLETE", True),
        (4, "FAIL", False),
    ]
    assert len(calls) == 3 and calls[0] == {"batch": 8}
    assert all(study.trials[i].user_attrs.get("surplus") for i in (1, 4))


def test_a_queued_trial_another_process_finished_first_is_not_an_error(tmp_path, hub_dir, monkeypatch):
    """Two processes popped the same queued trial (SQLite, under load): the one that tells second goes on."""
    import optuna

    from generator.tuning.hpo import run_hpo
    from generator.tuning.settings import HpoSettings

    run = _make_run(tmp_path, hub_dir)
    optimize, lost = optuna.Study.optimize, []

    def loses_the_race_once(study, objective, n_trials=None, catch=()):
        if lost:
            return optimize(study, objective, n_trials=n_trials, catch=catch)
        lost.append(True)

        def finished_elsewhere(trial):
            value = objective(trial)
            study._storage.set_trial_state_values(trial._trial_id, optuna.trial.TrialState.COMPLETE, [value])
            return value  # this process's tell now finds the trial COMPLETE, as in the race

        return optimize(study, finished_elsewhere, n_trials=n_trials, catch=catch)

    monkeypatch.setattr(optuna.Study, "optimize", loses_the_race_once)
    (result,) = run_hpo(
        run,
        HpoSettings(trials=2, repeats=1, report_repeats=1, storage=f"sqlite:///{tmp_path / 'hpo.db'}"),
        progress=False,
    )
    assert lost and result.trials["complete"] == 2, result.trials
