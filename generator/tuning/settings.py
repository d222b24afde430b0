"""What `tunesmith hpo` is asked to do: the campaign's [hpo] section plus what only a command line says.

`HpoSettings` is `HpoConfig` (generator.config) with the run-time extras added, so each default is
written once, in the campaign model: the [hpo] fields, and the racing rule from [evaluation].
"""

from __future__ import annotations

from pydantic import Field

from generator.config import CampaignConfig, EvaluationConfig, HpoConfig
from generator.tuning.storage import HpoError

_EVALUATION = EvaluationConfig.model_fields


class HpoSettings(HpoConfig):
    """How to tune: which candidates, how many trials, how each trial is evaluated, where it is stored."""

    storage_origin: str = "--storage"  # where `storage` came from, for messages ("[hpo] storage =" from the config)
    ids: list[str] | None = None  # explicit candidates instead of the top K
    timeout_s: float | None = Field(None, gt=0)  # per evaluation; default the campaign's evaluation.timeout
    workers: int | None = Field(None, ge=1)  # sandbox workers per evaluation; default the campaign's
    worker: int | None = Field(None, ge=0)  # index of this process among parallel `tunesmith hpo` processes
    # racing (the campaign's [evaluation] racing): a trial runs min_repeats per task first, and more (up to
    # `repeats`) only while a paired t-test cannot tell it is worse than the best finished trial
    racing: bool = _EVALUATION["racing"].default
    min_repeats: int = _EVALUATION["min_repeats"].default
    confidence: float = _EVALUATION["confidence"].default


def settings_from_config(config: CampaignConfig | dict, **overrides) -> HpoSettings:
    """HpoSettings from a campaign configuration's [hpo] section (trials race as its candidates did), with
    command-line overrides. `config` is the model, or a dict of some of its sections (each validated)."""
    if isinstance(config, dict):
        hpo = HpoConfig.model_validate(config.get("hpo") or {})
        evaluation = EvaluationConfig.model_validate(config.get("evaluation") or {})
    else:
        hpo, evaluation = config.hpo, config.evaluation
    values = hpo.model_dump(exclude={"enabled"})
    values.update(racing=evaluation.racing, min_repeats=evaluation.min_repeats, confidence=evaluation.confidence)
    _check_counts(overrides)
    values.update({k: v for k, v in overrides.items() if v is not None and k in HpoSettings.model_fields})
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
