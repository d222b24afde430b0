"""The campaign sections other than [llm]: evolution, tasks, evaluation, prompts, novelty, output, hpo,
llm_guided. docs/reference/campaign-file.md is generated from them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from generator.config.base import Section, check_budget, hub_dir, marks
from generator.config.defaults import RUN_TIMEOUT_S
from generator.config.urls import url_problem


class Operators(Section):
    """Relative weights of the variation operators (need not sum to 1)."""

    new: float = Field(
        0.2,
        ge=0,
        strict=True,
        description="weight of 'new': a fresh algorithm, different from the existing ones listed",
    )
    refine: float = Field(0.5, ge=0, strict=True, description="weight of 'refine': improve a working parent")
    simplify: float = Field(
        0.15, ge=0, strict=True, description="weight of 'simplify': a plainer version of a working parent"
    )
    fix: float = Field(
        0.15,
        ge=0,
        strict=True,
        description="weight of 'fix': repair the latest failed candidate with code, its error fed back (a failed fix is fixed at most twice)",
    )
    # combines two working parents; 0 until a measurement shows it pays (benchmarks/edits_crossover.py)
    crossover: float = Field(
        0.0,
        ge=0,
        strict=True,
        description="weight of 'crossover': combine two different working parents (0 = off)",
        json_schema_extra=marks(legacy=0.0),
    )

    @model_validator(mode="after")
    def _some_weight(self):
        if self.new + self.refine + self.simplify <= 0:
            raise ValueError("new, refine and simplify are all 0; give at least one of them a positive weight")
        return self


class NichesConfig(Section):
    """Islands with migration and a MAP-Elites grid over behaviour (generator.campaign.niches)."""

    islands: int = Field(
        1,
        ge=1,
        le=64,
        strict=True,
        description="populations evolving apart (1: one population)",
        json_schema_extra=marks(legacy=1),
    )
    migration_interval: int = Field(
        3, ge=1, strict=True, description="generations between migrations (ring)", json_schema_extra=marks(legacy=3)
    )
    map_elites: bool = Field(
        False,
        strict=True,
        description="parents drawn uniformly over behaviour cells",
        json_schema_extra=marks(legacy=False),
    )
    bins: int = Field(
        3, ge=2, le=10, strict=True, description="cells per behaviour descriptor", json_schema_extra=marks(legacy=3)
    )


class BanditConfig(Section):
    """Operators (and [llm] models) chosen by a discounted UCB bandit (generator.campaign.bandit)."""

    enabled: bool = Field(
        False,
        strict=True,
        description="off: operators drawn by weight, models by weight",
        json_schema_extra=marks(legacy=False),
    )
    discount: float = Field(
        0.9, gt=0, le=1, description="per candidate: how fast old rewards fade", json_schema_extra=marks(legacy=0.9)
    )
    exploration: float = Field(
        0.5,
        ge=0,
        description="weight of the upper-confidence term (rewards are in [0, 1])",
        json_schema_extra=marks(legacy=0.5),
    )


class EvolutionConfig(Section):
    """The evolutionary loop: population sizes, selection, operators, budget in candidates."""

    strategy: Literal["mu+lambda", "mu,lambda"] = Field(
        "mu+lambda",
        description="'mu+lambda' (parents compete with offspring) or 'mu,lambda' (parents die each generation; the best parents fill in only if too few offspring work)",
    )
    n_parents: int = Field(
        4, ge=1, strict=True, description="mu: survivors per generation, and the size of generation 0 (all 'new')"
    )
    n_offspring: int = Field(12, ge=1, strict=True, description="lambda: candidates generated per generation")
    budget: int = Field(
        100,
        ge=1,
        strict=True,
        description="generated candidates in total, failures and duplicates included (at most 100000)",
        json_schema_extra=marks(resumable=True),
    )
    selection: Literal["tournament", "roulette", "best"] = Field(
        "tournament", description="parent selection: 'tournament', 'roulette' (score-proportional) or 'best'"
    )
    tournament_size: int = Field(2, ge=1, strict=True, description="candidates per tournament")
    seed: int = Field(
        1, strict=True, description="the loop's random choices; with the same replies a run repeats exactly"
    )
    # "generation": a generation's offspring are all planned before any is asked for, so they can be
    # in flight together; "serial": each is planned after the one before it was made (runs made
    # before Tunesmith 0.2 continue this way; a failure can then be fixed within its generation)
    planning: Literal["generation", "serial"] = Field(
        "generation",
        description="'generation': a generation's offspring are all drawn before any is asked for, so they can be in flight together; 'serial': each is drawn after the one before it was made",
        json_schema_extra=marks(legacy="serial"),
    )
    operators: Operators = Field(default_factory=Operators)
    # "diff": refine, simplify and fix are answered as SEARCH/REPLACE blocks on the parent's code
    # (asked again for full code when a block does not apply); "full": complete code every time
    edit: Literal["full", "diff"] = Field(
        "full",
        description="'full': complete code every time; 'diff': refine, simplify and fix are answered as SEARCH/REPLACE blocks on Parent 1's code (asked again for full code when a block does not apply, or when the reply is only a piece of the class)",
        json_schema_extra=marks(legacy="full"),
    )
    niches: NichesConfig = Field(
        default_factory=NichesConfig,
        description="islands with migration and a MAP-Elites grid over measured behaviour (off by default: it did not pay, docs/explanation/search.md)",
    )
    bandit: BanditConfig = Field(
        default_factory=BanditConfig,
        description="operators and [[llm.models]] chosen by a discounted UCB bandit (off by default: it did not pay)",
    )

    @field_validator("budget")
    @classmethod
    def _sane_budget(cls, v: int) -> int:
        return check_budget(v)

    @model_validator(mode="after")
    def _comma_needs_offspring(self):
        if self.strategy == "mu,lambda" and self.n_offspring < self.n_parents:
            raise ValueError(
                f"strategy 'mu,lambda' needs n_offspring >= n_parents (got {self.n_offspring} < "
                f"{self.n_parents}); raise n_offspring or use 'mu+lambda'"
            )
        return self

    @model_validator(mode="after")
    def _parents_per_island(self):
        if self.niches.islands > self.n_parents:
            raise ValueError(
                f"niches.islands = {self.niches.islands} > n_parents = {self.n_parents}: every island "
                "needs a parent; raise n_parents or lower islands"
            )
        return self


class TasksConfig(Section):
    """Training and test tasks. Each entry: 'hub:APP/GPU' (or 'hub:APP'), a cache file, a hub
    directory, or 'problem:NAME'."""

    hub: str | None = Field(
        None,
        description="benchmark-hub directory for hub: entries (default ../shared/data/benchmark_hub); the environment variable TUNESMITH_BENCHMARK_HUB overrides it",
        json_schema_extra=marks(resumable=True),
    )
    train: list[str] = Field(
        min_length=1,
        description="training tasks: hub:APP/GPU, hub:APP, problem:NAME[/GPU], live:NAME[,fevals=N][,seconds=S], a Kernel Tuner cache file, a problem.toml or a benchmark-hub directory",
    )
    test: list[str] = Field(
        default_factory=list,
        description="held-out tasks, never used in evolution or tuning; scored after HPO and in exports",
    )
    validation: list[str] = Field(
        default_factory=list,
        description="validation tasks (same forms as train), "
        "used only for the final choice of winners after evolution and HPO, never by "
        "selection; a task may be in one set only",
        json_schema_extra=marks(legacy=[]),
    )
    finalists: int = Field(
        5,
        ge=1,
        strict=True,
        description="how many of the best candidates by training P (plus "
        "every tuned one) are scored on the validation tasks to choose the winner",
        json_schema_extra=marks(legacy=5),
    )
    max_fevals: int | None = Field(None, ge=1, strict=True, description="optional cap on unique evaluations per run")

    def hub_dir(self) -> Path:
        """Where hub: entries are looked up (environment first, then this file, then the default)."""
        return hub_dir(self.hub)


class EvaluationConfig(Section):
    """How candidates are run: repeats per task, time limit, parallel workers, executor."""

    repeats: int = Field(10, ge=1, strict=True, description="runs per task and candidate")
    timeout: float = Field(
        RUN_TIMEOUT_S,
        gt=0,
        strict=True,
        description="wall-clock seconds of one run (one repeat on one task); a run that evaluated nothing by then fails as timeout",
    )
    workers: int = Field(
        1,
        ge=1,
        strict=True,
        description="parallel sandbox processes (or Dask workers for dask-local)",
        json_schema_extra=marks(resumable=True),
    )
    executor: str = Field(
        "local",
        description="where evaluations run: 'local', 'dask-local' or 'dask://HOST:PORT' (a running Dask scheduler)",
        json_schema_extra=marks(resumable=True),
    )
    worker_wait: float = Field(
        300.0,
        gt=0,
        description="Dask: seconds to wait for a worker before stopping (resumable)",
        json_schema_extra=marks(resumable=True),
    )
    seed: int | None = Field(
        None,
        strict=True,
        description="the runs' random streams (default: evolution.seed), the same for every candidate",
    )
    # how a candidate's fitness combines its per-task P (docs/explanation/score-p.md): "iqm" (the
    # interquartile mean: the mean of the middle half, equal to the mean below 4 tasks), "mean", "median"
    aggregate: Literal["mean", "median", "iqm"] = Field(
        "iqm",
        description="how a candidate's fitness combines its per-task P: 'iqm' (interquartile mean; the mean below 4 tasks), 'mean' or 'median'",
        json_schema_extra=marks(legacy="mean"),
    )
    # racing (generator.scoring.racing): candidates start with min_repeats runs per task; only those that
    # can still enter the survivors get more, up to `repeats`; false: every candidate gets `repeats`
    racing: bool = Field(
        False,
        strict=True,
        description="race candidates: min_repeats runs per task first, more (up "
        "to repeats) only for those a paired t-test cannot place below the survivors; false: "
        "every candidate gets repeats",
        json_schema_extra=marks(legacy=False),
    )
    min_repeats: int = Field(
        3, ge=2, strict=True, description="racing: runs per task of a new candidate (the first stage)"
    )
    confidence: float = Field(
        0.9,
        gt=0.5,
        lt=1.0,
        description="racing: one-sided confidence of the paired t-test that stops giving a candidate runs",
    )
    indifference: float = Field(
        0.1,
        ge=0.0,
        lt=1.0,
        description="racing: the indifference zone in P; a candidate "
        "known to within this of the boundary of the places (or of the first place) is "
        "decided by its mean",
        json_schema_extra=marks(legacy=0.0),
    )

    @field_validator("executor")
    @classmethod
    def _executor(cls, v: str) -> str:
        problem = url_problem(v)
        if problem:
            raise ValueError(problem)
        return v


class PromptsConfig(Section):
    """What goes into the prompts."""

    template_dir: str | None = Field(
        None, description="a folder of *.j2 files that replace the built-in templates in prompts/ of the same name"
    )
    include_statistics: bool = Field(True, strict=True, description="put the search-space statistics into the prompt")
    include_application_info: bool = Field(
        True, strict=True, description="put the kernel's specification into the prompt"
    )
    max_existing: int = Field(
        8, ge=0, strict=True, description="'new' lists this many existing algorithms to differ from"
    )


class NoveltyConfig(Section):
    """Near-copies caught before evaluation (generator.campaign.novelty)."""

    # what counts as a copy, recorded as a duplicate and not evaluated: the same program up to the names
    # it chooses itself, docstrings, comments and layout ("structure"; constants and strings count), or
    # only up to comments and layout
    copies: Literal["structure", "layout"] = Field(
        "structure",
        description="what counts as a copy, recorded as a duplicate and not evaluated: 'structure' (the same program up to the names it chooses itself, docstrings, comments and layout; constants and strings count) or 'layout' (only up to comments and layout)",
    )
    # a candidate more similar than this to an archived one is asked for once more, with the prompt
    # saying what it copied (similarity of normalised code, 0..1; 1.0 never asks again). 0.97: above
    # the 0.93-0.97 of the synthesizer's one-component refinements; a one-token edit of a 150-token
    # class scores about 0.95 (docs/explanation/near-copies.md)
    max_similarity: float = Field(
        0.97,
        ge=0,
        le=1,
        description="a reply more similar than this (normalised code, 0..1) to an archived candidate is asked for once more, the prompt saying what it copied; 1.0 never asks again",
    )


class OutputConfig(Section):
    run_dir: str = Field(
        "results/run",
        description="the run directory (relative: to the current directory)",
        json_schema_extra=marks(resumable=True),
    )


class HpoConfig(Section):
    """Optuna tuning of the best candidates' hyperparameters after the campaign (`tunesmith hpo`)."""

    enabled: bool = Field(False, strict=True, description="run Optuna tuning as the campaign's last stage")
    top_k: int = Field(1, ge=1, strict=True, description="candidates to tune, best first")
    trials: int = Field(
        30, ge=1, strict=True, description="Optuna trials per candidate (the declared defaults are the first)"
    )
    repeats: int = Field(3, ge=1, strict=True, description="runs per training task in each trial")
    report_repeats: int | None = Field(
        None,
        ge=1,
        strict=True,
        description="runs per task when the defaults and the tuned values are scored again on train and test (default max(10, 2 x repeats))",
    )
    storage: str | None = Field(
        None,
        description="Optuna storage URL (postgresql://..., mysql://..., journal:PATH); default sqlite:///RUN_DIR/hpo.db",
    )
    seed: int = Field(0, strict=True, description="seed of the TPE sampler")
    heartbeat: float = Field(
        30.0,
        gt=0,
        description="seconds between trial heartbeats on RDB storages; after 4 missed beats a trial is failed and run again",
    )


