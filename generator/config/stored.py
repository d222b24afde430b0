"""A run directory's configuration read back: the one way any command reads a stored run's settings.

`StoredRun.open(RUN_DIR)` reads config.json and run.json, checks the run directory's format, upgrades a
configuration written by an older Tunesmith, and validates it into its model: `CampaignConfig` for a
campaign, or a record of generator.config.kernel for the other kinds. Commands read attributes of
`.config`; the raw dicts are for this module only (tests/config/test_stored_runs.py holds generator/ to it).

The format is run.json's "format" (FORMAT today; a run.json without it is format 1: every run made by
Tunesmith 0.1). A run directory of a newer format than this Tunesmith knows is refused in one line.
Changing what a run directory holds in a way older readers would misread means: FORMAT + 1, and an
entry in UPGRADES that brings a configuration of the old format to the new one. Keys a run predates are
filled in with the values it was made with (fields marked `legacy`, generator.config.resume), whatever
its format, since a run holds every key of its own time.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from generator.config.base import ConfigError, Section
from generator.config.campaign import CampaignConfig, parse_config
from generator.config.kernel import GUIDED_RECORD, KERNEL_RUN, GuidedRecord, KernelRunRecord, RecordingRecord
from generator.config.resume import with_legacy_values

FORMAT = 2
CONFIG = "config.json"
RUN_INFO = "run.json"


def _format_1_to_2(data: dict) -> dict:
    """Format 2 adds only run.json's "format" key: a format-1 configuration reads the same."""
    return data


# format N -> the step that makes a configuration of format N one of format N + 1
UPGRADES: dict[int, Callable[[dict], dict]] = {1: _format_1_to_2}


class _Shown(BaseModel):
    """What status, report and export show of any run: unknown keys ignored, a missing key shown as unknown."""

    model_config = ConfigDict(extra="ignore")


class _ShownLLM(_Shown):
    model: str = ""
    caps: dict = Field(default_factory=dict)  # the spending caps as written ({} when none)


class _ShownEvolution(_Shown):
    budget: int | None = None
    seed: int | None = None


class _ShownTasks(_Shown):
    validation: list[str] = Field(default_factory=list)


class RunHeader(_Shown):
    """The few keys every command shows about a run, read from any run directory: a campaign's, a kernel
    campaign's, a record, or one a test or an older Tunesmith wrote by hand. Its defaults mean "not
    recorded", never a campaign's defaults (those are in CampaignConfig)."""

    name: str | None = None
    kind: str = "campaign"
    llm: _ShownLLM = Field(default_factory=_ShownLLM)
    evolution: _ShownEvolution = Field(default_factory=_ShownEvolution)
    tasks: _ShownTasks = Field(default_factory=_ShownTasks)
    model: str = ""  # records name their model at the top level


class StoredRunError(ConfigError):
    """A run directory whose configuration cannot be read by this Tunesmith."""


