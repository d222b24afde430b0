"""The whole campaign model, and its validation errors as one line naming the key and the fix."""

from __future__ import annotations

import json

from pydantic import Field, ValidationError

from generator.config.base import ConfigError, Section, marks
from generator.config.llm import LLMConfig
from generator.config.sections import (
    EvaluationConfig,
    EvolutionConfig,
    GuidedConfig,
    HpoConfig,
    NoveltyConfig,
    OutputConfig,
    PromptsConfig,
    RecordConfig,
    TasksConfig,
)


class CampaignConfig(Section):
    """A whole campaign file."""

    name: str = Field("campaign", description="shown in status and reports")
    description: str = Field("", description="shown in status and reports", json_schema_extra=marks(resumable=True))
    llm: LLMConfig = Field(default_factory=LLMConfig)
    evolution: EvolutionConfig = Field(default_factory=EvolutionConfig)
    tasks: TasksConfig
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    prompts: PromptsConfig = Field(default_factory=PromptsConfig)
    output: OutputConfig = Field(default_factory=OutputConfig)
    hpo: HpoConfig = Field(default_factory=HpoConfig, json_schema_extra=marks(resumable=True))
    llm_guided: GuidedConfig = Field(default_factory=GuidedConfig)
    novelty: NoveltyConfig = Field(default_factory=NoveltyConfig)
    # where the run is also recorded: no part of what the run decides, so it may change on resume
    record: RecordConfig = Field(default_factory=RecordConfig, json_schema_extra=marks(resumable=True))


def _fix_hint(err: dict) -> str:
    kind, ctx = err["type"], err.get("ctx") or {}
    if kind == "extra_forbidden":
        return "unknown key; remove it or check its spelling (the keys: docs/reference/campaign-file.md)"
    if kind == "missing":
        return "required; add it"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected')}"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        return err["msg"].lower()
    if kind == "value_error":
        return str(ctx.get("error", err["msg"]))
    if kind == "too_short":
        return "must not be empty; list at least one entry"
    if kind in ("int_type", "float_type", "bool_type") and isinstance(err.get("input"), str):
        # strict fields: "2" or "true" in quotes is a string in TOML, and a guess at what was meant is no answer
        what = {"int_type": "a whole number", "float_type": "a number", "bool_type": "true or false"}[kind]
        return f"must be {what} without quotes (got {err.get('input')!r})"
    return f"{err['msg'].lower()} (got {_as_toml(err.get('input'))})"


def _as_toml(value) -> str:
    """A value as the campaign file spells it: `true`, not Python's `True` (JSON's forms are TOML's here)."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def one_line(path: str, exc: ValidationError) -> str:
    errors = exc.errors()
    keys = [".".join(str(p) for p in err["loc"]) or "(top level)" for err in errors]
    others = keys[1:]
    more = ""
    if others:  # one line stays one line: the first problem in full, the others by their keys
        more = (
            f" (and {len(others)} more problem{'s' if len(others) > 1 else ''} in this file: "
            f"{', '.join(others[:5])}{', ...' if len(others) > 5 else ''})"
        )
    return f"{path}: {keys[0]}: {_fix_hint(errors[0])}{more}"


def parse_config(data: dict, path: str = "<config>") -> CampaignConfig:
    """Validate a dict (as read from TOML) into a CampaignConfig."""
    try:
        return CampaignConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(one_line(path, exc)) from None
