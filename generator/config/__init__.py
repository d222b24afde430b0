"""The one configuration: campaign files validated by pydantic, every error one line naming the key.

Sections: [llm] (+ [llm.caps], [llm.local], [[llm.models]]), [evolution] (+ operators, niches, bandit),
[tasks], [evaluation], [prompts], [novelty], [output], [hpo], [llm_guided]. A room that needs a new section
adds a model in `sections.py` and one field on `CampaignConfig`. docs/reference/campaign-file.md is
generated from the models.

Modules, bottom up: `base` (Section, ConfigError, field marks), `urls` (executor URL grammar), `llm`
and `sections` (the sections), `campaign` (CampaignConfig, one-line errors), `loading` (TOML, `extends`),
`resume` (what may change when a run continues, legacy values), `kernel` (kernel campaigns and the other
run records), `stored` (StoredRun: a run directory's configuration read back, format checked and
upgraded), `defaults` (values that rooms below pydantic's weight share, such as the run timeout).

The names below are the package's public API. They load on first use (PEP 562), so a light module
such as generator.sandbox.jobs can import `generator.config.defaults` without loading pydantic.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# name -> the module of generator.config that defines it
_WHERE = {
    "ConfigError": "base",
    "DEFAULT_HUB": "base",
    "HUB_ENV": "base",
    "MAX_BUDGET": "base",
    "Section": "base",
    "check_budget": "base",
    "hub_dir": "base",
    "CampaignConfig": "campaign",
    "parse_config": "campaign",
    "RUN_TIMEOUT_S": "defaults",
    "LLMCaps": "llm",
    "LLMConfig": "llm",
    "LOCAL_TIMEOUT_S": "llm",
    "LocalLLMConfig": "llm",
    "ModelChoice": "llm",
    "campaign_file": "loading",
    "load_config": "loading",
    "resolved_campaign": "loading",
    "LEGACY_VALUES": "resume",
    "RESUMABLE_CHANGES": "resume",
    "blocking_changes": "resume",
    "config_changes": "resume",
    "with_legacy_values": "resume",
    "BanditConfig": "sections",
    "EvaluationConfig": "sections",
    "EvolutionConfig": "sections",
    "GuidedConfig": "sections",
    "HpoConfig": "sections",
    "NichesConfig": "sections",
    "NoveltyConfig": "sections",
    "Operators": "sections",
    "OutputConfig": "sections",
    "PromptsConfig": "sections",
    "RecordConfig": "sections",
    "TasksConfig": "sections",
    "executor_choices": "urls",
    "executor_name": "urls",
    "url_problem": "urls",
}
__all__ = [
    "BanditConfig",
    "CampaignConfig",
    "ConfigError",
    "DEFAULT_HUB",
    "EvaluationConfig",
    "EvolutionConfig",
    "GuidedConfig",
    "HUB_ENV",
    "HpoConfig",
    "LEGACY_VALUES",
    "LLMCaps",
    "LLMConfig",
    "LOCAL_TIMEOUT_S",
    "LocalLLMConfig",
    "MAX_BUDGET",
    "ModelChoice",
    "NichesConfig",
    "NoveltyConfig",
    "Operators",
    "OutputConfig",
    "PromptsConfig",
    "RecordConfig",
    "RESUMABLE_CHANGES",
    "RUN_TIMEOUT_S",
    "Section",
    "TasksConfig",
    "blocking_changes",
    "campaign_file",
    "check_budget",
    "config_changes",
    "executor_choices",
    "executor_name",
    "hub_dir",
    "load_config",
    "parse_config",
    "resolved_campaign",
    "url_problem",
    "with_legacy_values",
]


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'generator.config' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"generator.config.{module}"), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # for type checkers and editors: the same names, imported eagerly
    from generator.config.base import DEFAULT_HUB, HUB_ENV, MAX_BUDGET, ConfigError, Section, check_budget, hub_dir
    from generator.config.campaign import CampaignConfig, parse_config
    from generator.config.defaults import RUN_TIMEOUT_S
    from generator.config.llm import LOCAL_TIMEOUT_S, LLMCaps, LLMConfig, LocalLLMConfig, ModelChoice
    from generator.config.loading import campaign_file, load_config, resolved_campaign
    from generator.config.resume import (
        LEGACY_VALUES,
        RESUMABLE_CHANGES,
        blocking_changes,
        config_changes,
        with_legacy_values,
    )
    from generator.config.sections import (
        BanditConfig,
        EvaluationConfig,
        EvolutionConfig,
        GuidedConfig,
        HpoConfig,
        NichesConfig,
        NoveltyConfig,
        Operators,
        OutputConfig,
        PromptsConfig,
        RecordConfig,
        TasksConfig,
    )
    from generator.config.urls import executor_choices, executor_name, url_problem
