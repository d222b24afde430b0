"""Tunesmith: generates optimization algorithms for GPU auto-tuning.

The public API is the names in `__all__`, imported from here (`from generator import load_results`); every
other module is the package's own and may change. The names load lazily, on first use, through `_PUBLIC`,
so `import generator` stays light (it imports nothing of the rooms).

Rooms, from the bottom up (a room imports only those before it; tests/project/test_architecture.py checks it, and
tests/project/test_layout_docs.py that this list and docs/reference/repository-layout.md name every room):
resources, parsing, errors, registry, interrupts, config, jsonl -> tasks -> scoring -> candidate -> sandbox ->
evaluation -> live -> llm -> archive, run_lock -> racing -> guided -> tuning -> campaign -> export -> review ->
bench -> kernels -> record, compare, serve -> cli (the `tunesmith` command, a package: one module per group of
commands).
"""

import importlib
import os

# litellm fetches its model cost map from the network at import unless told otherwise; there is
# no network here and users must not depend on one, so use the map bundled with the package.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

__version__ = "0.2.0"  # the only place it is written: pyproject.toml reads it from here

# public name -> "module:attribute" where it is defined (loaded on first use, then kept in the module)
_PUBLIC = {
    # campaigns
    "CampaignConfig": "generator.config:CampaignConfig",
    "load_config": "generator.config:load_config",
    "run_campaign": "generator.campaign.run:run_campaign",
    "resume": "generator.campaign.run:resume",
    # run directories
    "Archive": "generator.archive:Archive",
    "Candidate": "generator.archive:Candidate",
    # scoring
    "budget_for": "generator.scoring.score:budget_for",
    "evaluate_source": "generator.evaluation.evaluate:evaluate_source",
    # using winners: an Optuna sampler, or an ask/tell loop of your own
    "AskTellOptimizer": "generator.export.ask_tell:AskTellOptimizer",
    "GeneratedSampler": "generator.export.optuna_sampler:GeneratedSampler",
    "StopCriterionReached": "generator.export.ask_tell:StopCriterionReached",
    # tuning results, export
    "load_results": "generator.tuning.results:load_results",
    "export_run": "generator.export.exporter:export_run",
    # live tasks
    "load_live_entry": "generator.live.tasks:load_live_entry",
    "evaluate_live": "generator.live.evaluate:evaluate_live",
    # the offline synthesizer as a litellm provider
    "register_synth": "generator.llm.synth:register",
    # extension points: register a task source, executor or LLM backend by name
    "register": "generator.registry:register",
    "TaskSource": "generator.tasks.sources:TaskSource",
    "MeasuredTask": "generator.tasks.sources:MeasuredTask",
    "ExecutorFactory": "generator.evaluation.executors:ExecutorFactory",
    "LLMBackend": "generator.llm.backend:LLMBackend",
}

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str):
    target = _PUBLIC.get(name)
    if target is None:
        raise AttributeError(f"module 'generator' has no attribute {name!r}")
    module, _, attribute = target.partition(":")
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
