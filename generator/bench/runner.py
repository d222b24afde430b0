"""Run a trusted strategy once on a cached task and return its Trace.

Three kinds of strategy, each named by a string (see `parse_strategy`):
- a Kernel Tuner built-in by name (`genetic_algorithm`, `pso:popsize=10`): run by Kernel Tuner
  itself in simulation mode on the task's cache, with the task's time budget as `time_limit`;
- an optimizer class from a Python file (`path/x.py` or `path/x.py:ClassName`), with the OptAlg
  interface of DESIGN.md: `__init__(budget=..., **hyperparameters)`, `__call__(func, searchspace)`;
  run in-process on Tunesmith's fast SearchSpace and Oracle;
- a Kernel Tuner strategy module from a Python file (a module-level `tune(searchspace, runner,
  tuning_options)`, e.g. an exported generated algorithm): run in-process on the fast SearchSpace,
  with Kernel Tuner's own CostFunc talking to a runner and budget backed by the Oracle.

Only trusted code runs here (it shares this process); untrusted candidates go through the sandbox.
Every run seeds numpy's and Python's global generators and the search space with its seed,
because Kernel Tuner's strategies draw from the global ones.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from generator import parsing
from generator.bench.kt_simulation import (
    StrategyError,
    run_kernel_tuner,
    seed_everything,
)
from generator.sandbox.candidate_names import candidate_names
from generator.scoring.oracle import Oracle, RunEnded, StopCriterionReached
from generator.scoring.score import Budget, Trace, budget_for
from generator.tasks.cache import Task
from generator.tasks.space import SearchSpace

# Built-ins whose code runs unchanged on the fast space and oracle (checked in tests/bench/test_bench.py);
# the others run in Kernel Tuner's own simulation.
FAST_BUILTINS = (
    "adaptive_tabu_greywolf",
    "basinhopping",
    "brute_force",
    "dual_annealing",
    "firefly_algorithm",
    "genetic_algorithm",
    "greedy_ils",
    "greedy_mls",
    "hybrid_vndx",
    "minimize",
    "mls",
    "nsga2",
    "nsga3",
    "ordered_greedy_mls",
    "pso",
    "random_sample",
    "simulated_annealing",
)


GUIDED = "llm_guided"  # LLM-guided tuning: the LLM proposes configurations (generator.guided.run)


@dataclass(frozen=True)
class StrategySpec:
    """What to run: a built-in name, or a file with a class or a `tune()` module, plus options."""

    label: str  # how tables and JSON name it (the text the user gave)
    kind: str  # "builtin" | "class" | "module" | "llm_guided"
    target: str  # built-in name, or file path
    class_name: str | None = None
    options: dict = field(default_factory=dict)
    seeder: StrategySpec | None = None  # llm_guided+X: the LLM's first round(s) seed X (generator.guided.run)


def builtin_names() -> list[str]:
    """Kernel Tuner's built-in strategy names."""
    from kernel_tuner.interface import strategy_map

    return sorted(strategy_map)


def parse_strategy(text: str) -> StrategySpec:
    """`NAME[:key=value...]` or `FILE.py[:ClassName][:key=value...]`; values are Python literals.

    `llm_guided[:key=value...]` is LLM-guided tuning; `llm_guided[:...]+OTHER` seeds OTHER with it.
    """
    head, plus, rest = text.strip().partition("+")
    if plus and head.split(":")[0].strip() == GUIDED:
        from dataclasses import replace

        inner = parse_strategy(rest)
        if inner.kind == GUIDED or inner.seeder is not None:
            raise StrategyError(f"{text}: seed an optimizer with llm_guided once, e.g. llm_guided+genetic_algorithm")
        if inner.kind == "builtin" and engine_of(inner) == "kerneltuner":
            raise StrategyError(
                f"{text}: {inner.target} runs in Kernel Tuner's own simulation, which cannot start "
                f"from seeds; seed one of {', '.join(FAST_BUILTINS)} or a .py file"
            )
        return replace(inner, label=text.strip(), seeder=parse_strategy(head))
    parts = text.strip().split(":")
    target, rest = parts[0], parts[1:]
    options, class_name = {}, None
    for token in rest:
        if "=" in token:
            key, _, raw = token.partition("=")
            try:
                options[key.strip()] = parsing.literal_eval(raw.strip())
            except (ValueError, SyntaxError):
                options[key.strip()] = raw.strip()
        elif token:
            class_name = token
    if target == GUIDED:
        return StrategySpec(text, GUIDED, GUIDED, None, options)
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise StrategyError(f"{target}: strategy file not found; check the path")
        kind = "module" if class_name is None and _only_tune(path) else "class"
        return StrategySpec(text, kind, str(path), class_name, options)
    names = builtin_names()
    if target not in names:
        raise StrategyError(
            f"strategy {target!r}: not a Kernel Tuner built-in, {GUIDED}, nor a .py file; "
            f"use one of {', '.join(names)}, {GUIDED} or a path to a .py file"
        )
    return StrategySpec(text, "builtin", target, None, options)


