"""Tuning tasks: a brute-forced search space (Kernel Tuner cache file) plus its restrictions.

A Task is split in two on purpose. `SpaceSpec` is public (parameters, values, restrictions, the
valid configurations) and may be handed to untrusted optimizer code. `AnswerKey` holds the measured
objective values and times; it never leaves the process that scores.

Times (see AnswerKey): a fresh evaluation costs compile + verification + kernel runtimes (the sum
of the cache's `times`, the T4 "runtimes") on Tunesmith's simulated clock; the brute-force run's
framework and strategy time are added only for the methodology's baseline and cutoffs, which
autotuning_methodology computes from the full T4 times.
"""

from __future__ import annotations

import gzip
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from generator.errors import TunesmithError
from generator.tasks import cache_sanity
from generator.tasks.restrictions import RestrictionError, valid_indices

# Keys of a Kernel Tuner cache entry that carry the time it cost to evaluate a configuration (ms).
TIME_KEYS = ("compile_time", "verification_time", "benchmark_time")
# Keys that the brute-force run spent outside compiling, verifying and running the kernel (ms).
OVERHEAD_KEYS = ("framework_time", "strategy_time")
CACHE_KEYS = ("tune_params_keys", "tune_params", "cache")


@dataclass(frozen=True)
class Budget:
    """What one run may spend on a task: simulated seconds, optionally also unique evaluations."""

    seconds: float  # the methodology's 95% cutoff time, plus the package's 10% margin
    max_fevals: int | None = None


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


# ---------------------------------------------------------------------------- reading files


def _read_json(path: Path) -> dict:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise TaskError(f"{path}: file not found; check the path") from None
    except IsADirectoryError:
        raise TaskError(f"{path}: is a directory; give a cache file or a benchmark-hub directory") from None
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        doc = _loads(raw)
    except (ValueError, UnicodeDecodeError, OSError, EOFError) as exc:
        msg = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise TaskError(
            f"{path}: not a JSON file ({msg}); give a Kernel Tuner cache file (.json or .json.gz)"
        ) from None
    if not isinstance(doc, dict):
        raise TaskError(f"{path}: top level is a {type(doc).__name__}, not an object; give a Kernel Tuner cache file")
    return doc


def _loads(raw: bytes):
    try:
        import orjson  # several times faster on the hub's multi-megabyte caches

        return orjson.loads(raw)
    except ImportError:
        pass
    except ValueError:  # e.g. NaN literals, which Python's json writes and orjson refuses
        pass
    return json.loads(raw)


def read_t1_restrictions(path) -> tuple[str, ...]:
    """The restriction expressions of a T1 input file (ConfigurationSpace.Conditions[].Expression)."""
    path = Path(path)
    doc = _read_json(path)
    try:
        conditions = doc["ConfigurationSpace"].get("Conditions", [])
        return tuple(str(c["Expression"]) for c in conditions)
    except (KeyError, TypeError, AttributeError):
        raise TaskError(f"{path}: no ConfigurationSpace.Conditions[].Expression; give a T1 kernel file") from None


def valid_index_matrix(path, tune_params: dict[str, list], restrictions) -> np.ndarray:
    """The configurations of the Cartesian product that pass every restriction (vectorised)."""
    try:
        return valid_indices(tune_params, restrictions)
    except RestrictionError as exc:
        raise TaskError(f"{path}: {exc}") from None


# ---------------------------------------------------------------------------- one cache file


def load_cache_task(
    path, restrictions=(), name: str | None = None, objective: Objective | None = None, info: dict | None = None
) -> Task:
    """Load one Kernel Tuner cache file as a Task; restrictions decide which configurations are valid."""
    path = Path(path)
    doc = _read_json(path)
    tune_params = _tune_params(path, doc)
    objective = objective or Objective(*_header_objective(doc))
    cache = doc["cache"]
    if restrictions:
        valid = valid_index_matrix(path, tune_params, restrictions)
    else:
        valid = _cached_index_matrix(path, tune_params, cache)
    if len(valid) == 0:
        raise TaskError(f"{path}: no configuration passes the restrictions; check the restrictions")
    values, failed, seconds, baseline, kinds = _answer_arrays(path, tune_params, valid, cache, objective.name)
    meta = {k: doc.get(k) for k in ("device_name", "kernel_name", "problem_size")}
    meta.update(info or {})
    task_name = name or path.name.split(".")[0]
    return Task(
        task_name,
        SpaceSpec(tune_params, tuple(restrictions), valid),
        AnswerKey(values, failed, seconds, kinds, baseline),
        objective,
        meta,
        path,
    )


