"""Tuning tasks: a brute-forced search space (Kernel Tuner cache file) plus its restrictions.

A Task is split in two on purpose. `SpaceSpec` is public (parameters, values, restrictions, the
valid configurations) and may be handed to untrusted optimizer code. `AnswerKey` holds the measured
objective values and times; it never leaves the process that scores.
"""

from __future__ import annotations

import gzip
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from generator.errors import TunesmithError

# Keys of a Kernel Tuner cache entry that carry the time it cost to evaluate a configuration (ms).
TIME_KEYS = ("compile_time", "verification_time", "benchmark_time")
# Keys that the brute-force run spent outside compiling, verifying and running the kernel (ms).
OVERHEAD_KEYS = ("framework_time", "strategy_time")


class TaskError(TunesmithError):
    """A task file that cannot be used; the message names the file, the problem and the fix."""


@dataclass(frozen=True)
class Objective:
    """What is optimised and in which direction."""

    name: str = "time"
    higher_is_better: bool = False


@dataclass(frozen=True, eq=False)
class SpaceSpec:
    """The public description of a search space: safe to give to untrusted code."""

    tune_params: dict[str, list]  # parameter -> values, in `tune_params_keys` order
    restrictions: tuple[str, ...]
    valid: np.ndarray  # (n_valid, n_params) int32 indices into each parameter's value list

    @property
    def param_names(self) -> list[str]:
        return list(self.tune_params)

    @property
    def cartesian_size(self) -> int:
        return int(np.prod([len(v) for v in self.tune_params.values()]))

    def config_of(self, row: int) -> tuple:
        """The parameter values of valid configuration `row`."""
        return tuple(vals[i] for vals, i in zip(self.tune_params.values(), self.valid[row]))


@dataclass(frozen=True, eq=False)
class AnswerKey:
    """The secret half of a task, row-aligned with `SpaceSpec.valid`."""

    values: np.ndarray  # objective value per valid configuration; NaN where it failed
    failed: np.ndarray  # bool: the configuration failed to compile or run
    eval_seconds: np.ndarray  # simulated cost of a fresh evaluation: compile + verification + runtimes
    failure_kinds: dict[int, str] = field(default_factory=dict)  # row -> e.g. "RuntimeFailedConfig"
    # The brute-force run's full T4 time per configuration (eval_seconds + its framework and strategy
    # time): what the methodology's baseline and cutoffs use. None = same as eval_seconds.
    baseline_seconds: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class Task:
    """One tuning task: a space, its answer key, its objective, and what is known about the kernel."""

    name: str
    space: SpaceSpec
    key: AnswerKey
    objective: Objective
    info: dict = field(default_factory=dict)  # kernel_name, device_name, problem_size, application
    source: Path | None = None


def _read_json(path: Path) -> dict:
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise TaskError(f"{path}: file not found; check the path") from None
    except (json.JSONDecodeError, UnicodeDecodeError, OSError, EOFError) as exc:
        raise TaskError(f"{path}: not a JSON file ({exc}); give a Kernel Tuner cache file (.json or .json.gz)") from None


def read_t1_restrictions(path: Path) -> tuple[str, ...]:
    """The restriction expressions of a T1 input file (ConfigurationSpace.Conditions[].Expression)."""
    doc = _read_json(path)
    try:
        conditions = doc["ConfigurationSpace"].get("Conditions", [])
        return tuple(str(c["Expression"]) for c in conditions)
    except (KeyError, TypeError, AttributeError):
        raise TaskError(f"{path}: no ConfigurationSpace.Conditions[].Expression; give a T1 kernel file") from None


def _compile_restrictions(path: Path, restrictions, names) -> list:
    compiled = []
    for expr in restrictions:
        try:
            code = compile(expr, "<restriction>", "eval")
        except SyntaxError as exc:
            raise TaskError(f"{path}: restriction {expr!r} does not parse ({exc.msg}); fix its Python syntax") from None
        unknown = set(code.co_names) - set(names) - {"min", "max", "abs", "int", "float", "round", "len"}
        if unknown:
            raise TaskError(f"{path}: restriction {expr!r} names unknown parameters {sorted(unknown)}; use names from tune_params")
        compiled.append(code)
    return compiled


def valid_index_matrix(path: Path, tune_params: dict[str, list], restrictions) -> np.ndarray:
    """Enumerate the Cartesian product and keep the configurations that pass every restriction."""
    names = list(tune_params)
    compiled = _compile_restrictions(path, restrictions, names)
    safe = {"__builtins__": {}, "min": min, "max": max, "abs": abs, "int": int, "float": float, "round": round}
    rows = []
    for idx in itertools.product(*[range(len(v)) for v in tune_params.values()]):
        env = {n: tune_params[n][i] for n, i in zip(names, idx)}
        if all(eval(code, safe, env) for code in compiled):
            rows.append(idx)
    return np.asarray(rows, dtype=np.int32).reshape(-1, len(names))


def _entry_value(entry: dict, objective: str):
    value = entry.get(objective, entry.get("__error__"))
    return value


