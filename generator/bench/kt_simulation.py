"""Kernel Tuner's own simulation mode (`engine=kerneltuner`): a strategy run by `tune_kernel` on a
cache file, its results turned into a Trace on Tunesmith's clock (or the package's, with
`accounting=package`); and seeding the global generators that Kernel Tuner's strategies use.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import tempfile
import warnings
from pathlib import Path

import numpy as np

from generator.errors import TunesmithError
from generator.scoring.score import Budget, Trace
from generator.tasks.cache import Task
from generator.tasks.space import SearchSpace


class StrategyError(TunesmithError):
    """A strategy that cannot be found or loaded; the message names it and the fix."""


def seed_everything(seed: int, space: SearchSpace | None = None) -> None:
    """Seed numpy's and Python's global generators (Kernel Tuner strategies use them) and the space."""
    np.random.seed(seed % 2**32)
    random.seed(seed)
    if space is not None:
        space.seed(seed)


_PLAIN_CACHES: dict[str, str] = {}  # task source -> uncompressed cache file Kernel Tuner can read
_READ_CACHE_MEMO: dict[str, dict] = {}


def _plain_cache(task: Task) -> str:
    """An uncompressed copy of the task's cache file (once per process), ending the way Kernel Tuner expects."""
    src = str(task.source)
    if src not in _PLAIN_CACHES:
        raw = Path(src).read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        doc = json.loads(raw)
        cache = doc.pop("cache")
        doc["cache"] = cache  # last key, compact: the text ends with "}}}", which Kernel Tuner accepts
        fd, path = tempfile.mkstemp(prefix="tunesmith-cache-", suffix=".json")
        with os.fdopen(fd, "w") as fh:
            json.dump(doc, fh, separators=(",", ":"))
        _PLAIN_CACHES[src] = path
    return _PLAIN_CACHES[src]


def _memoised_read_cache(original):
    """Kernel Tuner re-reads the (large) cache file on every run; simulation never writes it, so read it once."""
    def read_cache(cachefile, open_cache=True):
        if open_cache:
            return original(cachefile, open_cache)
        if cachefile not in _READ_CACHE_MEMO:
            _READ_CACHE_MEMO[cachefile] = original(cachefile, open_cache=False)
        return _READ_CACHE_MEMO[cachefile]
    read_cache.tunesmith_memo = True
    return read_cache


def run_kernel_tuner(task: Task, strategy, options: dict, seed: int, budget: Budget) -> Trace:
    """A strategy (built-in name or object with `tune()`) in Kernel Tuner's simulation mode on the task's cache.

    Kernel Tuner's budget counts the cached compile/verification/benchmark times plus the real
    time of the run (its start-up time is subtracted from the limit); the returned trace is put on
    Tunesmith's simulated clock (eval_seconds of each newly evaluated configuration).
    """
    import kernel_tuner
    from kernel_tuner import util

    if task.source is None:
        raise StrategyError(f"task {task.name}: has no cache file; Kernel Tuner's simulation needs one")
    if not getattr(util.read_cache, "tunesmith_memo", False):
        util.read_cache = _memoised_read_cache(util.read_cache)
    cache_path = _plain_cache(task)
    doc = util.read_cache(cache_path, open_cache=False)
    space = SearchSpace(task.space)
    restrictions = list(task.space.restrictions) or [lambda p: space.is_param_config_valid(tuple(p.values()))]
    strategy_options = dict(options)
    accounting = strategy_options.pop("accounting", "simulated")
    if accounting not in ("simulated", "package"):
        raise StrategyError(f"accounting={accounting!r}: use accounting=simulated or accounting=package")
    strategy_options["time_limit"] = budget.seconds
    if budget.max_fevals is not None:
        strategy_options["max_fevals"] = budget.max_fevals
    seed_everything(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results, _ = kernel_tuner.tune_kernel(
            doc["kernel_name"], "", doc.get("problem_size", 1), [], dict(task.space.tune_params),
            restrictions=restrictions, strategy=strategy, strategy_options=strategy_options,
            cache=cache_path, simulation_mode=True, quiet=True, verbose=False,
            objective=task.objective.name, objective_higher_is_better=task.objective.higher_is_better)
    return trace_of_results(task, space, results, accounting)


def trace_of_results(task: Task, space: SearchSpace, results: list[dict], accounting: str = "simulated") -> Trace:
    """Kernel Tuner's result list (revisits included) as a Trace.

    "simulated": each configuration once, at its eval_seconds (Tunesmith's clock). "package": every
    result, revisits included, at the T4 times the methodology package adds up (cached compile,
    verification and runtimes, plus this run's real framework and strategy time; a revisit keeps its
    runtimes), to reproduce the package's own experiments.
    """
    names = list(task.space.tune_params)
    seen, rows, seconds = set(), [], []
    for r in results:
        row = space.row_of(tuple(r[n] for n in names))
        if row is None:
            continue
        if accounting == "package":
            runtimes = r.get("times") if isinstance(r.get("times"), list) else []
            ms = sum(float(r.get(k) or 0) for k in ("compile_time", "verification_time", "framework_time",
                                                       "strategy_time")) + float(sum(runtimes))
            rows.append(row)
            seconds.append(ms / 1000)
        elif row not in seen:
            seen.add(row)
            rows.append(row)
            seconds.append(task.key.eval_seconds[row])
    return Trace(np.asarray(rows, dtype=np.int64), np.asarray(seconds, dtype=float), len(results))
