"""Kernel Tuner's own simulation mode (`engine=kerneltuner`): a strategy run by `tune_kernel` on a
cache file, its results turned into a Trace on Tunesmith's clock (or the package's, with
`accounting=package`); and seeding the global generators that Kernel Tuner's strategies use.
"""

from __future__ import annotations

import atexit
import gzip
import json
import os
import random
import shutil
import tempfile
import warnings
from contextlib import contextmanager
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


_PLAIN_CACHES: dict[tuple[str, str], str] = {}  # (folder, task source) -> uncompressed cache file Kernel Tuner reads
_READ_CACHE_MEMO: dict[str, dict] = {}
_FOLDER: str | None = None  # where the copies go: the running bench's folder, else one per process


@contextmanager
def plain_cache_folder():
    """A temporary folder for the uncompressed cache copies Kernel Tuner reads, removed with them on leaving.

    The copies are large (166 MB after a day of `bench`, issue 24), so they live only as long as
    the run: `bench` opens this before its worker processes start (forked workers inherit it; pass
    the path to `use_plain_cache_folder` in spawned ones) and leaves it on any exit, Ctrl-C and
    crashes included.
    """
    global _FOLDER
    previous = _FOLDER
    with tempfile.TemporaryDirectory(prefix="tunesmith-caches-") as folder:
        _FOLDER = folder
        try:
            yield folder
        finally:
            _FOLDER = previous
            _forget(folder)


def use_plain_cache_folder(folder: str | None) -> None:
    """In a worker process: put copies in the parent's folder (which the parent removes)."""
    global _FOLDER
    _FOLDER = folder


def _forget(folder: str) -> None:
    for key, path in list(_PLAIN_CACHES.items()):
        if path.startswith(folder + os.sep):
            del _PLAIN_CACHES[key]
            _READ_CACHE_MEMO.pop(path, None)


def _folder() -> str:
    """The folder for copies; outside a bench run, one per process, removed when the process exits."""
    global _FOLDER
    if _FOLDER is None or not os.path.isdir(_FOLDER):
        _FOLDER = tempfile.mkdtemp(prefix="tunesmith-caches-")
        atexit.register(_remove_if_mine, _FOLDER, os.getpid())
    return _FOLDER


def _remove_if_mine(folder: str, pid: int) -> None:
    if os.getpid() == pid:  # a forked child inherits the handler; the folder is its parent's
        shutil.rmtree(folder, ignore_errors=True)


def _plain_cache(task: Task) -> str:
    """An uncompressed copy of the task's cache file (once per folder), ending the way Kernel Tuner expects."""
    src, folder = str(task.source), _folder()
    key = (folder, src)  # a bench run makes its own copies, in its own folder
    if key not in _PLAIN_CACHES or not os.path.isfile(_PLAIN_CACHES[key]):
        raw = Path(src).read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        doc = json.loads(raw)
        cache = doc.pop("cache")
        doc["cache"] = cache  # last key, compact: the text ends with "}}}", which Kernel Tuner accepts
        fd, path = tempfile.mkstemp(prefix="tunesmith-cache-", suffix=".json", dir=folder)
        with os.fdopen(fd, "w") as fh:
            json.dump(doc, fh, separators=(",", ":"))
        _PLAIN_CACHES[key] = path
    return _PLAIN_CACHES[key]


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
    if strategy == "brute_force":
        raise StrategyError(
            "brute_force:engine=kerneltuner: Kernel Tuner's brute_force takes no time limit, so it "
            "cannot run on a budget there; use brute_force (the fast engine ends it at the budget)"
        )
    if not getattr(util.read_cache, "tunesmith_memo", False):
        util.read_cache = _memoised_read_cache(util.read_cache)
    cache_path = _plain_cache(task)
    doc = util.read_cache(cache_path, open_cache=False)
    space = SearchSpace(task.space)
    restrictions = kernel_tuner_restrictions(task, space)
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
            doc["kernel_name"],
            "",
            doc.get("problem_size", 1),
            [],
            dict(task.space.tune_params),
            restrictions=restrictions,
            strategy=strategy,
            strategy_options=strategy_options,
            cache=cache_path,
            simulation_mode=True,
            quiet=True,
            verbose=False,
            seed=seed % 2**32,
            objective=task.objective.name,
            objective_higher_is_better=task.objective.higher_is_better,
        )
    return trace_of_results(task, space, results, accounting)


def kernel_tuner_restrictions(task: Task, space: SearchSpace) -> list:
    """The restrictions to hand Kernel Tuner: the task's own, or, for a space without any, its cached configurations.

    A space without restrictions is the configurations its cache holds, and Kernel Tuner's
    simulation refuses a configuration that passes the restrictions but is missing from the cache.
    A Python lambda cannot say "is in the space": Kernel Tuner 1.5 rewrites every lambda restriction
    from its source text into an expression over the parameter names it mentions, and one that
    mentions none (`lambda p: space.is_param_config_valid(...)`) became a constraint of no
    arguments that python-constraint called with all of them (issue 26: every Kernel Tuner-engine
    strategy crashed on pnpoly). A FunctionConstraint is passed through as it is, called with the
    values in parameter order, by the solver and by `check_restrictions` alike.
    """
    if task.space.restrictions:
        return list(task.space.restrictions)
    if space.size == int(np.prod([len(v) for v in task.space.tune_params.values()])):
        return []  # the whole Cartesian product is cached: nothing to exclude
    from constraint import FunctionConstraint

    def in_space(
        *values,
    ) -> bool:  # a plain function: Kernel Tuner deep-copies restrictions, and keeps functions as they are
        return space.row_of(values) is not None

    return [FunctionConstraint(in_space)]


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
            ms = sum(
                float(r.get(k) or 0) for k in ("compile_time", "verification_time", "framework_time", "strategy_time")
            ) + float(sum(runtimes))
            rows.append(row)
            seconds.append(ms / 1000)
        elif row not in seen:
            seen.add(row)
            rows.append(row)
            seconds.append(task.key.eval_seconds[row])
    return Trace(np.asarray(rows, dtype=np.int64), np.asarray(seconds, dtype=float), len(results))
