"""What every section shares: the base model, the error type, the budget and hub rules.

`resumable()` and `legacy()` mark a field's place in resuming a run (generator.config.resume reads the
marks): a resumable key may differ when a run continues; a legacy value is how runs made before the key
existed behaved.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from generator.errors import TunesmithError

DEFAULT_HUB = "../shared/data/benchmark_hub"
# Candidates per campaign at most: at seconds to minutes per candidate this is already days to months
# of evaluation (and LLM calls); a larger number is a typo, not a plan.
MAX_BUDGET = 100_000
HUB_ENV = "TUNESMITH_BENCHMARK_HUB"


class ConfigError(TunesmithError):
    """A campaign file that cannot be used."""


class Section(BaseModel):
    """Base of every section: unknown keys are errors, values are checked on assignment too."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def check_budget(budget: int, what: str = "") -> int:
    """A budget in candidates that a campaign can spend (1 .. MAX_BUDGET)."""
    if budget < 1 and what:  # the field itself says so through pydantic (ge=1)
        raise ConfigError(
            f"{what}a budget is at least 1 candidate (got {budget}); give the total number of candidates to generate"
        )
    if budget > MAX_BUDGET:
        raise (ConfigError if what else ValueError)(
            f"{what}at most {MAX_BUDGET} candidates (got {budget}): that is already days to months of evaluation, "
            "more is most likely a typo; a finished run can be extended with `tunesmith resume RUN --budget N`"
        )
    return budget


def hub_dir(configured: str | None = None) -> Path:
    """The benchmark hub: $TUNESMITH_BENCHMARK_HUB, else the configured folder, else the default."""
    return Path(os.environ.get(HUB_ENV) or configured or DEFAULT_HUB)


_NO_LEGACY = object()


def marks(*, resumable: bool = False, legacy: Any = _NO_LEGACY) -> dict:
    """`json_schema_extra` of a field: whether it may change on resume, and its value for older runs."""
    out: dict = {}
    if resumable:
        out["resumable"] = True
    if legacy is not _NO_LEGACY:
        out["legacy"] = legacy
    return out
