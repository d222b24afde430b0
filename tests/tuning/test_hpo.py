"""HPO: search spaces from declarations, studies through the sandbox, resume, pruning, shared storage."""

import json
import threading
import types

import optuna
import pytest

import generator.tuning.hpo as hpo
from generator.archive import Archive, Candidate
from generator.cli import main
from generator.tuning.results import format_result
from generator.tuning.study import trial_counts

SOURCE = '''import numpy as np


class SampleThenDescend:
    """Random sample, then descent from its best; a crash switch to see failed trials."""

    hyperparameters = {
        "sample": {"type": "int", "low": 1, "high": 32, "default": 8},
        "method": {"type": "categorical", "choices": ["Hamming", "adjacent"], "default": "Hamming"},
        "crash": {"type": "categorical", "choices": [False, True], "default": False},
    }

    def __init__(self, budget=5000, sample=8, method="Hamming", crash=False):
        self.sample, self.method, self.crash = sample, method, crash

    def __call__(self, func, searchspace):
        if self.crash:
            raise RuntimeError("crash switch")
        while True:
            x = min(searchspace.get_random_sample(self.sample), key=func)
            fx = func(x)
            better = True
            while better:
                better = False
                for n in searchspace.get_neighbors(x, neighbor_method=self.method):
                    if func(n) < fx:
                        x, fx, better = n, func(n), True
'''