def load_cache_task(path, restrictions=(), name: str | None = None, objective: Objective | None = None,
                    info: dict | None = None) -> Task:
    """Load one Kernel Tuner cache file as a Task; restrictions decide which configurations are valid."""
    path = Path(path)
    doc = _read_json(path)
    for key in ("tune_params_keys", "tune_params", "cache"):
        if key not in doc:
            raise TaskError(f"{path}: missing key {key!r}; give a Kernel Tuner cache file")
    keys = list(doc["tune_params_keys"])
    if keys != list(doc["tune_params"]):
        raise TaskError(f"{path}: parameter order of tune_params {list(doc['tune_params'])} does not match "
                        f"tune_params_keys {keys}; reorder tune_params to match")
    tune_params = {k: list(doc["tune_params"][k]) for k in keys}
    objective = objective or Objective(doc.get("objective", "time"), bool(doc.get("objective_higher_is_better", False)))
    cache = doc["cache"]
    if restrictions:
        valid = valid_index_matrix(path, tune_params, restrictions)
    else:
        valid = _cached_index_matrix(path, tune_params, cache)
    values, failed, seconds, baseline, kinds = _answer_arrays(path, tune_params, valid, cache, objective.name)
    meta = {k: doc.get(k) for k in ("device_name", "kernel_name", "problem_size")}
    meta.update(info or {})
    task_name = name or path.name.split(".")[0]
    return Task(task_name, SpaceSpec(tune_params, tuple(restrictions), valid),
                AnswerKey(values, failed, seconds, kinds, baseline), objective, meta, path)


def _cached_index_matrix(path: Path, tune_params: dict, cache: dict) -> np.ndarray:
    lookup = [{str(v): i for i, v in enumerate(vals)} for vals in tune_params.values()]
    rows = []
    for key in cache:
        parts = key.split(",")
        try:
            rows.append(tuple(lk[p] for lk, p in zip(lookup, parts, strict=True)))
        except (KeyError, ValueError):
            raise TaskError(f"{path}: cache key {key!r} does not match tune_params; regenerate the cache") from None
    return np.asarray(sorted(rows), dtype=np.int32).reshape(-1, len(tune_params))


def _answer_arrays(path, tune_params, valid, cache, objective_name):
    n = len(valid)
    values = np.full(n, np.nan)
    failed = np.zeros(n, dtype=bool)
    seconds = np.zeros(n)
    overhead = np.zeros(n)
    kinds: dict[int, str] = {}
    value_lists = list(tune_params.values())
    for row, idx in enumerate(valid):
        key = ",".join(str(vals[i]) for vals, i in zip(value_lists, idx))
        entry = cache.get(key)
        if entry is None:
            raise TaskError(f"{path}: valid configuration {key} is missing from the cache; "
                            "brute-force the whole space or fix the restrictions")
        if not any(k in entry for k in TIME_KEYS):
            raise TaskError(f"{path}: entry {key} has no timing keys {TIME_KEYS}; give a cache written by Kernel Tuner")
        seconds[row] = _eval_ms(entry) / 1000.0
        overhead[row] = sum(_num(entry.get(k)) for k in OVERHEAD_KEYS) / 1000.0
        value = _entry_value(entry, objective_name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value):
            values[row] = float(value)
        else:
            failed[row] = True
            kinds[row] = str(value if value is not None else "MissingObjective")
    return values, failed, seconds, seconds + overhead, kinds


def _num(x) -> float:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else 0.0


def _eval_ms(entry: dict) -> float:
    """Simulated cost of evaluating a configuration, as the methodology's T4 times count it (ms).

    compile + verification + the kernel runtimes: the sum of `times` (the T4 "runtimes") where
    the cache has them, else `benchmark_time`; failed configurations have no `times` and count 0.
    """
    runtimes = entry.get("times")
    if isinstance(runtimes, list):
        run_ms = sum(_num(t) for t in runtimes)
    elif "__error__" in entry or isinstance(entry.get("time"), str):
        run_ms = 0.0
    else:
        run_ms = _num(entry.get("benchmark_time"))
    return _num(entry.get("compile_time")) + _num(entry.get("verification_time")) + run_ms


def load_hub_dir(root) -> list[Task]:
    """Load every cache of a benchmark-hub layout: kernels/<app>.json + cachefiles/<app>/<GPU>.json.gz."""
    root = Path(root)
    kernels = root / "kernels"
    if not kernels.is_dir():
        raise TaskError(f"{root}: no kernels/ folder; give a benchmark-hub directory (kernels/, cachefiles/)")
    tasks = []
    for t1 in sorted(kernels.glob("*.json")):
        app = t1.stem
        restrictions = read_t1_restrictions(t1)
        application = json.loads(t1.read_text()).get("KernelSpecification", {})
        for cache in sorted((root / "cachefiles" / app).glob("*.json*")):
            gpu = cache.name.split(".")[0]
            if gpu.endswith("_T4"):  # the same measurements in T4 format; the plain cache suffices
                continue
            tasks.append(load_cache_task(cache, restrictions, name=f"{app}/{gpu}",
                                         info={"application": application, "app": app, "gpu": gpu}))
    if not tasks:
        raise TaskError(f"{root}: no cache files under cachefiles/<app>/; check the directory")
    return tasks


def load_tasks(path) -> list[Task]:
    """Load a task set: a benchmark-hub directory or a single cache file."""
    path = Path(path)
    if path.is_dir():
        return load_hub_dir(path)
    if not path.exists():
        raise TaskError(f"{path}: no such file or directory; give a cache file or a benchmark-hub directory")
    return [load_cache_task(path)]