class GuidedConfig(Section):
    """LLM-guided tuning (`llm_guided`): the LLM proposes configurations in rounds; also the seeding stage."""

    batch: int = Field(10, ge=1, le=200, strict=True, description="configurations asked for per round")
    max_rounds: int = Field(25, ge=1, strict=True, description="LLM calls per run at most")
    patience: int = Field(
        4, ge=1, strict=True, description="stop after this many rounds in a row without a better result"
    )
    show_best: int = Field(15, ge=1, strict=True, description="best configurations shown with their results")
    show_failed: int = Field(
        20, ge=0, strict=True, description="failed configurations and refused proposals shown with the reason"
    )
    show_evaluated: int = Field(
        200, ge=0, strict=True, description="other evaluated configurations listed (values only)"
    )
    seed_rounds: int = Field(
        0,
        ge=0,
        strict=True,
        description="campaigns: rounds of LLM proposals every candidate's runs start from (0 = off)",
    )


class RecordConfig(Section):
    """Where the campaign is also recorded as it runs (generator.record): MLflow, an optional extra."""

    mlflow: bool = Field(
        False,
        strict=True,
        description="send each candidate (scores, operator, parents, tokens, cost, code) and the report to MLflow; needs pip install 'tunesmith[mlflow]'",
    )
    tracking_uri: str | None = Field(
        None,
        description="MLflow tracking URI; default sqlite:///PARENT/mlflow.db, a local store beside the run directory (PARENT: its parent folder)",
    )
    experiment: str | None = Field(None, description="MLflow experiment name (default: the campaign's name)")
