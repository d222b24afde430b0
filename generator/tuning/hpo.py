"""Optuna tunes the hyperparameters that the best candidates declare; the result lands in RUN/hpo/.

One study per candidate (TPE with a seed, median pruning on per-task intermediate values, the
candidate's defaults as the first trial). The objective is the mean score P over the training
tasks, every trial evaluated through the sandbox (candidate code is untrusted) with the same
seed, so that trials differ by their hyperparameters and not by their random streams. The study
lives in an Optuna storage (SQLite in the run directory by default) under a name made from the run
and the candidate, so a crashed `tunesmith hpo` resumes, and several processes on one storage
share the trials. Afterwards the defaults and the best values are both scored again, on the
training (and validation) tasks, with a fresh seed: the tuned score is then not the maximum of
noisy trials. The test tasks are not scored here: they are sealed, opened once by the campaign after
its final choice (generator.campaign.sealed_test).
"""

from __future__ import annotations

import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import optuna

from generator.archive import Archive
from generator.candidate.source import parse_optimizer
from generator.tuning.recovery import OWNER, claim, interrupted, owner_words, quiet_interrupts, recover, same_retry
from generator.tuning.results import HPO_DIR, HpoResult, SplitScores, format_result, load_results, write_result
from generator.tuning.storage import (
    GRACE_BEATS,
    HpoError,
    check_storage,
    open_storage,
    storage_url,
)

# results live in hpo_results; they are re-exported here for `from generator.tuning.hpo import ...`
__all__ = [
    "HPO_DIR",
    "HpoError",
    "HpoResult",
    "HpoSettings",
    "SplitScores",
    "campaign_stage",
    "distributions",
    "format_result",
    "load_results",
    "run_hpo",
    "settings_from_config",
    "tune_candidate",
    "write_result",
]

REPORT_SEED_OFFSET = 7919  # the before/after scores use other random streams than the trials did


@dataclass
class HpoSettings:
    """How to tune: which candidates, how many trials, how each trial is evaluated, where it is stored."""

    top_k: int = 1
    trials: int = 30
    repeats: int = 3
    storage: str | None = None  # Optuna storage URL or journal:PATH; default sqlite:///RUN/hpo.db
    storage_origin: str = "--storage"  # where `storage` came from, for messages ("[hpo] storage" from the config)
    seed: int = 0
    ids: list[str] | None = None  # explicit candidates instead of the top K
    timeout_s: float | None = None  # per evaluation; default the campaign's evaluation.timeout
    workers: int | None = None  # sandbox workers per evaluation; default the campaign's
    worker: int | None = None  # index of this process among parallel `tunesmith hpo` processes
    report_repeats: int | None = None  # repeats of the before/after scores; default max(10, 2 * repeats)
    heartbeat: float = 30.0  # seconds between a trial's heartbeats; a silent trial is failed after GRACE_BEATS of them
    # racing (the campaign's [evaluation] racing): a trial runs min_repeats per task first, and more (up to
    # `repeats`) only while a paired t-test cannot tell it is worse than the best finished trial
    racing: bool = False
    min_repeats: int = 3
    confidence: float = 0.9


# -- the search space a candidate declares ------------------------------------------------------


def distributions(hyperparameters: dict, origin: str = "candidate") -> dict:
    """Optuna distributions for a `hyperparameters` declaration (int / float / log / categorical).

    "log" is a float searched on a log scale; int and float also take `"log": true` and `"step"`.
    """
    dists = {}
    from generator.candidate.checks import hyperparameter_values_problem

    for name, spec in hyperparameters.items():
        problem = hyperparameter_values_problem(name, spec) if isinstance(spec, dict) else None
        if problem:  # a study, its storage and the run directory keep values as JSON (issue 39)
            raise HpoError(f"{origin}: {problem}")
        try:
            dists[name] = _distribution(spec)
        except (KeyError, TypeError, ValueError) as exc:
            raise HpoError(
                f"{origin}: hyperparameter {name!r} {spec!r} is not usable ({exc}); declare "
                "{'type': 'int'|'float'|'log'|'categorical', 'low', 'high' | 'choices', 'default'}"
            ) from None
    return dists