def _tune_params(path: Path, doc: dict) -> dict[str, list]:
    if "results" in doc and "cache" not in doc:
        raise TaskError(
            f"{path}: a T4 results file, not a Kernel Tuner cache; give the cache file "
            "(for the hub: cachefiles/<app>/<GPU>.json.gz, without _T4)"
        )
    for key in CACHE_KEYS:
        if key not in doc:
            raise TaskError(
                f"{path}: missing key {key!r}; give a Kernel Tuner cache file (tune_params_keys, tune_params, cache)"
            )
    if not isinstance(doc["cache"], dict) or not doc["cache"]:
        raise TaskError(f"{path}: 'cache' holds no configurations; brute-force the space first")
    tp = doc["tune_params"]
    if not isinstance(tp, dict) or not all(isinstance(v, list) and v for v in tp.values()):
        raise TaskError(f"{path}: 'tune_params' must map each parameter to a non-empty list of values; fix the file")
    keys = list(doc["tune_params_keys"])
    if keys != list(tp):
        raise TaskError(
            f"{path}: parameter order of tune_params {list(tp)} does not match "
            f"tune_params_keys {keys}; reorder tune_params to match"
        )
    return {k: list(tp[k]) for k in keys}


def _cached_index_matrix(path: Path, tune_params: dict, cache: dict) -> np.ndarray:
    """Without restrictions, the valid configurations are those in the cache (minus InvalidConfig ones)."""
    lookup = [{str(v): i for i, v in enumerate(vals)} for vals in tune_params.values()]
    rows = []
    for key, entry in cache.items():
        if isinstance(entry, dict) and "InvalidConfig" in (str(entry.get("__error__")), str(entry.get("time"))):
            continue
        parts = key.split(",")
        try:
            rows.append(tuple(lk[p] for lk, p in zip(lookup, parts, strict=True)))
        except (KeyError, ValueError):
            raise TaskError(
                f"{path}: cache key {key!r} does not match tune_params; regenerate the cache or fix tune_params"
            ) from None
    return np.asarray(sorted(rows), dtype=np.int32).reshape(-1, len(tune_params))


def _header_objective(doc: dict) -> tuple[str, bool]:
    """Objective name and direction of a cache header; Kernel Tuner 1.5.0 writes them as one-item lists."""
    name, higher = doc.get("objective", "time"), doc.get("objective_higher_is_better", False)
    name = name[0] if isinstance(name, list) and name else name
    higher = higher[0] if isinstance(higher, list) and higher else higher
    return str(name), bool(higher)


def _answer_arrays(path, tune_params, valid, cache, objective_name):
    n = len(valid)
    values = np.full(n, np.nan)
    failed = np.zeros(n, dtype=bool)
    seconds = np.zeros(n)
    overhead = np.zeros(n)
    kinds: dict[int, str] = {}
    value_lists = [[str(v) for v in vals] for vals in tune_params.values()]
    missing = []
    bad = []  # (key, what): negative, NaN or infinite times (generator/tasks/cache_sanity.py)
    has_objective = False
    for row, idx in enumerate(valid.tolist()):
        key = ",".join([vals[i] for vals, i in zip(value_lists, idx)])
        entry = cache.get(key)
        if not isinstance(entry, dict):
            missing.append(key)
            continue
        if not any(k in entry for k in TIME_KEYS):
            raise TaskError(
                f"{path}: entry {key} has no timing keys {TIME_KEYS}; "
                "give a cache written by Kernel Tuner (it records them)"
            )
        has_objective |= objective_name in entry
        why = cache_sanity.bad_time(entry, objective_name)
        if why is not None:  # not a measurement: counted as a failed configuration (or refused below)
            bad.append((key, why))
            ms = [cache_sanity.good_ms(entry, k) for k in cache_sanity.TIME_FIELDS]
            seconds[row], overhead[row] = (ms[0] + ms[1]) / 1000.0, (ms[3] + ms[4]) / 1000.0
            failed[row] = True
            kinds[row] = cache_sanity.FAILURE_KIND
            continue
        seconds[row] = _eval_ms(entry) / 1000.0
        overhead[row] = (_num(entry.get("framework_time")) + _num(entry.get("strategy_time"))) / 1000.0
        value = entry.get(objective_name, entry.get("__error__"))
        if isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value):
            values[row] = float(value)
        else:
            failed[row] = True
            kinds[row] = str(value if value is not None else "MissingObjective")
    if missing:
        raise TaskError(
            f"{path}: {len(missing)} valid configurations are missing from the cache "
            f"(first: {missing[0]}); brute-force the whole space or fix the restrictions"
        )
    if bad:
        msg = cache_sanity.describe(path, bad, n, tune_params)
        if not cache_sanity.tolerated(len(bad), n):
            raise TaskError(f'{msg}; re-measure them, or mark them failed ("__error__": "RuntimeFailedConfig")')
        warnings.warn(cache_sanity.TaskWarning(f"{msg}; they count as failed configurations"), stacklevel=4)
    if not has_objective:
        raise TaskError(
            f"{path}: no entry has the objective {objective_name!r}; set the objective to a key the cache entries hold"
        )
    if np.count_nonzero(~failed) < 2:
        raise TaskError(
            f"{path}: fewer than two configurations have a valid {objective_name!r}; "
            "a task needs measured configurations to score against"
        )
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
        try:
            run_ms = float(sum(runtimes))  # plain sum, in order: the package sums the same way
        except TypeError:
            run_ms = sum(_num(t) for t in runtimes)
    elif "__error__" in entry or isinstance(entry.get("time"), str):
        run_ms = 0.0
    else:
        run_ms = _num(entry.get("benchmark_time"))
    return _num(entry.get("compile_time")) + _num(entry.get("verification_time")) + run_ms
