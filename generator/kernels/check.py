"""Checking a template and measuring its space, inside the walls; judging its outputs here, against the reference.

`check_template` runs a sample of configurations (the extremes first) and says what is wrong in
words an LLM can act on: the compiler's message, a crash, a timeout, or which configuration's output
differs from the reference and by how much. `measure_space` times every configuration for the
cache; `measure_original` times the user's kernel as it came. Outputs are compared in this process,
which holds the reference; the walled process never sees it. Each output is judged as it comes out of
the walls (`output_judge`), so only verdicts are kept, however large the outputs.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from generator.errors import TunesmithError
from generator.kernels.template import ORIGINAL_PARAM, KernelSpec, Template, sample_configs
from generator.kernels.walls import KernelLimits, WalledResult, run_walled
from generator.live.cache_build import read_partial_cache, write_cache
from generator.live.kernel import cpu_name, device_key, device_label, device_lock


class KernelRunError(TunesmithError):
    """The accepted template or the original kernel did not run in the walls."""


@dataclass
class Check:
    """The verdict on one template: accepted, or the feedback that says why not."""

    ok: bool
    feedback: str = ""
    checked: list = field(default_factory=list)  # configurations run
    seconds: float = 0.0
    protections: dict = field(default_factory=dict)


PROBE = 65536  # output elements per configuration a space measurement checks (all of them when fewer)


def _run(
    spec: KernelSpec,
    source: str,
    tune_params: dict,
    configs: list,
    limits: KernelLimits,
    grid_div: dict | None = None,
    probe: np.ndarray | None = None,
    judge: Callable | None = None,
) -> WalledResult:
    p = spec.problem
    divs = {**{k: v for k, v in p.grid_div.items() if v}, **(grid_div or {})}
    # one measurement at a time per device, with live sessions and cache builds too
    with device_lock(device_key(p)):
        return run_walled(
            source,
            p.kernel_name,
            p.problem_size,
            spec.arguments(),
            spec.outputs,
            tune_params,
            configs,
            p.defines,
            list(p.compiler_options),
            p.iterations,
            limits,
            p.lang,
            divs,
            list(p.block_size_names) if p.block_size_names else None,
            probe,
            judge or _unjudged,
        )


def _unjudged(arg: int, got: np.ndarray) -> None:
    """A judge for runs that only time: the outputs are dropped as they come."""
    return None


def _key(config) -> str:
    return ",".join(str(v) for v in config)


def output_judge(spec: KernelSpec, answer: list, probe: np.ndarray | None = None) -> Callable:
    """`judge(arg, output)` for `run_walled`: why one output is not the reference's (None: it matches);
    `probe`: the flat indices the walled run sends back instead of whole outputs."""
    wants = {
        i: np.asarray(answer[i]) if probe is None else np.asarray(answer[i]).reshape(-1)[probe] for i in spec.outputs
    }

    def judge(arg: int, got: np.ndarray) -> str | None:
        name, want = spec.problem.arguments[arg].name, wants[arg]
        if got.shape != want.shape:
            return f"output {name} has shape {got.shape}, the reference {want.shape}"
        if got.dtype.kind not in "biufc":  # the walled process could send anything: np.isclose takes numbers
            return f"output {name} came back as {got.dtype}, not numbers"
        bad = ~np.isclose(got, want, atol=spec.problem.atol, rtol=0)
        if bad.any():
            first = np.unravel_index(int(np.argmax(bad)), bad.shape)
            return (
                f"output {name} differs from the reference at {int(bad.sum())} of {bad.size} elements (first at "
                f"index {tuple(int(x) for x in first)}: {float(got[first]):.6g} instead of {float(want[first]):.6g})"
            )
        return None

    return judge


def wrong_output(spec: KernelSpec, result: WalledResult, config) -> str | None:
    """Why this configuration's outputs are not the reference's (None: they match), from the run's verdicts."""
    key = _key(config)
    for i in spec.outputs:
        if f"{key}|{i}" not in result.verdicts:
            return f"it produced no output {spec.problem.arguments[i].name} (it failed to run; see the error)"
        if result.verdicts[f"{key}|{i}"]:
            return result.verdicts[f"{key}|{i}"]
    return None


def time_mismatch(entry: dict) -> str | None:
    """Why a C kernel's self-reported time is not believable (it returns its own time to Kernel Tuner)."""
    times, wall = entry.get("times") or [entry.get("time")], entry.get("wall_time")
    if (
        not all(isinstance(t, (int, float)) for t in times)
        or not isinstance(wall, (int, float))
        or not np.isfinite(wall)
    ):
        return None
    reported = min(times)  # shortest against shortest: preemption lengthens both, never shortens either
    if reported < 0.5 * wall - 0.2:  # ms; a call's own overhead is far below this
        return (
            f"it returns {reported:.4g} ms as its time but the call took {wall:.4g} ms; return the measured "
            "time of the whole computation"
        )
    return None


def _cache_entries(result: WalledResult) -> dict:
    if not result.cache:
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cache.json"
        path.write_text(result.cache)
        try:
            return read_partial_cache(path).get("cache", {})
        except (ValueError, AttributeError):
            return {}


