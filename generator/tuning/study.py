"""An Optuna study of one candidate: opened or resumed on its storage, trials run until N are finished.

Several `tunesmith hpo` processes may share one study; each counts the trials of all of them, runs one
trial at a time, and waits for trials RUNNING elsewhere (a dead process's are failed by Optuna's heartbeat
and queued again by generator.tuning.recovery).
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path

import optuna

from generator.tuning.recovery import OWNER, interrupted, owner_words, recover, same_retry
from generator.tuning.settings import HpoSettings
from generator.tuning.storage import GRACE_BEATS, open_storage, storage_url


def open_study(run_dir: Path, cid: str, settings: HpoSettings, first_params: dict) -> optuna.Study:
    """Create or resume the candidate's study; a new one gets `first_params` (the declared defaults) first."""
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
        study.enqueue_trial(first_params, skip_if_exists=True)
    return study


def run_trials(study: optuna.Study, objective, settings: HpoSettings, cid: str, progress: bool = True) -> None:
    """Run this process's share of the trials, until `settings.trials` are finished across all processes."""
    bar = _progress(progress, settings.trials, cid)
    waiting = _OthersTrials(study, settings)
    try:
        while True:
            recover(study)  # interrupted trials (a killed process, Ctrl-C) are queued again
            trials = study.get_trials(deepcopy=False)
            finished = sum(counted(t) and t.state != optuna.trial.TrialState.RUNNING for t in trials)
            bar.n = min(finished, settings.trials)
            bar.refresh()
            queued = any(t.state == optuna.trial.TrialState.WAITING for t in trials)
            # a queued trial holds one of the N places: it is run, never left waiting
            if finished >= settings.trials and not queued:
                break
            if sum(counted(t) for t in trials) >= settings.trials and not queued:
                # the rest of the N are RUNNING in other processes (or were left by a dead one): only
                # finished trials count, so wait for them; Optuna's heartbeat fails a dead one
                if not waiting.wait(trials):
                    break
                continue
            # one trial at a time: the count above sees the other processes' trials between them
            _optimize_one(study, objective)
    finally:
        bar.close()


def study_name(run_dir: Path, candidate_id: str) -> str:
    """Stable per run and candidate, so that re-running resumes the same study."""
    return f"tunesmith-{Path(run_dir).resolve().name}-{candidate_id}"


def counted(trial) -> bool:
    """Trials that use up the trial budget: finished ones, running ones, and real failures."""
    s = optuna.trial.TrialState
    if trial.state in (s.COMPLETE, s.PRUNED, s.RUNNING, s.WAITING):
        return True
    return trial.state == s.FAIL and "error" in trial.user_attrs  # not a crashed worker's stale trial


def surplus(trial: optuna.Trial, budget: int) -> bool:
    """A trial another process made redundant: created in the instant between our count and its creation
    when the trials before it already fill the budget, or a second copy of the enqueued defaults."""
    trials = trial.study.get_trials(deepcopy=False)
    earlier = [t for t in trials if t.number < trial.number]
    if sum(counted(t) for t in earlier) >= budget:
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
            say(
                f"study {self.study.study_name}: waiting for {len(running)} trial(s) running in other processes "
                f"({', '.join(owners)}); {how}"
            )
        if not self.heartbeat and time.monotonic() - self.since > self.limit_s:
            done = sum(counted(t) and t.state != optuna.trial.TrialState.RUNNING for t in trials)
            say(
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


def say(message: str) -> None:
    import sys

    print(f"tunesmith: {message}", file=sys.stderr, flush=True)


def _progress(enabled: bool, total: int, cid: str):
    from tqdm import tqdm

    # disable=None: drawn on a terminal only (in a log file every update would add a carriage-return line)
    return tqdm(total=total, desc=f"hpo {cid}", unit="trial", disable=(not enabled) or None, leave=False)


def trial_counts(study) -> dict:
    s = optuna.trial.TrialState
    trials = study.get_trials(deepcopy=False)
    return {
        "complete": sum(t.state == s.COMPLETE for t in trials),
        "pruned": sum(t.state == s.PRUNED for t in trials),
        "failed": sum(t.state == s.FAIL and "error" in t.user_attrs for t in trials),  # not surplus/stale
        "interrupted": sum(interrupted(t) for t in trials),
    }  # killed or stopped, then run again
