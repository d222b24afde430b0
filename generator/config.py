"""Campaign configuration: a TOML file validated by pydantic; every error is one line naming the key.

Sections: [llm] (+ [llm.caps]), [evolution] (+ [evolution.operators]), [tasks], [evaluation],
[prompts], [output]. Rooms that come later add their own section by adding a model here and one
field on `CampaignConfig` (see `SECTIONS`). docs/reference/campaign-file.md documents the keys.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from generator import registry
from generator.errors import TunesmithError

DEFAULT_HUB = "../shared/data/benchmark_hub"
# Candidates per campaign at most: at seconds to minutes per candidate this is already days to months
# of evaluation (and LLM calls); a larger number is a typo, not a plan.
MAX_BUDGET = 100_000
HUB_ENV = "TUNESMITH_BENCHMARK_HUB"
# Executor URLs (`[evaluation] executor`): a name of the registry's "executor" table, bare (`local`,
# `dask-local`) or a scheme with its address (`dask://HOST:PORT`); the grammar is checked here, the
# executors themselves run in generator.evaluation.
_ADDRESS = re.compile(r"^(?P<scheme>[a-z]+)://(?P<host>[^:/\s]+|\[[0-9a-fA-F:]+\]):(?P<port>\d{1,5})/?$")


def executor_name(url: str | None) -> str:
    """The registry name an executor URL is served by: the URL itself, or its scheme and '://' (None: local)."""
    if not url:
        return "local"
    return url.split("://", 1)[0] + "://" if "://" in url else url


def executor_choices() -> str:
    """The executor URLs there are, for an error message: 'local', ... or 'dask://HOST:PORT'."""
    # in the table's order (the default, 'local', first), the bare names before the addresses
    table = registry.table("executor")
    forms = [f"'{n}HOST:PORT'" if n.endswith("://") else f"'{n}'" for n in table]
    forms.sort(key=lambda f: f.endswith("HOST:PORT'"))
    return ", ".join(forms[:-1]) + " or " + forms[-1]


def url_problem(url: str) -> str | None:
    """What is wrong with an executor URL (None if it is fine): 'local', 'dask-local' or 'dask://HOST:PORT'."""
    name = executor_name(url)
    if name in registry.names("executor") and not name.endswith("://"):
        return None
    m = _ADDRESS.match(url or "")
    if m is None or f"{m['scheme']}://" not in registry.names("executor"):
        return f"unknown executor {url!r}; use {executor_choices()}"
    if not 0 < int(m["port"]) < 65536:
        return f"executor {url!r}: port {m['port']} is out of range 1-65535"
    return None


class ConfigError(TunesmithError):
    """A campaign file that cannot be used."""


class Section(BaseModel):
    """Base of every section: unknown keys are errors, values are checked on assignment too."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class LLMCaps(Section):
    """Hard limits over the whole campaign; the campaign stops cleanly before passing one."""

    max_calls: int | None = Field(
        None,
        ge=0,
        strict=True,
        description="requests sent in the whole run, retries included; a request that could pass it is not sent and the campaign stops cleanly (raise it and resume)",
    )
    max_tokens: int | None = Field(
        None,
        ge=0,
        strict=True,
        description="tokens in the whole run; each request is counted as its prompt plus a full-length reply before it is sent, so the cap is never exceeded",
    )
    max_usd: float | None = Field(
        None,
        ge=0,
        strict=True,
        description="US dollars in the whole run, priced by litellm; counted like max_tokens (worst case before sending), so it is never exceeded. Set it for every hosted model",
    )


class LocalLLMConfig(Section):
    """The llama.cpp server Tunesmith starts for `model = "local/NAME"` (see `tunesmith llm install`)."""

    threads: int = Field(
        1,
        ge=1,
        le=256,
        strict=True,
        description="CPU threads of the llama.cpp server, for generation and prompt batches (on 2 loaded cores two threads were slower than one)",
    )
    context: int = Field(
        8192, ge=512, strict=True, description="tokens of context (prompt plus reply) the server keeps"
    )
    startup_timeout: float = Field(
        600.0, gt=0, strict=True, description="seconds to load the model and answer a first request"
    )


LOCAL_TIMEOUT_S = 900.0  # a CPU model takes minutes for a long prompt; a hosted model's 120 s would cut it off