def _only_tune(path: Path) -> bool:
    """True if the file has a module-level tune() and no OPTIMIZER / optimizer class to call directly."""
    try:
        tree = parsing.parse(path.read_text(), str(path))
    except SyntaxError as exc:
        raise StrategyError(f"{path}:{exc.lineno}: syntax error ({exc.msg}); fix the file") from None
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assigned = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    return "tune" in names and "OPTIMIZER" not in assigned and not _optimizer_classes(tree)


def _optimizer_classes(tree: ast.Module) -> list[str]:
    return [
        n.name
        for n in tree.body
        if isinstance(n, ast.ClassDef) and any(isinstance(b, ast.FunctionDef) and b.name == "__call__" for b in n.body)
    ]


# ------------------------------------------------------------------------ loading files

_MODULES: dict[str, object] = {}


def load_module(path: str):
    """Import a strategy file (once per process)."""
    key = str(Path(path).resolve())
    if key not in _MODULES:
        name = f"tunesmith_strategy_{abs(hash(key))}"
        spec = importlib.util.spec_from_file_location(name, key)
        module = importlib.util.module_from_spec(spec)
        module.__dict__.update(candidate_names())  # OptAlg, StopCriterionReached: LLaMEA-style code assumes them
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # noqa: BLE001 - the user's file; report which and why
            raise StrategyError(f"{path}: importing it failed ({type(exc).__name__}: {exc}); fix the file") from None
        _MODULES[key] = module
    return _MODULES[key]


def optimizer_class(spec: StrategySpec):
    """The optimizer class a `class` spec names (explicitly, by OPTIMIZER, or the only one in the file)."""
    module = load_module(spec.target)
    if spec.class_name:
        cls = getattr(module, spec.class_name, None)
        if cls is None:
            raise StrategyError(f"{spec.target}: no class {spec.class_name!r}; check the name after ':'")
        return cls
    if getattr(module, "OPTIMIZER", None) is not None:
        return module.OPTIMIZER
    found = [
        obj
        for _, obj in inspect.getmembers(module, inspect.isclass)
        if obj.__module__ == module.__name__ and callable(obj) and "__call__" in vars(obj)
    ]
    if len(found) != 1:
        what = "no class with __call__" if not found else f"several classes ({', '.join(c.__name__ for c in found)})"
        raise StrategyError(f"{spec.target}: {what}; name one as {spec.target}:ClassName")
    return found[0]


# ------------------------------------------------------------------------ running


def engine_of(spec: StrategySpec) -> str:
    """Where a built-in runs: "fast" (its code on the fast space and oracle) or "kerneltuner" (simulation)."""
    engine = spec.options.get("engine", "auto")
    if engine not in ("auto", "fast", "kerneltuner"):
        raise StrategyError(f"{spec.label}: engine {engine!r} is unknown; use engine=fast or engine=kerneltuner")
    if engine == "auto":
        return "fast" if spec.target in FAST_BUILTINS else "kerneltuner"
    return engine


