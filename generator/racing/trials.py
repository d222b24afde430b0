"""HPO trials that race: few repeats first, more only while the trial could still beat the best one.

Every trial uses the same seeds (repeat r is seeded alike in all of them), so a trial's P per repeat
is paired with the best finished trial's. After each stage (generator.racing.rule.RaceSettings)
the trial reports its mean P to Optuna and stores its P per repeat; `RacePruner` prunes it when a
one-sided paired t-test says it is below the best finished trial. A trial that is never pruned
runs `repeats` per task, as without racing.
"""

from __future__ import annotations

import optuna

from generator.racing.rule import RaceSettings, merge_fitness, repeat_blocks, significantly_worse

VALUES = "repeat_values"  # user attribute: the trial's P per (repeat, task) block so far, repeat by repeat


class RacePruner(optuna.pruners.BasePruner):
    """Prunes a trial whose P per repeat is significantly below the best finished trial's (paired)."""

    def __init__(self, confidence: float = 0.9):
        self.confidence = confidence

    def prune(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> bool:
        done = [
            t
            for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
            if t.value is not None and VALUES in t.user_attrs
        ]
        if not done or VALUES not in trial.user_attrs:
            return False
        best = max(done, key=lambda t: t.value)
        return significantly_worse(trial.user_attrs[VALUES], best.user_attrs[VALUES], self.confidence)


def raced_trial(trial: optuna.Trial, evaluate, settings) -> float:
    """Mean P over the training tasks of one trial, its runs added stage by stage (pruned when it cannot win).

    `evaluate(repeats, first_repeat)` scores the trial's values on the training tasks."""
    stages = RaceSettings(min(settings.min_repeats, settings.repeats), settings.repeats, settings.confidence).stages()
    fitness, have = None, 0
    for step, n in enumerate(stages):
        fit = evaluate(n - have, have)
        if fit.error is not None or fit.score is None:
            err = fit.error
            trial.set_user_attr("error", f"{err.kind}: {err.message}" if err else "no score")
            return float("nan")  # Optuna records the trial as failed
        fitness = fit.to_dict() if fitness is None else merge_fitness(fitness, fit.to_dict())
        have = n
        trial.set_user_attr(VALUES, [list(block) for block in repeat_blocks(fitness["per_task"])])
        trial.set_user_attr("runs", int(fitness["metadata"].get("runs") or 0))
        for name, tf in fitness["per_task"].items():
            trial.set_user_attr(f"score:{name}", tf["score"])
        trial.report(float(fitness["score"]), step)
        if n < settings.repeats and trial.should_prune():
            raise optuna.TrialPruned()
    return float(fitness["score"])