class ModelChoice(Section):
    """One of several models ([[llm.models]]): drawn by weight, or by the bandit with its price."""

    model: str = Field(description="a litellm model string, as [llm] model")
    weight: float = Field(1.0, ge=0, description="relative share of requests when the bandit is off")
    price: float = Field(1.0, gt=0, description="relative cost per token (the bandit's reward is gain per cost)")


class LLMConfig(Section):
    """Which model writes the code and how it is called (any litellm model string)."""

    model: str = Field(
        "synth/components",
        description="any litellm model string: 'openai/gpt-4o-mini', 'anthropic/claude-...', 'ollama/llama3', 'openai/NAME' with api_base for vLLM or any OpenAI-compatible server; 'synth/components' = the offline synthesizer (not an LLM); 'local/NAME' = a local code model Tunesmith starts; 'replay/RUN_DIR' = the recorded replies of an earlier run",
    )
    api_base: str | None = Field(
        None, description="server URL for self-hosted models (vLLM, Ollama, any OpenAI-compatible server)"
    )
    temperature: float = Field(0.8, ge=0, le=2, strict=True, description="sampling temperature of each request")
    max_tokens: int = Field(4096, gt=0, strict=True, description="longest reply per request, in tokens")
    timeout: float = Field(
        120.0, gt=0, strict=True, description="seconds per request (900 for local/ models unless set)"
    )
    retries: int = Field(
        3,
        ge=0,
        le=20,
        strict=True,
        description="retries of a request after a rate limit (429), server error (5xx), connection error or timeout; other errors (bad key, unknown model) stop the campaign at once",
    )
    backoff: float = Field(2.0, ge=0, strict=True, description="seconds before the first retry, doubled each time")
    seed: int | None = Field(
        None,
        strict=True,
        description="passed to providers that take one, plus the candidate number (so repeated prompts differ)",
    )
    max_consecutive_errors: int = Field(
        3,
        ge=1,
        strict=True,
        description="stop cleanly (resumable) after this many requests in a row got no answer even after retries; an unanswered request costs no budget",
    )
    concurrency: int = Field(
        4,
        ge=1,
        le=64,
        strict=True,
        description="requests in flight together (1 for local/ models unless set); the run is the same at any value; 1 = one candidate at a time",
    )
    params: dict = Field(
        default_factory=dict,
        description="extra keyword arguments for litellm.completion, passed as they are (never API keys)",
    )
    caps: LLMCaps = Field(default_factory=LLMCaps)
    local: LocalLLMConfig = Field(default_factory=LocalLLMConfig)
    models: list[ModelChoice] = Field(
        default_factory=list,
        description="several models ([[llm.models]] tables: model, weight, price), drawn by weight or by the bandit; empty: `model` alone",
    )

    @model_validator(mode="after")
    def _local_timeout(self):
        if self.model.startswith("local/") and "timeout" not in self.model_fields_set:
            self.timeout = LOCAL_TIMEOUT_S
        if self.model.startswith("local/") and "concurrency" not in self.model_fields_set:
            self.concurrency = 1  # the local server answers one request at a time; queued ones would time out
        return self

    @field_validator("model")
    @classmethod
    def _model(cls, v: str) -> str:
        if "/" not in v and not v.startswith(("gpt", "o1", "o3", "o4", "claude")):
            raise ValueError(
                "give a litellm model string such as 'openai/gpt-4o-mini', 'ollama/llama3', "
                "'synth/components', 'local/qwen2.5-coder-1.5b' or 'replay/RUN_DIR'"
            )
        return v

    @field_validator("params")
    @classmethod
    def _no_keys_in_file(cls, v: dict) -> dict:
        bad = [k for k in v if re.search(r"key|token|secret|password", k, re.I) and k != "max_completion_tokens"]
        if bad:
            raise ValueError(
                f"{bad} look like credentials; API keys come from the environment only "
                "(e.g. OPENAI_API_KEY), never from the campaign file"
            )
        return v

    @property
    def timeout_s(self) -> float:
        return self.timeout

    @property
    def backoff_s(self) -> float:
        return self.backoff


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
        0.0, ge=0, strict=True, description="weight of 'crossover': combine two different working parents (0 = off)"
    )

    @model_validator(mode="after")
    def _some_weight(self):
        if self.new + self.refine + self.simplify <= 0:
            raise ValueError("new, refine and simplify are all 0; give at least one of them a positive weight")
        return self


