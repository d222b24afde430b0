"""Building a problem's measured search space: a resumable brute force with Kernel Tuner.

`build_cache` runs Kernel Tuner's own `tune_kernel` (CuPy backend for CUDA problems, its C backend
for the CPU problem) with a strategy object of ours that measures every configuration not yet in
the cache file, one at a time, until a deadline. Kernel Tuner appends each measurement to the cache
file, so a later build resumes where this one stopped; a complete space is closed, given the
per-configuration overhead times, and gzipped as problems/caches/<problem>/<GPU>.json.gz.
"""

from __future__ import annotations

import gzip
import json
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from generator.live.kernel import (
    VERIFY_FAILED,
    config_key,
    device_label,
    device_name,
    patch_cupy_uuid,
    require_device,
    scratch_dir,
)
from generator.tasks.problems import Problem, load_problem


class _BruteForce:
    """A Kernel Tuner strategy: every configuration not yet cached, one at a time, until a deadline."""

    def __init__(self, deadline: float, progress: bool, sample: int | None = None):
        self.deadline, self.progress, self.sample = deadline, progress, sample
        self.total = self.done_before = self.measured = 0
        self.wrong: list[str] = []
        self.overheads: dict[str, dict] = {}
        self.finished = False

    def tune(self, searchspace, runner, tuning_options):
        from kernel_tuner.util import RuntimeFailedConfig, store_cache
        from tqdm import tqdm

        configs = searchspace.sorted_list()
        if self.sample:  # a quick check of a few random configurations before a long brute force
            picks = np.random.default_rng(0).choice(len(configs), min(self.sample, len(configs)), replace=False)
            configs = [configs[i] for i in sorted(picks)]
        todo = [c for c in configs if config_key(c) not in tuning_options.cache]
        self.total, self.done_before = len(configs), len(configs) - len(todo)
        bar = tqdm(
            todo, desc="brute force", unit="cfg", file=sys.stderr, disable=(not self.progress) or None
        )  # None: on a terminal only
        for config in bar:
            if time.monotonic() > self.deadline:
                break
            start = time.perf_counter()
            try:
                result = runner.run([config], tuning_options)[0]
            except RuntimeError as exc:
                if VERIFY_FAILED not in str(exc):
                    raise
                # A wrong answer is a failed configuration, not a reason to lose the whole run.
                key = config_key(config)
                self.wrong.append(key)
                entry = dict(zip(tuning_options.tune_params, config))
                entry.update(
                    __error__=RuntimeFailedConfig(),
                    verification="failed",
                    compile_time=1000 * (time.perf_counter() - start),
                    verification_time=0,
                    benchmark_time=0,
                    timestamp=str(datetime.now(UTC)),
                )
                store_cache(key, entry, tuning_options.cachefile, tuning_options.cache)
                continue
            self.measured += 1
            self.overheads[config_key(config)] = {k: result.get(k, 0.0) for k in ("framework_time", "strategy_time")}
        else:
            self.finished = True
        bar.close()
        return []


@dataclass(frozen=True)
class CacheBuild:
    """What one `tunesmith cache build` run did."""

    problem: str
    device: str
    partial: Path  # Kernel Tuner's working cache file (JSON, appended to as it goes)
    final: Path | None  # the gzipped cache, once every configuration is measured
    total: int  # configurations after restrictions
    measured_now: int
    done: int  # measured in this and earlier runs
    wrong: int  # configurations whose output failed verification (stored as RuntimeFailedConfig)
    seconds: float

    def summary(self) -> str:
        if self.partial.name.endswith(".sample.json"):
            return (
                f"{self.problem} on {self.device}: sample of {self.total} configurations, {self.measured_now} measured "
                f"in {self.seconds:.0f} s, {self.wrong} failed verification (a check, not a cache): {self.partial}"
            )
        state = (
            f"complete: {self.final}"
            if self.final
            else f"partial: {self.done}/{self.total}, resume with the same command"
        )
        return (
            f"{self.problem} on {self.device}: {self.measured_now} configurations measured in {self.seconds:.0f} s, "
            f"{self.wrong} failed verification; {state}"
        )