def _distribution(spec: dict):
    kind = spec.get("type") or ("categorical" if "choices" in spec else "float")
    log = bool(spec.get("log", False)) or kind == "log"  # "log" is a float on a log scale
    if kind in ("categorical", "bool"):
        choices = spec.get("choices", [False, True] if kind == "bool" else None)
        return optuna.distributions.CategoricalDistribution(list(choices))
    if kind == "int":
        step = 1 if log else int(spec.get("step", 1))
        return optuna.distributions.IntDistribution(int(spec["low"]), int(spec["high"]), log=log, step=step)
    if kind in ("float", "log"):
        step = spec.get("step")
        return optuna.distributions.FloatDistribution(
            float(spec["low"]), float(spec["high"]), log=log, step=None if log or step is None else float(step)
        )
    raise ValueError(f"unknown type {kind!r}")


def suggest(trial: optuna.Trial, name: str, dist):
    """Ask the trial for one value of a distribution made by `distributions`."""
    if isinstance(dist, optuna.distributions.CategoricalDistribution):
        return trial.suggest_categorical(name, dist.choices)
    if isinstance(dist, optuna.distributions.IntDistribution):
        return trial.suggest_int(name, dist.low, dist.high, step=dist.step, log=dist.log)
    return trial.suggest_float(name, dist.low, dist.high, step=dist.step, log=dist.log)


def defaults(hyperparameters: dict) -> dict:
    """The declared default of every hyperparameter that has one."""
    return {name: spec["default"] for name, spec in hyperparameters.items() if "default" in spec}


# -- storage and study -------------------------------------------------------------------------


def study_name(run_dir: Path, candidate_id: str) -> str:
    """Stable per run and candidate, so that re-running resumes the same study."""
    return f"tunesmith-{Path(run_dir).resolve().name}-{candidate_id}"


def _counted(trial) -> bool:
    """Trials that use up the trial budget: finished ones, running ones, and real failures."""
    s = optuna.trial.TrialState
    if trial.state in (s.COMPLETE, s.PRUNED, s.RUNNING, s.WAITING):
        return True
    return trial.state == s.FAIL and "error" in trial.user_attrs  # not a crashed worker's stale trial


def _surplus(trial: optuna.Trial, budget: int) -> bool:
    """A trial another process made redundant: created in the instant between our count and its creation
    when the trials before it already fill the budget, or a second copy of the enqueued defaults."""
    trials = trial.study.get_trials(deepcopy=False)
    earlier = [t for t in trials if t.number < trial.number]
    if sum(_counted(t) for t in earlier) >= budget:
        return True
    this = next((t for t in trials if t.number == trial.number), None)
    if this is None:
        return False
    if any(same_retry(this, t) for t in earlier):  # two processes queued one interrupted trial again
        return True
    fixed, retried = this.system_attrs.get("fixed_params"), this.system_attrs.get("retry_history", [])
    return fixed is not None and any(
        t.system_attrs.get("fixed_params") == fixed for t in earlier if t.number not in retried
    )  # a retry repeats its original's values


def _sampler_seed(study, settings: HpoSettings) -> int:
    """The seed, moved on by the trials already there: a resumed study must not replay its random start."""
    trials = study.get_trials(deepcopy=False)
    seed = settings.seed + len(trials)
    if settings.worker is not None:
        return seed + 100_003 * settings.worker
    # another process works on this study right now: a stream of its own, or TPE repeats its trials
    running = any(t.state == optuna.trial.TrialState.RUNNING for t in trials)
    return seed + (os.getpid() if running else 0)


# -- the objective -----------------------------------------------------------------------------


def _evaluate(
    source: str,
    tasks: list,
    repeats: int,
    seed: int,
    timeout_s: float,
    params: dict | None,
    workers: int,
    first_repeat: int = 0,
):
    from generator.evaluation.evaluate import evaluate_source

    return evaluate_source(
        source,
        tasks,
        repeats=repeats,
        seed=seed,
        timeout_s=timeout_s,
        hyperparameters=params,
        workers=workers,
        first_repeat=first_repeat,
    )