def check_template(
    spec: KernelSpec, template: Template, sample: int = 6, limits: KernelLimits = KernelLimits(timeout_s=90)
) -> Check:
    """Compile the template and run a sample of its configurations (extremes included) against the reference."""
    configs = sample_configs(template, sample)
    judge = output_judge(spec, spec.answer(spec.arguments()))
    result = _run(spec, template.source, template.tune_params, configs, limits, template.grid_div, judge=judge)
    if result.compile_error:
        return Check(
            False,
            f"It does not compile (configuration {_describe(template, configs[0])}):\n"
            f"{result.compile_error.strip()[-1500:]}",
            configs,
            protections=result.protections,
        )
    if result.error:
        return Check(False, f"Running it failed: {result.error}", configs, protections=result.protections)
    entries = _cache_entries(result)
    for config in configs:
        entry = entries.get(_key(config), {})
        if "__error__" in entry or not isinstance(entry.get("time"), (int, float)):
            return Check(
                False,
                f"Configuration {_describe(template, config)} failed to run "
                f"({entry.get('__error__', 'no time measured')}).",
                configs,
                protections=result.protections,
            )
        why = wrong_output(spec, result, config) or time_mismatch(entry)
        if why:
            return Check(
                False,
                f"Configuration {_describe(template, config)} is wrong: {why}.",
                configs,
                protections=result.protections,
            )
    return Check(True, "", configs, protections=result.protections)


def _describe(template: Template, config) -> str:
    return ", ".join(f"{k}={v}" for k, v in zip(template.tune_params, config))


def measure_space(
    spec: KernelSpec, template: Template, caches: Path, limits: KernelLimits | None = None
) -> tuple[dict, str]:
    """Time every configuration inside the walls; write Tunesmith's cache file `caches/<device>.json.gz`;
    returns its document and the device label ("CPU", "H100").

    A configuration whose output differs from the reference is stored as failed, as `cache build` does.
    """
    n = len(template.configs)
    limits = limits or KernelLimits(timeout_s=60 + 10 * n, cpu_s=60 + 10 * n)
    size = max(int(np.prod(np.shape(spec.arguments()[i]))) for i in spec.outputs)
    probe = (
        None if size <= PROBE else np.sort(np.random.default_rng(spec.problem.seed).choice(size, PROBE, replace=False))
    )
    judge = output_judge(spec, spec.answer(spec.arguments()), probe)
    result = _run(
        spec, template.source, template.tune_params, template.configs, limits, template.grid_div, probe, judge
    )
    if result.error or result.compile_error:
        raise KernelRunError(f"measuring the accepted template failed: {result.error or result.compile_error}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cache.json"
        path.write_text(result.cache or "")
        doc = read_partial_cache(path)
    wrong = 0
    for config in template.configs:
        entry = doc["cache"].get(_key(config))
        if entry is not None and "__error__" not in entry and wrong_output(spec, result, config):
            entry.update(__error__="RuntimeFailedConfig", verification="failed")
            wrong += 1
        elif entry is not None and "__error__" not in entry and time_mismatch(entry):
            entry.update(__error__="RuntimeFailedConfig", verification="time_reported_short")
            wrong += 1
    import kernel_tuner

    doc["tunesmith"] = {
        "problem": spec.problem.name + "_template",
        "device": result.device,
        "kernel_tuner": kernel_tuner.__version__,
        "iterations": spec.problem.iterations,
        "verification_failures": wrong,
        "built": datetime.now(UTC).strftime("%Y-%m-%d"),
        "walled": True,
    }
    caches.mkdir(parents=True, exist_ok=True)
    label = device_label(cpu_name() if result.device == "CPU" else result.device)  # the walls hide the model
    return write_cache(doc, caches / f"{label}.json.gz"), label


def measure_original(spec: KernelSpec, repeats: int = 3, limits: KernelLimits = KernelLimits(timeout_s=90)) -> float:
    """The user's kernel as it came, timed (ms) inside the walls on the same input; checked against the reference.

    The shortest of `repeats` timings: on a busy machine a disturbed timing is several times the undisturbed one."""
    params = spec.problem.tune_params
    if ORIGINAL_PARAM in params:  # a C kernel: the same kernel, timed `repeats` times under different keys
        params = {ORIGINAL_PARAM: list(range(repeats))}
        configs = [(r,) for r in range(repeats)]
    else:  # a CUDA kernel's fixed launch (original_params)
        configs = [tuple(v[0] for v in params.values())]
    result = _run(spec, spec.source, params, configs, limits, judge=output_judge(spec, spec.answer(spec.arguments())))
    if result.error or result.compile_error:
        raise KernelRunError(f"{spec.path}: the original kernel did not run: {result.error or result.compile_error}")
    why = wrong_output(spec, result, configs[0])
    if why:
        raise KernelRunError(
            f"{spec.path}: the original kernel disagrees with its own reference: {why}; fix one of them"
        )
    times = [e["time"] for e in _cache_entries(result).values() if isinstance(e.get("time"), (int, float))]
    return float(np.min(times))


def cache_summary(doc: dict) -> dict:
    """Best time and failures of a measured space."""
    times = [
        e["time"] for e in doc["cache"].values() if "__error__" not in e and isinstance(e.get("time"), (int, float))
    ]
    return {
        "configurations": len(doc["cache"]),
        "failed": len(doc["cache"]) - len(times),
        "best_ms": float(min(times)) if times else float("nan"),
    }


def time_configuration(
    spec: KernelSpec,
    source: str,
    config: dict,
    grid_div: dict | None = None,
    limits: KernelLimits = KernelLimits(timeout_s=90),
) -> float:
    """One configuration of a kernel (a template's, or the original's fixed launch), timed (ms) in the walls."""
    params = {k: [v] for k, v in config.items()} or {ORIGINAL_PARAM: [0]}
    configs = [tuple(v[0] for v in params.values())]
    result = _run(spec, source, params, configs, limits, grid_div)
    entry = _cache_entries(result).get(_key(configs[0]), {})
    if result.error or result.compile_error or not isinstance(entry.get("time"), (int, float)):
        raise KernelRunError(f"{spec.path}: timing {config} failed: {result.error or result.compile_error or entry}")
    return float(entry["time"])