def make_run(root, hub_dir, test=True):
    tasks = {
        "hub": str(hub_dir),
        "train": ["hub:convolution_milo/A100"],
        "test": ["hub:convolution_milo/A4000"] if test else [],
    }
    archive = Archive.create(
        root / "run", {"name": "hpo-unit", "tasks": tasks, "evaluation": {"timeout": 60, "workers": 1}}
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


def test_distributions_follow_the_declaration():
    d = hpo.distributions(
        {
            "a": {"type": "int", "low": 1, "high": 9, "default": 2},
            "b": {"type": "log", "low": 1e-3, "high": 1.0, "default": 0.1},
            "c": {"type": "float", "low": 0.0, "high": 1.0, "step": 0.25, "default": 0.5},
            "d": {"type": "categorical", "choices": ["x", "y"], "default": "x"},
        }
    )
    assert d["a"] == optuna.distributions.IntDistribution(1, 9)
    assert d["b"].log and d["c"].step == 0.25 and d["d"].choices == ("x", "y")
    with pytest.raises(hpo.HpoError, match="'e'"):
        hpo.distributions({"e": {"type": "int", "low": 1}})


def test_distributions_refuse_values_that_are_not_bounded_json_scalars():
    """Issue 39: bytes choices (and ints too long for JSON) crashed `tunesmith hpo` and a campaign's HPO
    stage on JSON encoding; they are the candidate's failure, in one line, before a study opens."""
    for spec in (
        {"type": "categorical", "choices": [b"a", b"b"], "default": b"a"},
        {"type": "int", "low": 1, "high": 10**3700, "default": 10**3700},
    ):
        with pytest.raises(hpo.HpoError, match="candidate 7: hyperparameter 'w': ") as err:
            hpo.distributions({"w": spec}, "candidate 7")
        assert "\n" not in str(err.value) and len(str(err.value)) < 200


def test_hpo_cli_tunes_through_the_sandbox_and_resumes(tmp_path, hub_dir, capsys):
    run = make_run(tmp_path, hub_dir)
    assert main(["hpo", str(run), "--trials", "3", "--repeats", "1", "--report-repeats", "1", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "c0001 (SampleThenDescend)" in out and "train P" in out
    assert "test  P" not in out  # the test set is sealed: the campaign opens it once, after its final choice
    result = hpo.load_results(run)["c0001"]
    assert result.trials["complete"] + result.trials["failed"] == 3
    assert result.train.tasks == ["convolution_milo/A100"] and result.test is None
    assert result.train.before is not None and result.report_repeats == 1
    study = optuna.load_study(study_name=result.study_name, storage=f"sqlite:///{run / 'hpo.db'}")
    assert study.trials[0].params == {"sample": 8, "method": "Hamming", "crash": False}  # defaults first
    assert "score:convolution_milo/A100" in study.trials[0].user_attrs

    # a second call with a larger budget resumes the same study: one more trial, not four
    settings = hpo.HpoSettings(trials=4, repeats=1, report_repeats=1)
    [again] = hpo.run_hpo(run, settings, progress=False)
    assert len(optuna.load_study(study_name=result.study_name, storage=result.storage).trials) == 4
    assert again.study_name == result.study_name
    assert json.loads((run / "hpo" / "c0001.json").read_text())["trials"]["requested"] == 4


def test_failing_trial_is_recorded_not_fatal(tmp_path, hub_dir):
    run = make_run(tmp_path, hub_dir, test=False)
    archive = Archive.open(run)
    train, _ = hpo.task_sets(archive)
    dists = hpo.distributions(hpo.parse_optimizer(SOURCE).hyperparameters)
    study = optuna.create_study(direction="maximize")
    study.enqueue_trial({"sample": 4, "method": "Hamming", "crash": True})
    objective = hpo.make_objective(SOURCE, dists, train, hpo.HpoSettings(repeats=1), timeout_s=60, workers=1)
    study.optimize(objective, n_trials=1)
    [trial] = study.trials
    assert trial.state == optuna.trial.TrialState.FAIL
    assert "crash switch" in trial.user_attrs["error"]


def _fake_evaluate(delay=0.0):
    """Stands in for the sandbox where only Optuna's bookkeeping is under test: P = -|sample - 20| / 20."""

    def evaluate(source, tasks, repeats, seed, timeout_s, params, workers):
        import time

        time.sleep(delay)
        params = params or {"sample": 8}
        score = -abs(params["sample"] - 20) / 20 - 0.1 * tasks[0].name.endswith("A4000")
        per = {t.name: types.SimpleNamespace(score=score) for t in tasks}
        return types.SimpleNamespace(score=score, per_task=per, error=None)

    return evaluate


def test_pruner_sees_one_value_per_task(tmp_path, monkeypatch):
    monkeypatch.setattr(hpo, "_evaluate", _fake_evaluate())
    tasks = [types.SimpleNamespace(name=n) for n in ("a/A100", "b/A100", "c/A4000")]
    dists = {"sample": optuna.distributions.IntDistribution(1, 32)}
    study = optuna.create_study(
        direction="maximize",
        sampler=optuna.samplers.RandomSampler(seed=0),
        pruner=optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=0),
    )
    study.optimize(hpo.make_objective("", dists, tasks, hpo.HpoSettings(), 60, 1), n_trials=25)
    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    pruned = [t for t in study.trials if t.state == optuna.trial.TrialState.PRUNED]
    assert pruned and all(len(t.intermediate_values) < 3 for t in pruned)
    assert all(sorted(t.intermediate_values) == [0, 1, 2] for t in complete)


def test_processes_on_one_storage_share_the_trial_budget(tmp_path, hub_dir, monkeypatch):
    """Two workers (threads here; `tunesmith hpo` processes in use) run 8 trials between them, not 16."""
    monkeypatch.setattr(hpo, "_evaluate", _fake_evaluate(delay=0.05))
    run = make_run(tmp_path, hub_dir, test=False)
    archive = Archive.open(run)
    train, _ = hpo.task_sets(archive)
    dists = hpo.distributions(hpo.parse_optimizer(SOURCE).hyperparameters)

    errors, ran = [], []

    def worker(i):
        try:
            settings = hpo.HpoSettings(trials=8, worker=i)
            hpo.run_study(run, "c0001", SOURCE, dists, train, settings, 60, 1, progress=False)
            ran.append(i)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and sorted(ran) == [0, 1]
    study = optuna.load_study(study_name=hpo.study_name(run, "c0001"), storage=hpo.storage_url(run, None))
    assert 8 <= len(study.trials) <= 9  # a trial may start in the instant between count and create
    assert sum(t.params == {"sample": 8, "method": "Hamming", "crash": False} for t in study.trials) >= 1


def _evaluate_where_validation_disagrees(source, tasks, repeats, seed, timeout_s, params, workers):
    """Training (convolution) prefers sample 20, the validation space (dedispersion) the default 8."""
    sample = (params or {"sample": 8})["sample"]
    best = 8 if tasks[0].name.startswith("dedispersion") else 20
    score = -abs(sample - best) / 20
    return types.SimpleNamespace(
        score=score, per_task={t.name: types.SimpleNamespace(score=score) for t in tasks}, error=None
    )


@pytest.mark.parametrize(
    "validation, kept", [("hub:dedispersion_milo/A100", False), ("hub:convolution_milo/A4000", True)]
)
def test_tuned_values_are_kept_only_when_they_win_on_the_validation_tasks_too(
    tmp_path, hub_dir, monkeypatch, validation, kept
):
    monkeypatch.setattr(hpo, "_evaluate", _evaluate_where_validation_disagrees)
    run = make_run(tmp_path, hub_dir, test=False)
    config = json.loads((run / "config.json").read_text())
    config["tasks"]["validation"] = [validation]
    (run / "config.json").write_text(json.dumps(config))
    [result] = hpo.run_hpo(run, hpo.HpoSettings(trials=8, repeats=1, report_repeats=1, seed=3), progress=False)
    assert result.best_params["sample"] != 8 and result.train.after > result.train.before  # tuning won on training
    assert result.validation.tasks == [validation.split(":")[1]]
    assert result.accepted is kept
    assert result.chosen_params["sample"] == (result.best_params["sample"] if kept else 8)
    assert hpo.load_results(run)["c0001"].validation == result.validation  # written and read back
    assert ("valid" in format_result(result)) and (("defaults kept" in format_result(result)) is not kept)


@pytest.mark.parametrize(
    "flags",
    [
        ["--repeats", "0"],
        ["--trials", "0"],
        ["--trials", "-3"],
        ["--top", "0"],
        ["--report-repeats", "0"],
        ["--worker", "-1"],
    ],
)
def test_counts_below_one_are_refused_in_one_line_before_a_study_is_opened(flags, tmp_path, hub_dir, capsys):
    """Issue 40, item 3: --repeats 0 once printed Optuna's traceback and left a failed trial in hpo.db,
    --trials 0 and -3 exited 0, --top 0 said 'no candidate succeeded yet'."""
    run = make_run(tmp_path, hub_dir, test=False)
    assert main(["hpo", str(run), *flags, "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"tunesmith: error: {flags[0]} {flags[1]}: give "), err
    assert not (run / "hpo.db").exists() and not (run / "hpo").exists()


def test_a_trial_that_raises_counts_as_failed_not_as_interrupted(tmp_path, hub_dir, monkeypatch):
    """Issue 40, item 3: a trial whose evaluation raised was reported as interrupted and run again, so the
    report said '0 failed trials' while the database held failed trials."""

    def broken(*args, **kwargs):
        raise RuntimeError("evaluation broke")

    monkeypatch.setattr(hpo, "_evaluate", broken)
    run = make_run(tmp_path, hub_dir, test=False)
    train, _ = hpo.task_sets(Archive.open(run))
    dists = hpo.distributions(hpo.parse_optimizer(SOURCE).hyperparameters)
    with pytest.raises(RuntimeError, match="evaluation broke"):
        hpo.run_study(run, "c0001", SOURCE, dists, train, hpo.HpoSettings(trials=2), 60, 1, progress=False)
    study = optuna.load_study(study_name=hpo.study_name(run, "c0001"), storage=hpo.storage_url(run, None))
    counts = trial_counts(study)
    assert counts["failed"] == 1 and counts["interrupted"] == 0, counts
    assert "evaluation broke" in study.trials[0].user_attrs["error"]


def test_the_hpo_storage_uses_optunas_current_heartbeat_callback_and_hides_no_deprecation(tmp_path):
    """Issue 40, item 16: the storage was opened with RetryFailedTrialCallback and failed_trial_callback=, both
    deprecated since Optuna 4.9, with every warning silenced; only the heartbeat's ExperimentalWarning is."""
    import warnings

    from generator.tuning.storage import open_storage

    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        warnings.simplefilter("error", DeprecationWarning)
        storage = open_storage(f"sqlite:///{tmp_path / 'hpo.db'}", heartbeat=5)
    callback = storage.heartbeat_stale_trial_callback
    assert type(callback) is optuna.storages.RetryHeartbeatStaleTrialCallback, type(callback)


def test_the_final_scoring_after_the_trials_says_what_it_does(tmp_path, hub_dir, monkeypatch, capsys):
    """Issue 40, item 13: after the trials' bar came tens of seconds of runs without a word."""
    monkeypatch.setattr(hpo, "_evaluate", _evaluate_where_validation_disagrees)
    run = make_run(tmp_path, hub_dir, test=False)
    hpo.run_hpo(run, hpo.HpoSettings(trials=2, repeats=1, report_repeats=3, seed=3), progress=True)
    err = capsys.readouterr().err
    assert "hpo c0001: scoring the default and the tuned values on the training tasks (3 repeats each" in err
