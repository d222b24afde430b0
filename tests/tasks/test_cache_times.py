"""Caches whose times are negative, NaN or infinite are not scored silently (issue 15, item 2).

A handful of such entries (at most 1% of the space and at most 10) count as failed configurations,
with a warning that says how many; more are refused with one line naming the file, the count and
an example configuration.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from generator.errors import TunesmithError
from generator.tasks.cache import TaskError, load_cache_task
from generator.tasks.cache_sanity import TaskWarning
from generator.tasks.entries import load_tasks

BIG = {"bx": list(range(1, 41)), "ty": list(range(1, 11))}  # 400 configurations: 1% is 4


def _entry(bx, ty, time):
    return {
        "bx": bx,
        "ty": ty,
        "time": time,
        "times": [time, time],
        "compile_time": 100.0,
        "verification_time": 0.0,
        "benchmark_time": 2.5,
        "framework_time": 10.0,
        "strategy_time": 0.0,
    }


def _doc(tune=BIG, objective="time"):
    entries = [_entry(b, t, float(b + t)) for b in tune["bx"] for t in tune["ty"]]
    return {
        "device_name": "Test GPU",
        "kernel_name": "k",
        "problem_size": [1],
        "tune_params_keys": list(tune),
        "tune_params": tune,
        "objective": objective,
        "cache": {f"{e['bx']},{e['ty']}": e for e in entries},
    }


def _write(tmp_path, doc):
    path = tmp_path / "GPU.json"
    path.write_text(json.dumps(doc))  # Python's json writes NaN and Infinity as such
    return path


BAD = {  # how an entry can hold a time that is not a measurement
    "negative time": lambda e: e.update(time=-1.0, times=[-1.0, -1.0]),
    "NaN time": lambda e: e.update(time=math.nan),
    "infinite time": lambda e: e.update(time=math.inf),
    "negative runtime": lambda e: e["times"].__setitem__(1, -0.5),
    "NaN runtime": lambda e: e["times"].__setitem__(0, math.nan),
    "negative compile time": lambda e: e.update(compile_time=-3.0),
    "infinite benchmark time": lambda e: e.update(benchmark_time=math.inf),
    "NaN framework time": lambda e: e.update(framework_time=math.nan),
}


@pytest.mark.parametrize("how", list(BAD))
def test_many_bad_times_are_refused_in_one_line(tmp_path, how):
    doc = _doc()
    for key in ("1,1", "2,1", "3,1", "4,1", "5,1"):  # 5 of 400: more than 1%
        BAD[how](doc["cache"][key])
    path = _write(tmp_path, doc)
    with pytest.raises(TaskError) as info:
        load_cache_task(path)
    msg = str(info.value)
    assert isinstance(info.value, TunesmithError) and "\n" not in msg
    assert str(path) in msg and "5 of 400 configurations" in msg and "bx=1,ty=1" in msg, msg
    assert "negative, NaN or infinite" in msg


@pytest.mark.parametrize("how", list(BAD))
def test_a_handful_count_as_failed_with_a_warning(tmp_path, how):
    doc = _doc()
    for key in ("1,1", "1,2", "1,3"):  # the fastest configurations: a -1.0 would be "the optimum"
        BAD[how](doc["cache"][key])
    path = _write(tmp_path, doc)
    with pytest.warns(TaskWarning, match=r"3 of 400 configurations .*count as failed") as record:
        task = load_cache_task(path)
    assert len(record) == 1 and str(path) in str(record[0].message)
    assert "\n" not in str(record[0].message)
    rows = [task.space.config_of(r) for r in np.flatnonzero(task.key.failed)]
    assert sorted(rows) == [(1, 1), (1, 2), (1, 3)]
    assert task.key.values[~task.key.failed].min() == 3.0  # the real optimum: bx=1, ty=2 failed
    assert np.isfinite(task.key.eval_seconds).all() and (task.key.eval_seconds >= 0).all()
    assert np.isfinite(task.key.baseline_seconds).all() and (task.key.baseline_seconds >= 0).all()


def test_random_search_scores_as_if_the_bad_configuration_had_failed(tmp_path):
    """Before: one configuration with negative runtimes gave random search P = 0.84 instead of about 0."""
    from generator.bench.command import bench
    from generator.bench.runner import parse_strategy

    bad, failed = _doc(), _doc()
    bad["cache"]["20,5"]["times"] = [-1.0e6, -1.0e6]
    failed["cache"]["20,5"] = {k: v for k, v in failed["cache"]["20,5"].items() if k not in ("time", "times")}
    failed["cache"]["20,5"]["__error__"] = "RuntimeFailedConfig"
    (tmp_path / "bad").mkdir()
    (tmp_path / "failed").mkdir()
    with pytest.warns(TaskWarning, match="1 of 400"):
        bad_task = load_cache_task(_write(tmp_path / "bad", bad))
    failed_task = load_cache_task(_write(tmp_path / "failed", failed))
    np.testing.assert_array_equal(bad_task.key.failed, failed_task.key.failed)
    np.testing.assert_array_equal(bad_task.key.eval_seconds, failed_task.key.eval_seconds)
    spec = [parse_strategy("random_sample")]
    p_bad, p_failed = (bench([t], spec, repeats=3, workers=1, progress=False)[0].score for t in (bad_task, failed_task))
    assert p_bad == p_failed and abs(p_bad) < 0.5


def test_a_negative_objective_that_is_not_a_time_is_a_value(tmp_path):
    doc = _doc(objective="score")
    for e in doc["cache"].values():
        e["score"] = -e["time"]  # e.g. a negated throughput: negative values are fine
    task = load_cache_task(_write(tmp_path, doc))
    assert not task.key.failed.any() and task.key.values.max() == -2.0


def test_shipped_and_hub_caches_load_without_a_warning(hub_dir):
    from generator.sandbox.jobs import PROJECT_ROOT

    with warnings.catch_warnings():
        warnings.simplefilter("error", TaskWarning)
        tasks = load_tasks([hub_dir, PROJECT_ROOT / "problems"])
    assert len(tasks) >= 10