class NichesConfig(Section):
    """Islands with migration and a MAP-Elites grid over behaviour (generator.campaign.niches)."""

    islands: int = Field(1, ge=1, le=64, strict=True, description="populations evolving apart (1: one population)")
    migration_interval: int = Field(3, ge=1, strict=True, description="generations between migrations (ring)")
    map_elites: bool = Field(False, strict=True, description="parents drawn uniformly over behaviour cells")
    bins: int = Field(3, ge=2, le=10, strict=True, description="cells per behaviour descriptor")


class BanditConfig(Section):
    """Operators (and [llm] models) chosen by a discounted UCB bandit (generator.campaign.bandit)."""

    enabled: bool = Field(False, strict=True, description="off: operators drawn by weight, models by weight")
    discount: float = Field(0.9, gt=0, le=1, description="per candidate: how fast old rewards fade")
    exploration: float = Field(0.5, ge=0, description="weight of the upper-confidence term (rewards are in [0, 1])")


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
    )
    operators: Operators = Field(default_factory=Operators)
    # "diff": refine, simplify and fix are answered as SEARCH/REPLACE blocks on the parent's code
    # (asked again for full code when a block does not apply); "full": complete code every time
    edit: Literal["full", "diff"] = Field(
        "full",
        description="'full': complete code every time; 'diff': refine, simplify and fix are answered as SEARCH/REPLACE blocks on Parent 1's code (asked again for full code when a block does not apply, or when the reply is only a piece of the class)",
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


class TasksConfig(Section):
    """Training and test tasks. Each entry: 'hub:APP/GPU' (or 'hub:APP'), a cache file, a hub
    directory, or 'problem:NAME'."""

    hub: str | None = Field(
        None,
        description="benchmark-hub directory for hub: entries (default ../shared/data/benchmark_hub); the environment variable TUNESMITH_BENCHMARK_HUB overrides it",
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
    )
    finalists: int = Field(
        5,
        ge=1,
        strict=True,
        description="how many of the best candidates by training P (plus "
        "every tuned one) are scored on the validation tasks to choose the winner",
    )
    max_fevals: int | None = Field(None, ge=1, strict=True, description="optional cap on unique evaluations per run")

    def hub_dir(self) -> Path:
        """Where hub: entries are looked up (environment first, then this file, then the default)."""
        return hub_dir(self.hub)


class EvaluationConfig(Section):
    """How candidates are run: repeats per task, time limit, parallel workers, executor."""

    repeats: int = Field(10, ge=1, strict=True, description="runs per task and candidate")
    timeout: float = Field(
        60.0,
        gt=0,
        strict=True,
        description="wall-clock seconds of one run (one repeat on one task); a run that evaluated nothing by then fails as timeout",
    )
    workers: int = Field(
        1, ge=1, strict=True, description="parallel sandbox processes (or Dask workers for dask-local)"
    )
    executor: str = Field(
        "local",
        description="where evaluations run: 'local', 'dask-local' or 'dask://HOST:PORT' (a running Dask scheduler)",
    )
    worker_wait: float = Field(
        300.0, gt=0, description="Dask: seconds to wait for a worker before stopping (resumable)"
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
    )
    # racing (generator.scoring.racing): candidates start with min_repeats runs per task; only those that
    # can still enter the survivors get more, up to `repeats`; false: every candidate gets `repeats`
    racing: bool = Field(
        False,
        strict=True,
        description="race candidates: min_repeats runs per task first, more (up "
        "to repeats) only for those a paired t-test cannot place below the survivors; false: "
        "every candidate gets repeats",
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
    run_dir: str = Field("results/run", description="the run directory (relative: to the current directory)")


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


class CampaignConfig(Section):
    """A whole campaign file."""

    name: str = Field("campaign", description="shown in status and reports")
    description: str = Field("", description="shown in status and reports")
    llm: LLMConfig = Field(default_factory=LLMConfig)
    evolution: EvolutionConfig = Field(default_factory=EvolutionConfig)
    tasks: TasksConfig
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    prompts: PromptsConfig = Field(default_factory=PromptsConfig)
    output: OutputConfig = Field(default_factory=OutputConfig)
    hpo: HpoConfig = Field(default_factory=HpoConfig)
    llm_guided: GuidedConfig = Field(default_factory=GuidedConfig)
    novelty: NoveltyConfig = Field(default_factory=NoveltyConfig)
    record: RecordConfig = Field(default_factory=RecordConfig)


# Keys that may differ when a run continues (they change limits or speed, not what was decided).
# tasks.hub: where the hub is found (TUNESMITH_BENCHMARK_HUB, ../shared, the file's `hub`) decides no run: its
# tasks are named hub:APP/GPU, and a run whose tasks are not on the hub recorded whether ../shared existed then
RESUMABLE_CHANGES = {
    "llm.caps",
    "llm.timeout",
    "llm.retries",
    "llm.backoff",
    "llm.api_base",
    "llm.concurrency",
    "evolution.budget",
    "evaluation.workers",
    "evaluation.executor",
    "evaluation.worker_wait",
    "output.run_dir",
    "description",
    "hpo",
    "tasks.hub",
    "record",
}


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


def _one_line(path: str, exc: ValidationError) -> str:
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
        raise ConfigError(_one_line(path, exc)) from None


def load_config(path) -> CampaignConfig:
    """Read and validate a campaign TOML file."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such campaign file; give a path such as campaigns/quickstart.toml") from None
    except IsADirectoryError:
        raise ConfigError(
            f"{path}: is a folder, not a campaign file; give a TOML file such as campaigns/quickstart.toml"
        ) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not a text file (byte {exc.start} is not UTF-8); give a TOML campaign file such "
            "as campaigns/quickstart.toml"
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot read the campaign file ({exc.strerror}); check the path and its permissions"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix the syntax at that line") from None
    return parse_config(data, str(path))


def config_changes(old: dict, new: dict, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two config dicts."""
    keys = sorted(set(old) | set(new))
    out = []
    for k in keys:
        a, b, dotted = old.get(k), new.get(k), f"{prefix}{k}"
        if isinstance(a, dict) and isinstance(b, dict):
            out += config_changes(a, b, dotted + ".")
        elif a != b:
            out.append(dotted)
    return out


# Keys added after runs were made, with the value that reproduces how those runs were made (which
# is not the new default): a run directory whose config lacks one continues as it started.
LEGACY_VALUES = {
    "evolution.planning": "serial",
    "evaluation.aggregate": "mean",
    "evolution.edit": "full",
    "evolution.operators.crossover": 0.0,
    "evolution.niches.islands": 1,
    "evolution.niches.migration_interval": 3,
    "evolution.niches.map_elites": False,
    "evolution.niches.bins": 3,
    "evolution.bandit.enabled": False,
    "evolution.bandit.discount": 0.9,
    "evolution.bandit.exploration": 0.5,
    "llm.models": [],
    "tasks.validation": [],
    "tasks.finalists": 5,
    "evaluation.racing": False,
    "evaluation.indifference": 0.0,
}


def with_legacy_values(data: dict) -> dict:
    """A stored configuration with the keys it predates set as the Tunesmith that made it behaved."""
    import copy

    data = copy.deepcopy(data)
    for dotted, value in LEGACY_VALUES.items():
        *path, key = dotted.split(".")
        node = data
        for part in path:
            node = node.setdefault(part, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict):
            node.setdefault(key, value)
    return data


def _section_default(key: str):
    field = CampaignConfig.model_fields.get(key)
    factory = getattr(field, "default_factory", None)
    return factory().model_dump() if factory else None


def blocking_changes(old: dict, new: dict) -> list[str]:
    """Changed keys that would make continuing a run give a different run than it started as."""
    # a section added to Tunesmith after the run was made is no change while it keeps its defaults
    old = {**{k: v for k, v in new.items() if k not in old and v == _section_default(k)}, **old}
    return [k for k in config_changes(old, new) if not any(k == r or k.startswith(r + ".") for r in RESUMABLE_CHANGES)]


def campaign_file(path) -> Path:
    """The campaign file at `path`; else, for `campaigns/NAME.toml`, the copy shipped inside the package."""
    path = Path(path)
    if not path.exists() and path.parent == Path("campaigns"):  # installed from a wheel, run outside a checkout
        from generator.resources import CAMPAIGNS_DIR

        shipped = CAMPAIGNS_DIR / path.name
        if shipped.is_file():
            return shipped
    return path