def make_objective(source: str, dists: dict, train_tasks: list, settings: HpoSettings, timeout_s: float, workers: int):
    """Mean P over the training tasks, reported task by task so the pruner can stop a poor trial."""

    def objective(trial: optuna.Trial) -> float:
        claim(trial)  # if this process dies, the next one sees the trial is orphaned and runs it again
        try:
            return trial_value(trial)
        except optuna.TrialPruned:
            raise
        except Exception as exc:  # a failure of the trial, counted as failed: not an interruption run again
            trial.set_user_attr("error", f"{type(exc).__name__}: {exc}")
            raise

    def trial_value(trial: optuna.Trial) -> float:
        if _surplus(trial, settings.trials):
            trial.set_user_attr("surplus", True)  # FAIL without "error": not counted, never evaluated
            return float("nan")
        params = {name: suggest(trial, name, dist) for name, dist in dists.items()}
        if settings.racing:
            from generator.racing.trials import raced_trial

            return raced_trial(
                trial,
                lambda n, first: _evaluate(source, train_tasks, n, settings.seed, timeout_s, params, workers, first),
                settings,
            )
        scores = []
        for step, task in enumerate(train_tasks):
            fit = _evaluate(source, [task], settings.repeats, settings.seed, timeout_s, params, workers)
            if fit.error is not None or fit.score is None:
                err = fit.error
                trial.set_user_attr("error", f"{err.kind}: {err.message}" if err else "no score")
                return float("nan")  # Optuna records the trial as failed
            scores.append(float(fit.score))
            trial.set_user_attr(f"score:{task.name}", scores[-1])
            trial.report(sum(scores) / len(scores), step)
            if step + 1 < len(train_tasks) and trial.should_prune():
                raise optuna.TrialPruned()
        return sum(scores) / len(scores)

    return objective


def run_study(
    run_dir: Path,
    cid: str,
    source: str,
    dists: dict,
    train_tasks: list,
    settings: HpoSettings,
    timeout_s: float,
    workers: int,
    progress: bool = True,
) -> optuna.Study:
    """Create or resume the candidate's study and run this process's share of the trials."""
    study = optuna.create_study(
        study_name=study_name(run_dir, cid),
        storage=open_storage(storage_url(run_dir, settings.storage), settings.storage_origin, settings.heartbeat),
        direction="maximize",
        load_if_exists=True,
        pruner=_pruner(settings),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)
    recover(study)  # before the seed: a dead process's trial is not a live one to keep apart from
    study.sampler = optuna.samplers.TPESampler(seed=_sampler_seed(study, settings))
    if not study.get_trials(deepcopy=False):
        study.enqueue_trial(_default_params(dists, settings, source), skip_if_exists=True)
    objective = make_objective(source, dists, train_tasks, settings, timeout_s, workers)
    bar = _progress(progress, settings.trials, cid)
    waiting = _OthersTrials(study, settings)
    try:
        while True:
            recover(study)  # interrupted trials (a killed process, Ctrl-C) are queued again
            trials = study.get_trials(deepcopy=False)
            finished = sum(_counted(t) and t.state != optuna.trial.TrialState.RUNNING for t in trials)
            bar.n = min(finished, settings.trials)
            bar.refresh()
            queued = any(t.state == optuna.trial.TrialState.WAITING for t in trials)
            # a queued trial holds one of the N places: it is run, never left waiting
            if finished >= settings.trials and not queued:
                break
            if sum(_counted(t) for t in trials) >= settings.trials and not queued:
                # the rest of the N are RUNNING in other processes (or were left by a dead one): only
                # finished trials count, so wait for them; Optuna's heartbeat fails a dead one
                if not waiting.wait(trials):
                    break
                continue
            # one trial at a time: the count above sees the other processes' trials between them
            _optimize_one(study, objective)
    finally:
        bar.close()
    return study


def _optimize_one(study: optuna.Study, objective) -> None:
    """One trial. On SQLite two processes can pop the same queued trial (Optuna reads it WAITING and marks
    it RUNNING in two statements, and SQLite has no row lock between them); both run it, and the slower
    one's tell finds it finished. That trial has its result, so the slower process goes on with the next."""
    try:
        study.optimize(objective, n_trials=1, catch=())
    except ValueError as exc:
        if not str(exc).startswith("Cannot tell a ") or "trial" not in str(exc):
            raise


def _pruner(settings: HpoSettings):
    """Racing: a paired t-test against the best finished trial; else median pruning per task."""
    if settings.racing:
        from generator.racing.trials import RacePruner

        return RacePruner(settings.confidence)
    return optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=0)


