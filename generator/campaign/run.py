"""Starting and continuing a campaign: `run_campaign(config_path)` starts (or continues) the run in
`output.run_dir`; `resume(run_dir)` continues from the configuration stored there. Both check every task,
the model and the HPO storage before anything is written, hold the run directory's lock, and hand over to
`Campaign.run` (campaign.loop). `render_prompt` shows a campaign's first prompt without running it.
"""

from __future__ import annotations

from pathlib import Path

from generator.archive import Archive
from generator.campaign.loop import Campaign
from generator.campaign.printing import Summary
from generator.config import (
    CampaignConfig,
    ConfigError,
    blocking_changes,
    campaign_file,
    check_budget,
    load_config,
    parse_config,
    with_legacy_values,
)
from generator.errors import TunesmithError
from generator.llm.prompts import ParentView
from generator.tasks.entries import load_task_set, resolve_paths


def _open_or_create(cfg: CampaignConfig, resolved: dict, config_path: Path | None) -> Archive:
    run_dir = Path(cfg.output.run_dir)
    if Archive.exists(run_dir):
        archive = Archive.open(run_dir)
        changed = blocking_changes(with_legacy_values(archive.config), resolved)
        if changed:
            raise ConfigError(
                f"{run_dir}: holds a run started with different settings ({', '.join(changed[:4])}); "
                "use `tunesmith resume` to continue it, or set another output.run_dir"
            )
        return archive
    text = config_path.read_text() if config_path else ""
    return Archive.create(run_dir, resolved, text, cfg.name)


def run_campaign(
    config_path,
    run_dir: str | None = None,
    budget: int | None = None,
    progress: bool = True,
    evaluate=None,
    completion=None,
    executor: str | None = None,
    worker_wait: float | None = None,
) -> Summary:
    """Start the campaign of a TOML file, or continue it if its run directory already holds it."""
    config_path = campaign_file(config_path)
    cfg = load_config(config_path)
    if run_dir:
        cfg.output.run_dir = run_dir
    if budget is not None:
        cfg.evolution.budget = check_budget(budget, f"--budget {budget}: ")
    if executor:  # e.g. the same campaign on a Dask cluster: `--executor dask://HOST:PORT`
        from generator.evaluation.dask_executor import checked_url

        cfg.evaluation.executor = checked_url(executor)
    if worker_wait is not None:
        cfg.evaluation.worker_wait = _checked_wait(worker_wait)
    cfg, resolved = resolve_paths(cfg, config_path.parent)
    from generator.campaign.preflight import check_budget_left, check_campaign
    from generator.run_lock import run_lock

    # every task (train and test), the model and the HPO storage are checked before anything is written:
    # a typo fails with nothing recorded, so the same command works once it is fixed
    check_campaign(cfg, keys=completion is None)
    # a second campaign on this directory is refused, not merged
    with run_lock(cfg.output.run_dir, "run"), _resumable(cfg.output.run_dir):
        archive = _open_or_create(cfg, resolved, config_path)
        # a lowered budget, from --budget or from the file, is refused alike (the file's names the file)
        check_budget_left(
            len(archive.candidates()),
            cfg.evolution.budget,
            "--budget" if budget is not None else f"{config_path}: [evolution] budget =",
        )
        return Campaign(cfg, archive, evaluate=evaluate, completion=completion, progress=progress).run()


def resume(
    run_dir,
    budget: int | None = None,
    progress: bool = True,
    evaluate=None,
    completion=None,
    executor: str | None = None,
    worker_wait: float | None = None,
) -> Summary:
    """Continue a run from its own stored configuration (optionally with a larger budget, elsewhere)."""
    from generator.campaign.preflight import check_budget_left, check_campaign
    from generator.run_lock import run_lock

    if budget is not None:
        check_budget(budget, f"--budget {budget}: ")
    archive = Archive.open(run_dir)
    with run_lock(run_dir, "resume"), _resumable(run_dir):
        data = with_legacy_values(archive.config)  # a run made by an earlier version continues as it began
        data["output"]["run_dir"] = str(run_dir)
        if budget is not None:
            check_budget_left(len(archive.candidates()), budget, "--budget")
            data["evolution"]["budget"] = budget
        if executor:
            data.setdefault("evaluation", {})["executor"] = executor
        if worker_wait is not None:
            data.setdefault("evaluation", {})["worker_wait"] = _checked_wait(worker_wait)
        cfg = parse_config(data, str(Path(run_dir) / "config.json"))
        check_campaign(cfg, keys=completion is None)  # e.g. a local model removed since, a hub moved
        return Campaign(cfg, archive, evaluate=evaluate, completion=completion, progress=progress).run()


def _resumable(run_dir):
    """A stop while the run is set up (tasks loaded, the archive read) says how to continue too, once the
    directory holds a run (the campaign loop says it for later stops)."""
    from generator.interrupts import says_how_to_continue

    return says_how_to_continue(f"tunesmith resume {run_dir}", lambda: Archive.exists(Path(run_dir)))


def _checked_wait(seconds: float) -> float:
    """--worker-wait: a positive number of seconds."""
    if not seconds > 0:
        raise TunesmithError(f"--worker-wait {seconds:g}: give a positive number of seconds, e.g. --worker-wait 600")
    return float(seconds)


def render_prompt(config_path, operator: str = "new") -> list[dict]:
    """The messages the campaign's first prompt of `operator` would send (parents shown as placeholders)."""
    from generator.llm.prompts import PromptBuilder

    config_path = campaign_file(config_path)  # campaigns/NAME.toml: the shipped one outside a checkout
    cfg, _ = resolve_paths(load_config(config_path), config_path.parent)
    builder = PromptBuilder(load_task_set(cfg.tasks.train, cfg.tasks), cfg.prompts)
    example = (
        "class RandomSearch:\n    hyperparameters = {}\n\n    def __init__(self, budget=5000):\n"
        "        self.budget = budget\n\n    def __call__(self, func, searchspace):\n"
        "        for config in searchspace.get_random_sample(10**9):\n            func(config)\n"
    )
    parent = ParentView("c0001", None if operator == "fix" else 0.0, example, "Random search (example parent)")
    error = {"kind": "runtime", "message": "ZeroDivisionError: division by zero (example)", "line": 8}
    if operator == "new":
        return builder.messages("new", existing=[parent])
    parents = [parent]
    if operator == "crossover":
        parents.append(
            ParentView("c0002", 0.0, example.replace("RandomSearch", "OtherSearch"), "Another example parent")
        )
    return builder.messages(
        operator, parents=parents, error=error if operator == "fix" else None, edit=cfg.evolution.edit
    )