@dataclass(frozen=True)
class StoredRun:
    """A run directory's stored configuration: its format, its kind, and the validated model."""

    run_dir: Path
    format: int
    info: dict  # run.json: created, tunesmith_version, campaign, format
    data: dict  # config.json upgraded to FORMAT, legacy keys filled in (a campaign's resume starts from it)

    @classmethod
    def open(cls, run_dir) -> StoredRun:
        """Read RUN_DIR's config.json and run.json; refuse a format newer than this Tunesmith's."""
        run_dir = Path(run_dir)
        try:
            raw = json.loads((run_dir / CONFIG).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise StoredRunError(
                f"{run_dir}: not a Tunesmith run directory (no {CONFIG}); give the output.run_dir of a campaign"
            ) from None
        except (OSError, ValueError) as exc:
            raise StoredRunError(f"{run_dir / CONFIG}: cannot be read ({exc}); the run directory is damaged") from None
        info = _read_info(run_dir)
        fmt = info.get("format", 1)
        if not isinstance(fmt, int) or isinstance(fmt, bool) or fmt < 1:
            raise StoredRunError(f"{run_dir / RUN_INFO}: format {fmt!r} is not a format number; the file is damaged")
        if fmt > FORMAT:
            made_by = info.get("tunesmith_version", "a newer Tunesmith")
            raise StoredRunError(
                f"{run_dir}: run directory format {fmt}, made by Tunesmith {made_by}; this Tunesmith reads format "
                f"{FORMAT} and older: upgrade Tunesmith (pip install -U tunesmith) to continue or read it"
            )
        return cls(run_dir, fmt, info, upgraded(raw, fmt))

    @property
    def kind(self) -> str:
        """'campaign', 'kernel_campaign', 'recording' or 'llm_guided exchanges'."""
        if self.data.get("kind") in (KERNEL_RUN, GUIDED_RECORD):
            return self.data["kind"]
        return "recording" if "written_by" in self.data else "campaign"

    @property
    def config(self) -> CampaignConfig | KernelRunRecord | RecordingRecord | GuidedRecord:
        """The configuration validated into its model (a damaged one fails in one line naming the key)."""
        where = str(self.run_dir / CONFIG)
        if self.kind == "campaign":
            return parse_config(self.data, where)
        model: type[Section] = {
            KERNEL_RUN: KernelRunRecord,
            GUIDED_RECORD: GuidedRecord,
            "recording": RecordingRecord,
        }[self.kind]
        try:
            return model.model_validate(self.data)
        except ValueError as exc:
            raise StoredRunError(f"{where}: {str(exc).splitlines()[-1].strip()}") from None

    @property
    def campaign(self) -> CampaignConfig:
        """The configuration of a campaign's run (any other kind: a one-line error naming the command)."""
        if self.kind != "campaign":
            raise StoredRunError(
                f"{self.run_dir}: holds a {self.kind} run, not a campaign's; this command reads campaign runs"
            )
        return parse_config(self.data, str(self.run_dir / CONFIG))

    @property
    def header(self) -> RunHeader:
        """What status, report and export show (never fails: a key it cannot read is shown as unknown)."""
        try:
            return RunHeader.model_validate(self.data)
        except ValidationError:  # a damaged key: show the run without it
            return RunHeader()

    def as_dict(self) -> dict:
        """The configuration as nested plain values, for a record or a comparison of runs: a valid campaign's
        every key (defaults filled in), else the keys as the run recorded them."""
        if self.kind == "campaign":
            try:
                return self.campaign.model_dump(mode="json")
            except ConfigError:
                pass  # a run written by hand or by a test: show what it holds
        return json.loads(json.dumps(self.data))

    @property
    def name(self) -> str:
        """The campaign's name (run.json's for a run whose configuration has none)."""
        return self.header.name or str(self.info.get("campaign", ""))

    @property
    def model(self) -> str:
        """The model that wrote the candidates ('' when none is recorded)."""
        header = self.header
        return header.llm.model or header.model

    @property
    def has_validation(self) -> bool:
        """Whether the run's winner is chosen on validation tasks ([tasks] validation)."""
        return bool(self.header.tasks.validation)

    @property
    def budget(self) -> int | None:
        """The campaign's budget in candidates (None when none is recorded)."""
        return self.header.evolution.budget


def upgraded(data: dict, fmt: int) -> dict:
    """A stored configuration of format `fmt` as one of FORMAT, with the keys it predates set as it was made."""
    for step in range(fmt, FORMAT):
        data = UPGRADES[step](data)
    if "kind" in data or "written_by" in data:  # records: no legacy keys
        return data
    return with_legacy_values(data)


def _read_info(run_dir: Path) -> dict:
    try:
        info = json.loads((run_dir / RUN_INFO).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}  # a recording of replies, or a run directory made before run.json: format 1
    except (OSError, ValueError) as exc:
        raise StoredRunError(f"{run_dir / RUN_INFO}: cannot be read ({exc}); the run directory is damaged") from None
    return info if isinstance(info, dict) else {}


def info_record(created: float, version: str, campaign: str) -> dict:
    """run.json of a new run directory."""
    return {"created": created, "tunesmith_version": version, "campaign": campaign, "format": FORMAT}