class _OthersTrials:
    """Waiting for trials RUNNING in other processes: said once, failed by the heartbeat when stale."""

    def __init__(self, study: optuna.Study, settings: HpoSettings):
        self.study, self.settings = study, settings
        heartbeat = isinstance(study._storage, optuna.storages.RDBStorage)
        # journal storage has no heartbeat: a trial of a dead process on another host never ends by itself
        self.limit_s = (GRACE_BEATS + 2) * settings.heartbeat
        self.heartbeat, self.since = heartbeat, None

    def wait(self, trials) -> bool:
        """Wait one heartbeat for the RUNNING trials; False once waiting is pointless (reported)."""
        running = [t for t in trials if t.state == optuna.trial.TrialState.RUNNING]
        if self.since is None:
            self.since = time.monotonic()
            owners = sorted({owner_words(str(t.system_attrs.get(OWNER, "unknown owner"))) for t in running})
            how = (
                f"if its process died, Optuna's heartbeat fails it within "
                f"{GRACE_BEATS * self.settings.heartbeat:g} s and it is run again here"
                if self.heartbeat
                else "journal storage has no heartbeat, so one left by a dead process on another host stays RUNNING"
            )
            _say(
                f"study {self.study.study_name}: waiting for {len(running)} trial(s) running in other processes "
                f"({', '.join(owners)}); {how}"
            )
        if not self.heartbeat and time.monotonic() - self.since > self.limit_s:
            done = sum(_counted(t) and t.state != optuna.trial.TrialState.RUNNING for t in trials)
            _say(
                f"study {self.study.study_name}: {done} of {self.settings.trials} trials finished; "
                f"{len(running)} trial(s) still RUNNING may belong to a dead process (not counted); "
                "run `tunesmith hpo` again once they end, or use an RDB storage (sqlite:///...) for heartbeats"
            )
            return False
        time.sleep(self.settings.heartbeat)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            optuna.storages.fail_stale_trials(self.study)
        return True


def _say(message: str) -> None:
    import sys

    print(f"tunesmith: {message}", file=sys.stderr, flush=True)


def _default_params(dists: dict, settings: HpoSettings, source: str) -> dict:
    declared = defaults(parse_optimizer(source).hyperparameters)
    return {k: v for k, v in declared.items() if k in dists}


def _progress(enabled: bool, total: int, cid: str):
    from tqdm import tqdm

    # disable=None: drawn on a terminal only (in a log file every update would add a carriage-return line)
    return tqdm(total=total, desc=f"hpo {cid}", unit="trial", disable=(not enabled) or None, leave=False)


# -- the whole stage ---------------------------------------------------------------------------


def candidates_to_tune(archive: Archive, settings: HpoSettings) -> list:
    """The candidates named by --id, or the top K successful ones."""
    if settings.ids:
        return [archive.candidate(cid) for cid in settings.ids]
    best = archive.best(settings.top_k)
    if not best:
        raise HpoError(f"{archive.run_dir}: no candidate succeeded yet; run or resume the campaign first")
    return best


def _split(source, tasks, params, repeats, seed, timeout_s, workers) -> tuple[float | None, dict, float | None]:
    if not tasks:
        return None, {}, None
    fit = _evaluate(source, tasks, repeats, seed, timeout_s, params, workers)
    per = {name: getattr(tf, "score", None) for name, tf in (fit.per_task or {}).items()}
    failed = fit.error is not None
    return (None if failed else fit.score), per, (None if failed else (getattr(fit, "metadata", None) or {}).get("se"))


def compare(
    source: str, before: dict, after: dict, tasks: list, repeats: int, seed: int, timeout_s: float, workers: int
) -> SplitScores | None:
    """Score the default and the tuned values on a task set with the same fresh seed."""
    if not tasks:
        return None
    b, pb, sb = _split(source, tasks, before or None, repeats, seed, timeout_s, workers)
    a, pa, sa = (b, pb, sb) if after == before else _split(source, tasks, after, repeats, seed, timeout_s, workers)
    return SplitScores([t.name for t in tasks], b, a, pb, pa, sb, sa)


