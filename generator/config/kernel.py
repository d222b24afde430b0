"""Kernel campaigns (a `[kernel_campaign]` table), and the records other commands leave in a run directory.

A kernel campaign file evolves kernel templates instead of optimizers (generator.kernels.evolve). Its run
directory's config.json is a `KernelRunRecord`; `tunesmith template --out` leaves a `RecordingRecord`
beside its recorded replies; a guided benchmark's record folder holds a `GuidedRecord`. Each is read back
through generator.config.stored.StoredRun, as a campaign's configuration is.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationError

from generator.config.base import ConfigError, Section
from generator.config.campaign import one_line
from generator.config.llm import LLMConfig

KERNEL_RUN = "kernel_campaign"
GUIDED_RECORD = "llm_guided exchanges"


class KernelCampaignConfig(Section):
    """The `[kernel_campaign]` table of a kernel campaign file (paths relative to the file)."""

    kernel: str = Field(description="the kernel's problem.toml or folder, relative to the campaign file")
    run_dir: str = Field(description="the run directory, relative to the campaign file")
    generations: int = Field(2, ge=0, strict=True, description="generations after generation 0")
    population: int = Field(2, ge=1, strict=True, description="templates asked for in generation 0, and survivors")
    offspring: int = Field(2, ge=1, strict=True, description="refinements asked for per later generation")
    fevals: int = Field(6, ge=1, strict=True, description="evaluations the tuner gets on each template's space")
    sample: int = Field(4, ge=1, strict=True, description="configurations a template's check compiles and runs")
    seed: int = Field(0, ge=0, strict=True, description="the tuner's seed")
    llm: LLMConfig = Field(default_factory=LLMConfig, description="who writes the templates, as a campaign's [llm]")


class KernelCampaignError(ConfigError):
    """A kernel campaign file that cannot be used."""


def parse_kernel_campaign(table: dict, path: str) -> KernelCampaignConfig:
    """Validate a `[kernel_campaign]` table; any problem is one line naming the key and the fix."""
    try:
        return KernelCampaignConfig.model_validate(table)
    except ValidationError as exc:
        raise KernelCampaignError(_kernel_problem(exc, table, path)) from None


def _kernel_problem(exc: ValidationError, table: dict, path: str) -> str:
    err = exc.errors()[0]
    key = str(err["loc"][0]) if err["loc"] else ""
    fields = KernelCampaignConfig.model_fields
    if err["type"] == "extra_forbidden":
        unknown = sorted(set(table) - set(fields))
        return f"{path}: unknown keys {unknown} in [kernel_campaign]; allowed are {sorted(fields)}"
    if key in ("kernel", "run_dir"):
        return f'{path}: [kernel_campaign] needs {key} = "PATH" (relative to the file)'
    if key == "llm":
        return one_line(f"{path}: [kernel_campaign]", exc)
    least = 0 if key in ("generations", "seed") else 1
    return f"{path}: [kernel_campaign] {key} must be a whole number >= {least} (got {err.get('input')!r})"


class KernelRunRecord(Section):
    """config.json of a kernel campaign's run directory."""

    kind: Literal["kernel_campaign"]
    kernel: str = Field(description="the kernel's problem.toml, resolved")
    model: str = Field(description="the [kernel_campaign.llm] model")
    replies: str = Field("", description="who wrote the replies (a hand-written recording says so)")


class RecordingRecord(Section):
    """config.json beside replies recorded by `tunesmith template --out` (or written by hand)."""

    written_by: Literal["hand", "llm"]
    kernel: str = ""
    model: str = ""
    replies: str = ""
    note: str = ""


class GuidedRecord(Section):
    """config.json of a folder of llm_guided exchanges (`bench --strategy llm_guided` with a record)."""

    kind: Literal["llm_guided exchanges"]
    bench_seed: int | None = None