def build_cache(
    problem: Problem | str | Path,
    out_dir: Path | None = None,
    time_limit: float | None = None,
    progress: bool = True,
    sample: int | None = None,
) -> CacheBuild:
    """Brute-force a problem's space on this machine's device into `<out_dir>/<device>.json.gz`.

    `time_limit` (seconds) stops early and leaves a resumable `<device>.json`; `sample` measures only
    that many random configurations, into `<device>.sample.json`, to check a kernel quickly.
    """
    import kernel_tuner

    t0 = time.monotonic()
    problem = problem if isinstance(problem, Problem) else load_problem(problem)
    require_device(problem)
    if problem.lang == "cupy":
        patch_cupy_uuid()
    name = device_name(problem)
    out_dir = Path(out_dir or problem.caches_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    label = device_label(name) + (".sample" if sample else "")
    partial, final = out_dir / f"{label}.json", out_dir / f"{label}.json.gz"
    sidecar = out_dir / f"{label}.overheads.json"
    deadline = t0 + time_limit if time_limit else float("inf")
    arguments = problem.make_arguments()
    strategy = _BruteForce(deadline, progress, sample)
    kwargs = problem.tune_kwargs()
    answer = problem.answer(arguments)
    with scratch_dir():
        kernel_tuner.tune_kernel(
            arguments=arguments, answer=answer, strategy=strategy, cache=str(partial), quiet=True, **kwargs
        )
    overheads = json.loads(sidecar.read_text()) if sidecar.exists() else {}
    overheads.update(strategy.overheads)
    sidecar.write_text(json.dumps(overheads))
    done = strategy.done_before + strategy.measured + len(strategy.wrong)
    if strategy.finished and not sample:
        finalize_cache(partial, final, overheads, problem, name)
        partial.unlink()
        sidecar.unlink()
    complete = strategy.finished and not sample
    return CacheBuild(
        problem.name,
        name,
        partial,
        final if complete else None,
        strategy.total,
        strategy.measured,
        done,
        len(strategy.wrong),
        time.monotonic() - t0,
    )


def read_partial_cache(path: Path) -> dict:
    """A Kernel Tuner cache file that may still be open (trailing comma, no closing brackets)."""
    text = path.read_text().strip()
    if not text.endswith("}}") and not text.endswith("}\n}"):
        text = text.rstrip(",") + "}\n}"
    return json.loads(text)


def finalize_cache(partial: Path, final: Path, overheads: dict, problem: Problem, device: str) -> dict:
    """Close the working cache, add the per-configuration overhead times, gzip it; returns the document."""
    import kernel_tuner

    doc = read_partial_cache(partial)
    for key, extra in overheads.items():
        if key in doc["cache"]:
            doc["cache"][key].update(extra)
    wrong = sum(1 for e in doc["cache"].values() if e.get("verification") == "failed")
    doc["tunesmith"] = {
        "problem": problem.name,
        "device": device,
        "kernel_tuner": kernel_tuner.__version__,
        "iterations": problem.iterations,
        "verification_failures": wrong,
        "built": datetime.now(UTC).strftime("%Y-%m-%d"),
    }
    doc = write_cache(doc, final)
    return doc


def write_cache(doc: dict, path: Path) -> dict:
    """Gzip a complete cache as Kernel Tuner's reader wants it; returns the document in that order.

    Kernel Tuner (1.5.0) reads cache files append-friendly: a file not ending in "}\n}" or "}}}"
    counts as still open and gets "}\n}" appended, so a key after `cache` (Tunesmith's metadata
    once was) breaks it with "Extra data". So `cache` comes last, and the file ends in "}\n}" like
    Kernel Tuner's own, which it can also reopen to append to (tuning on with cache=FILE).
    """
    doc = {**{k: v for k, v in doc.items() if k != "cache"}, "cache": doc["cache"]}
    text = json.dumps(doc, separators=(",", ":"))
    text = text[:-1] + "\n}"
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as fh:
        fh.write(text.encode())  # no name or time in the gzip header: a rebuild differs only by its data
    return doc