def tune_candidate(
    archive: Archive,
    candidate,
    train_tasks: list,
    settings: HpoSettings,
    progress: bool = True,
    validation_tasks: list = (),
) -> HpoResult:
    """Run (or resume) the study of one candidate and score before/after on the train and validation tasks."""
    start = time.perf_counter()
    run_dir = archive.run_dir
    source = archive.code(candidate)
    if not source:
        raise HpoError(f"{run_dir}: candidate {candidate.id} has no code; choose another --id")
    info = parse_optimizer(source, f"candidate {candidate.id}")
    dists = distributions(info.hyperparameters, f"candidate {candidate.id}")
    timeout_s, workers = _evaluation_limits(archive, settings)
    declared = defaults(info.hyperparameters)
    best_params, best_value, counts = dict(declared), None, {"complete": 0, "pruned": 0, "failed": 0}
    name = study_name(run_dir, candidate.id)
    if dists:
        study = run_study(run_dir, candidate.id, source, dists, train_tasks, settings, timeout_s, workers, progress)
        counts = _trial_counts(study)
        done = [t for t in study.get_trials(deepcopy=False) if t.state == optuna.trial.TrialState.COMPLETE]
        if done:
            best = max(done, key=lambda t: t.value)
            best_params, best_value = {**declared, **best.params}, float(best.value)
    report_seed = settings.seed + REPORT_SEED_OFFSET
    # more repeats than a trial: this comparison decides whether the tuned values are kept
    repeats = settings.report_repeats or max(10, 2 * settings.repeats)
    with _final_scoring(run_dir, candidate.id):  # parallel `hpo` processes: one scores and writes, the others read
        done_already = load_results(run_dir).get(candidate.id)
        if (
            done_already is not None
            and done_already.best_params == best_params
            and done_already.trials == {**counts, "requested": settings.trials if dists else 0}
            and done_already.report_repeats == repeats
            and done_already.report_seed == report_seed
            and (done_already.validation is not None) == bool(validation_tasks)
        ):
            return done_already
        if progress:  # after the trials' bar, tens of seconds of runs: say what they are
            sets = "training" + (" and validation" if validation_tasks else "")  # the test tasks are sealed
            _say(
                f"hpo {candidate.id}: scoring the default and the tuned values on the {sets} tasks "
                f"({repeats} repeats each, seeds no trial saw)"
            )
        return _score_and_write(
            archive,
            candidate,
            info,
            name,
            settings,
            declared,
            best_params,
            best_value,
            counts,
            dists,
            train_tasks,
            repeats,
            report_seed,
            timeout_s,
            workers,
            start,
            validation_tasks,
        )


def _final_scoring(run_dir: Path, cid: str):
    """An exclusive lock on RUN/hpo/<id>.lock while one process scores and writes the candidate's result."""
    import contextlib
    import fcntl

    @contextlib.contextmanager
    def held():
        out = Path(run_dir) / HPO_DIR
        out.mkdir(exist_ok=True)
        with open(out / f".{cid}.lock", "w") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            yield

    return held()


def _score_and_write(
    archive,
    candidate,
    info,
    name,
    settings,
    declared,
    best_params,
    best_value,
    counts,
    dists,
    train_tasks,
    repeats,
    report_seed,
    timeout_s,
    workers,
    start,
    validation_tasks=(),
) -> HpoResult:
    run_dir = archive.run_dir
    source = archive.code(candidate)
    train = compare(source, declared, best_params, train_tasks, repeats, report_seed, timeout_s, workers)
    validation = (
        compare(source, declared, best_params, validation_tasks, repeats, report_seed, timeout_s, workers)
        if validation_tasks
        else None
    )
    test = None  # sealed: the campaign scores its final choice on the test tasks once (campaign.sealed_test)
    # Trials all share one seed, so the best trial is partly the luckiest; keep its values only if they also
    # beat the defaults on streams the trials never saw, and, where the campaign has a validation set, on
    # spaces they never saw: tuned values that won on the training tasks' fresh seeds have lost on unseen
    # spaces (flagship2 and flagship4, docs/results/flagship4.md), and choosing between them is a final
    # choice, which is what the validation set is for.
    accepted = _wins(train) and (validation is None or _wins(validation))
    result = HpoResult(
        candidate.id,
        info.class_name,
        name,
        storage_url(run_dir, settings.storage),
        info.hyperparameters,
        declared,
        best_params,
        best_value,
        {**counts, "requested": settings.trials if dists else 0},
        train,
        test,
        settings.repeats,
        settings.seed,
        report_seed,
        round(time.perf_counter() - start, 2),
        accepted=accepted or best_params == declared,
        report_repeats=repeats,
        validation=validation,
    )
    write_result(run_dir, result)
    return result


def _wins(split) -> bool:
    """Whether the tuned values scored above the defaults on a task set (no scores: nothing against them)."""
    return split is None or (split.after is not None and (split.before is None or split.after > split.before))


def _trial_counts(study) -> dict:
    s = optuna.trial.TrialState
    trials = study.get_trials(deepcopy=False)
    return {
        "complete": sum(t.state == s.COMPLETE for t in trials),
        "pruned": sum(t.state == s.PRUNED for t in trials),
        "failed": sum(t.state == s.FAIL and "error" in t.user_attrs for t in trials),  # not surplus/stale
        "interrupted": sum(interrupted(t) for t in trials),
    }  # killed or stopped, then run again


