"""Pre-flight checks: everything a campaign will need, checked before anything is written.

A campaign runs for hours; a typo in a test task, the model or the HPO storage must not surface at
its end, nor leave a run directory that refuses the corrected command. `check_campaign` loads
every task entry (train and test), checks that the model can answer and that the `[hpo]` storage
is usable; `check_budget_left` refuses a budget that the run has already spent.
"""

from __future__ import annotations

from generator.config import CampaignConfig, ConfigError
from generator.errors import TunesmithError
from generator.llm.client import check_model
from generator.tasks.entries import load_task_set
from generator.tuning.storage import check_storage


def check_campaign(cfg: CampaignConfig, keys: bool = True) -> None:
    """Refuse a campaign that would fail later: bad task entries, model or HPO storage (one line each)."""
    check_tasks(cfg)
    check_model(cfg.llm, keys=keys)
    if not cfg.llm.model.startswith("replay/"):  # a replay answers for every model it recorded
        for i, choice in enumerate(cfg.llm.models):  # [[llm.models]]: each must answer too
            try:
                check_model(cfg.llm.model_copy(update={"model": choice.model}), keys=keys)
            except TunesmithError as exc:
                raise ConfigError(f"llm.models[{i}]: {str(exc).removeprefix('llm.model = ')}") from None
    if cfg.hpo.storage is not None:  # also when [hpo] is not enabled: `tunesmith hpo` uses it later
        check_storage(cfg.hpo.storage, "[hpo] storage =")


def check_tasks(cfg: CampaignConfig) -> None:
    """Load every train, validation and test entry (each once per process); the first bad one is named with its
    place; a task in two sets is refused."""
    for key in ("train", "validation", "test"):
        for i, entry in enumerate(getattr(cfg.tasks, key)):
            if entry.startswith("live:"):
                continue  # a live task: checked when its entry was resolved (its device), measured only when used
            try:
                load_task_set([entry], cfg.tasks)
            except TunesmithError as exc:
                why = str(exc).removeprefix("tasks: ")
                raise ConfigError(f"tasks.{key}[{i}] = {entry!r}: {why}") from None
    sets = {key: load_task_set(getattr(cfg.tasks, key), cfg.tasks) for key in ("train", "validation", "test")}
    check_disjoint({key: [t.name for t in tasks] for key, tasks in sets.items()})  # names listed twice, too


def check_disjoint(names: dict[str, list[str]]) -> None:
    """Refuse a task in two of the sets: a validation or test score on a training task says nothing new."""
    seen: dict[str, str] = {}
    for key, tasks in names.items():
        for name in tasks:
            if seen.setdefault(name, key) != key:
                raise ConfigError(
                    f"tasks: {name!r} is in both tasks.{seen[name]} and tasks.{key}; a task belongs to "
                    "one set (train: evolution, validation: the final choice of winners, test: the "
                    "report), remove it from one"
                )


def check_budget_left(done: int, budget: int, flag: str) -> None:
    """Refuse a budget the run has already spent (it would stop at once and misstate the budget)."""
    if budget < done:
        raise ConfigError(
            f"{flag} {budget}: the run already holds {done} candidates, so a budget of {budget} "
            f"is already spent; to extend the run give more than {done}"
        )