def run_once(
    task: Task, spec: StrategySpec, seed: int, budget: Budget | None = None, space: SearchSpace | None = None
) -> Trace:
    """One run of a strategy on a task with a seed; returns the trace (rows, simulated seconds, fevals)."""
    budget = budget or budget_for(task)
    options = {k: v for k, v in spec.options.items() if k != "engine"}
    if spec.kind == "builtin" and spec.target == "random_sample" and "fraction" not in options:
        # random_sample is the run the methodology's baseline models: random search without
        # replacement until the budget is spent. Kernel Tuner's default `fraction=0.1` instead stops
        # it after ceil(0.1 x space size) evaluations when only a time limit is given; where the
        # budget allows more (convolution A100: ~1,000 vs 437; an 11,130-configuration dedispersion
        # space: 1,113) the curve froze there while the baseline kept improving, and random search
        # scored -0.24 instead of ~0 (issue 19). `random_sample:fraction=0.1` restores the default.
        options["fraction"] = _random_sample_fraction(task, budget, engine_of(spec))
    require_runs_on(spec, task)
    if spec.kind == "builtin" and engine_of(spec) == "kerneltuner":
        return run_kernel_tuner(task, spec.target, options, seed, budget)
    space = space if space is not None else SearchSpace(task.space)
    seeds = None
    if spec.kind == GUIDED or spec.seeder is not None:
        from generator.guided.run import run_guided, seed_stage

        if spec.kind == GUIDED:
            return run_guided(task, options, seed, budget, space)
        seeds = seed_stage(task, spec.seeder.options, seed, budget, space)
    if spec.kind == "builtin":
        from kernel_tuner.interface import strategy_map

        return run_tune_module(
            task, strategy_map[spec.target], options, seed, budget, space, name=spec.target, seeds=seeds
        )
    if spec.kind == "class":
        return run_optimizer(task, optimizer_class(spec), options, seed, budget, space, seeds=seeds)
    return run_tune_module(task, load_module(spec.target), options, seed, budget, space, seeds=seeds)


def _random_sample_fraction(task: Task, budget: Budget, engine: str) -> float:
    """A `fraction` for random_sample that the budget, never the fraction, ends.

    Kernel Tuner's CostFunc snaps every sample of random_sample's one batch, evaluated or not, so
    fraction=1 costs a pass over the whole space per run (0.3 s on 11,130 configurations). On the
    simulated clock it is enough to ask for the number of the space's cheapest configurations whose
    times add up past the budget: no run of distinct configurations evaluates more. numpy draws
    without replacement as a prefix of one permutation, so the runs are those of fraction=1.
    Kernel Tuner's own simulation (another clock) and live tasks (times unknown) get 1.
    """
    if engine == "kerneltuner" or getattr(task, "oracle_class", None) is not None or budget.seconds is None:
        return 1.0
    cheapest_first = np.cumsum(np.sort(np.asarray(task.key.eval_seconds, dtype=float)))
    enough = int(np.searchsorted(cheapest_first, budget.seconds, side="right")) + 1
    return min(1.0, enough / cheapest_first.size)


def require_runs_on(spec: StrategySpec, task: Task) -> None:
    """A live task (its oracle measures on the device) takes strategy files and the built-ins that run on
    Tunesmith's own space, and llm_guided; Kernel Tuner's simulation and hybrids need a cached task."""
    if getattr(task, "oracle_class", None) is None:
        return
    if spec.seeder is not None or (spec.kind == "builtin" and engine_of(spec) == "kerneltuner"):
        raise StrategyError(
            f"{spec.label}: runs on cached tasks only (Kernel Tuner's simulation, or a hybrid's "
            f"seeds), not on live task {task.name}; use a strategy file, llm_guided or one of "
            f"the built-ins {', '.join(FAST_BUILTINS)}, or the problem's cached task"
        )


def run_optimizer(task: Task, cls, options: dict, seed: int, budget: Budget, space: SearchSpace, seeds=None) -> Trace:
    """An OptAlg-style class on the fast search space and oracle (after `seeds`, a SeedRun, if given)."""
    seed_everything(seed, space)
    oracle = _oracle(task, budget, space)
    if seeds is not None:  # already evaluated, charged first; the optimizer's samples start with them
        from generator.scoring.seeding import SeededSpace

        seeds.charge(oracle)
        space = SeededSpace(space, seeds.ranked)
    try:
        optimizer = cls(**options)
    except TypeError as exc:
        raise StrategyError(
            f"{cls.__name__}: cannot be built with options {options} ({exc}); check the option names"
        ) from None
    oracle.end_ignored_stop = True  # an optimizer that swallows the stop and calls again is ended, not looped
    try:
        optimizer(oracle, space)
    except (StopCriterionReached, RunEnded):
        pass
    return oracle.trace()