def _evaluation_limits(archive: Archive, settings: HpoSettings) -> tuple[float, int]:
    evaluation = archive.config.get("evaluation", {})
    timeout = settings.timeout_s or float(evaluation.get("timeout", 60.0))
    workers = settings.workers or int(evaluation.get("workers", 1))
    return timeout, workers


def run_hpo(run_dir, settings: HpoSettings, progress: bool = True) -> list[HpoResult]:
    """The HPO stage: tune the chosen candidates of a run; results in RUN/hpo/<id>.json."""
    from generator.run_lock import run_lock

    archive = Archive.open(run_dir)
    check_storage(settings.storage, settings.storage_origin)
    # shared: other `hpo` processes may tune this run too (they share the study), a campaign may not write it
    with run_lock(run_dir, "hpo", shared=True):
        train_tasks = _split_tasks(archive, "train")  # the test tasks are sealed: not even loaded here
        validation_tasks = validation_set(archive)
        results = []
        verbosity = optuna.logging.get_verbosity()
        optuna.logging.set_verbosity(optuna.logging.WARNING)  # one progress bar instead of a line per trial
        try:
            with quiet_interrupts():  # Ctrl-C: one line from the command, not Optuna's traceback
                for candidate in candidates_to_tune(archive, settings):
                    results.append(
                        tune_candidate(archive, candidate, train_tasks, settings, progress, validation_tasks)
                    )
        finally:
            optuna.logging.set_verbosity(verbosity)
    return results


def task_sets(archive: Archive) -> tuple[list, list]:
    """The run's training and test tasks, loaded from its saved configuration."""
    return _split_tasks(archive, "train"), _split_tasks(archive, "test")


def validation_set(archive: Archive) -> list:
    """The run's validation tasks (used only for final choices), loaded from its saved configuration."""
    return _split_tasks(archive, "validation")


def _split_tasks(archive: Archive, split: str) -> list:
    """The tasks of one of the run's task lists (train, validation, test)."""
    from generator.config import TasksConfig
    from generator.tasks.entries import load_task_set

    tasks = TasksConfig.model_validate(archive.config["tasks"])
    return load_task_set(getattr(tasks, split), tasks)


def settings_from_config(config: dict, **overrides) -> HpoSettings:
    """HpoSettings from a campaign configuration's [hpo] section, with command-line overrides."""
    section = dict(config.get("hpo") or {})
    section.pop("enabled", None)
    known = HpoSettings.__dataclass_fields__
    values = {k: v for k, v in section.items() if k in known}
    evaluation = config.get("evaluation") or {}  # trials race as the campaign's candidates did
    values.update({k: evaluation[k] for k in ("racing", "min_repeats", "confidence") if k in evaluation})
    _check_counts(overrides)
    values.update({k: v for k, v in overrides.items() if v is not None and k in known})
    if values.get("storage") is not None and overrides.get("storage") is None:
        values["storage_origin"] = "[hpo] storage ="
    return HpoSettings(**values)


# command-line overrides that count something (the [hpo] section's own fields say so through pydantic, ge=1)
_COUNTS = {
    "trials": ("--trials", "Optuna trials per candidate"),
    "repeats": ("--repeats", "runs per task and trial"),
    "top_k": ("--top", "candidates to tune"),
    "report_repeats": ("--report-repeats", "runs per task of the before/after scores"),
}


def _check_counts(overrides: dict) -> None:
    """--trials 0, --repeats 0, --top 0 ... are refused before a study is opened (nothing written)."""
    for key, (flag, what) in _COUNTS.items():
        value = overrides.get(key)
        if value is not None and value < 1:
            raise HpoError(f"{flag} {value}: give at least 1 ({what})")
    if overrides.get("worker") is not None and overrides["worker"] < 0:
        raise HpoError(f"--worker {overrides['worker']}: give 0 or more (this process's index on the storage)")


def campaign_stage(run_dir, progress: bool = True) -> list[HpoResult]:
    """The campaign's last stage: tune as its `[hpo]` section says, or nothing when it is not enabled."""
    config = Archive.open(run_dir).config
    if not (config.get("hpo") or {}).get("enabled"):
        return []
    return run_hpo(run_dir, settings_from_config(config), progress)
