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

This module holds the objective and the stage; what it is asked to do is `settings.py` (HpoSettings:
the campaign's [hpo] section plus the command line), the search space `space.py`, and the study's own
mechanics (opening, counting trials across processes, waiting for others) `study.py`.
"""

from __future__ import annotations

import time
from pathlib import Path

import optuna

from generator.archive import Archive
from generator.candidate.source import parse_optimizer
from generator.tuning.recovery import claim, quiet_interrupts
from generator.tuning.results import HPO_DIR, HpoResult, SplitScores, load_results, write_result
from generator.tuning.settings import HpoSettings, settings_from_config
from generator.tuning.space import defaults, distributions, suggest
from generator.tuning.storage import HpoError, check_storage, storage_url
from generator.tuning.study import open_study, run_trials, say, study_name, surplus, trial_counts

# the names callers import from here (results, settings and the space are defined beside this module)

REPORT_SEED_OFFSET = 7919  # the before/after scores use other random streams than the trials did


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
        if surplus(trial, settings.trials):
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
    study = open_study(run_dir, cid, settings, _default_params(dists, settings, source))
    run_trials(study, make_objective(source, dists, train_tasks, settings, timeout_s, workers), settings, cid, progress)
    return study


def _default_params(dists: dict, settings: HpoSettings, source: str) -> dict:
    declared = defaults(parse_optimizer(source).hyperparameters)
    return {k: v for k, v in declared.items() if k in dists}


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
        counts = trial_counts(study)
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
            say(
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


def _evaluation_limits(archive: Archive, settings: HpoSettings) -> tuple[float, int]:
    """Per evaluation: the command line's timeout and workers, else the campaign's [evaluation] ones."""
    evaluation = archive.stored.campaign.evaluation
    return settings.timeout_s or evaluation.timeout, settings.workers or evaluation.workers


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
    from generator.tasks.entries import load_task_set

    tasks = archive.stored.campaign.tasks
    return load_task_set(getattr(tasks, split), tasks)


def campaign_stage(run_dir, progress: bool = True) -> list[HpoResult]:
    """The campaign's last stage: tune as its `[hpo]` section says, or nothing when it is not enabled."""
    config = Archive.open(run_dir).stored.campaign
    if not config.hpo.enabled:
        return []
    return run_hpo(run_dir, settings_from_config(config), progress)
