"""The one configuration: campaign files validated by pydantic, every error one line naming the key.

Sections: [llm] (+ [llm.caps], [llm.local], [[llm.models]]), [evolution] (+ operators, niches, bandit),
[tasks], [evaluation], [prompts], [novelty], [output], [hpo], [llm_guided]. A room that needs a new section
adds a model in `sections.py` and one field on `CampaignConfig`. docs/reference/campaign-file.md is
generated from the models.

Modules, bottom up: `base` (Section, ConfigError, field marks), `urls` (executor URL grammar), `llm`
and `sections` (the sections), `campaign` (CampaignConfig, one-line errors), `loading` (TOML, `extends`),
`resume` (what may change when a run continues, legacy values), `kernel` (kernel campaigns and the other
run records), `stored` (StoredRun: a run directory's configuration read back, format checked and
upgraded). The names below are the package's public API.
"""

from generator.config.base import DEFAULT_HUB, HUB_ENV, MAX_BUDGET, ConfigError, Section, check_budget, hub_dir
from generator.config.campaign import CampaignConfig, parse_config
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
    TasksConfig,
)
from generator.config.urls import DASK_LOCAL, REMOTE_SCHEMES, url_problem

__all__ = [
    "DASK_LOCAL",
    "DEFAULT_HUB",
    "HUB_ENV",
    "LEGACY_VALUES",
    "LOCAL_TIMEOUT_S",
    "MAX_BUDGET",
    "REMOTE_SCHEMES",
    "RESUMABLE_CHANGES",
    "BanditConfig",
    "CampaignConfig",
    "ConfigError",
    "EvaluationConfig",
    "EvolutionConfig",
    "GuidedConfig",
    "HpoConfig",
    "LLMCaps",
    "LLMConfig",
    "LocalLLMConfig",
    "ModelChoice",
    "NichesConfig",
    "NoveltyConfig",
    "Operators",
    "OutputConfig",
    "PromptsConfig",
    "Section",
    "TasksConfig",
    "blocking_changes",
    "campaign_file",
    "check_budget",
    "config_changes",
    "hub_dir",
    "load_config",
    "parse_config",
    "resolved_campaign",
    "url_problem",
    "with_legacy_values",
]
