"""Times in a cache entry that are not measurements: negative, NaN or infinite.

Such a value cannot come from a clock: a broken brute-force run or a hand-edited cache wrote it.
Scored as is, it lies: a -1.0 objective becomes "the optimum", a negative runtime makes evaluations
free and drags the methodology's baseline (random search) and its cutoffs with it. A handful of them
(`tolerated`) count as failed configurations, with a warning; more make the cache unusable.
"""

from __future__ import annotations

import math

# The T4 time keys of a Kernel Tuner cache entry, in ms (`times`, the runtimes list, is checked too).
TIME_FIELDS = ("compile_time", "verification_time", "benchmark_time", "framework_time", "strategy_time")
MAX_BAD_FRACTION = 0.01  # at most 1% of the valid configurations ...
MAX_BAD_ENTRIES = 10  # ... and at most this many count as failed; more refuse the cache
FAILURE_KIND = "InvalidTimeConfig"


class TaskWarning(UserWarning):
    """A task file was usable only after setting something aside (the message says what)."""


def _bad(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and not (math.isfinite(v) and v >= 0)


def is_time(name: str) -> bool:
    """Objectives measured in time (time, time_per_step, ...) cannot be negative; others can."""
    return "time" in str(name).lower()


def bad_time(entry: dict, objective: str) -> str | None:
    """What is wrong with a cache entry's times ('time=-1.0', 'times holds nan'), or None if nothing."""
    value = entry.get(objective)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value) or (is_time(objective) and value < 0):
            return f"{objective}={value!r}"
    for key in TIME_FIELDS:
        if _bad(entry.get(key)):
            return f"{key}={entry[key]!r}"
    runtimes = entry.get("times")
    if isinstance(runtimes, list):
        for v in runtimes:
            if _bad(v):
                return f"times holds {v!r}"
    return None


def good_ms(entry: dict, key: str) -> float:
    """A time field of an entry in ms, 0 where it is missing or not a measurement."""
    v = entry.get(key)
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
    return float(v) if ok else 0.0


def tolerated(n_bad: int, n_valid: int) -> bool:
    """A handful: at most MAX_BAD_ENTRIES and at most MAX_BAD_FRACTION of the valid configurations."""
    return n_bad <= MAX_BAD_ENTRIES and n_bad <= MAX_BAD_FRACTION * n_valid


def describe(path, bad: list[tuple[str, str]], n_valid: int, names) -> str:
    """'<file>: 3 of 400 configurations have negative, NaN or infinite times (e.g. bx=1,ty=1: time=-1.0)'."""
    key, why = bad[0]
    config = ",".join(f"{n}={v}" for n, v in zip(names, key.split(",")))
    return f"{path}: {len(bad)} of {n_valid} configurations have negative, NaN or infinite times (e.g. {config}: {why})"