def run_tune_module(
    task: Task, module, options: dict, seed: int, budget: Budget, space: SearchSpace, name: str = "custom", seeds=None
) -> Trace:
    """A Kernel Tuner strategy module (`tune()`), with its CostFunc running on the oracle.

    The module sees a fresh Kernel Tuner-style search space for this run (RunSpace) and, as in
    `tune_kernel`, a fevals limit of the space size when none is given.
    """
    from kernel_tuner.interface import Options

    from generator.bench.ktspace import RunSpace

    seed_everything(seed, space)
    max_fevals = budget.max_fevals if budget.max_fevals is not None else space.size
    oracle = _oracle(task, Budget(budget.seconds, max_fevals), space)
    run_space = RunSpace(space)
    if seeds is not None:  # already evaluated, charged first; the strategy's samples start with them
        from generator.scoring.seeding import seed_run_space

        seeds.charge(oracle)
        seed_run_space(run_space, seeds.ranked)
    tuning_options = Options(
        tune_params=space.tune_params,
        restrictions=list(task.space.restrictions),
        restrictions_unmodified=list(task.space.restrictions),
        # Kernel Tuner 1.5 keeps objectives as lists (multi-objective support)
        objective=[task.objective.name],
        objective_higher_is_better=[task.objective.higher_is_better],
        strategy_options=Options(options),
        strategy=name,
        budget=_OracleBudget(oracle),
        verbose=False,
        metrics=None,
        cache={},
        simulation_mode=True,
        time_limit=budget.seconds,
        seed=seed % 2**32,
    )  # pymoo (nsga2, nsga3) draws from its own generator, seeded by this alone
    if budget.max_fevals is not None:  # as tune_kernel: the key exists only when the user gave it
        tuning_options["max_fevals"] = budget.max_fevals
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            module.tune(run_space, _OracleRunner(oracle, task), tuning_options)
        except StopCriterionReached:
            pass
    return oracle.trace()


def _oracle(task: Task, budget: Budget, space: SearchSpace) -> Oracle:
    """The task's oracle: looked up in the cache, or for a live task measured on its device (LiveOracle)."""
    return (getattr(task, "oracle_class", None) or Oracle)(task, budget, space)


class _OracleBudget:
    """Kernel Tuner's TuningBudget surface, on the oracle's simulated clock."""

    def __init__(self, oracle: Oracle):
        self.oracle = oracle
        self.time_limit = oracle.budget.seconds
        self.max_fevals = oracle.budget.max_fevals

    def is_done(self) -> bool:
        return self.oracle.is_done()

    def raise_exception_if_done(self) -> None:
        self.oracle._raise_if_done()

    def get_fraction_consumed(self) -> float:
        return self.oracle._fraction()

    def add_evaluations(self, n=1) -> None:  # the oracle counts for itself
        pass

    def add_time(self, seconds=0, milliseconds=0) -> None:
        pass


class _OracleRunner:
    """Kernel Tuner's runner surface: `run(configs, tuning_options)` -> result dicts, from the oracle."""

    def __init__(self, oracle: Oracle, task: Task):
        from kernel_tuner.util import RuntimeFailedConfig

        self.oracle = oracle
        self.names = list(task.space.tune_params)
        self.objective = task.objective.name
        self.failed = RuntimeFailedConfig()
        self.simulation_mode = True
        self.dev = SimpleNamespace(max_threads=1_000_000_000, name="Simulation")

    def run(self, configs, tuning_options):
        out = []
        for cfg in configs:
            if self.oracle.is_done():
                out.append(None)
                continue
            self.oracle.calls += 1  # CostFunc only sends configurations that passed the restrictions
            row = self.oracle.space.row_of(tuple(cfg))
            result = dict(zip(self.names, cfg))
            if row is None:
                result["__error__"] = self.failed
            else:
                self.oracle.record(row)
                # a live oracle's own measurements, else the cache's value
                value = getattr(self.oracle, "values", self.oracle.task.key.values)[row]
                if np.isnan(value):
                    result["__error__"] = self.failed
                else:
                    result[self.objective] = float(value)
            out.append(result)
        return out

    def add_strategy_time(self, seconds) -> None:
        pass

    def get_environment(self, tuning_options):
        return {"simulation": True}

    def shutdown(self) -> None:
        pass
