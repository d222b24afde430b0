"""Loading tasks: hub directories, single cache files, lists; every malformed input gets a one-line error."""

import gzip
import json

import numpy as np
import pytest
from support.paths import ROOT

from generator.errors import TunesmithError
from generator.tasks.cache import TaskError, load_cache_task, read_t1_restrictions
from generator.tasks.entries import load_tasks
from generator.tasks.restrictions import _valid_python, compile_restrictions, valid_indices

TUNE = {"bx": [16, 32, 64], "ty": [1, 2]}


def _entry(bx, ty, time=1.0, **extra):
    e = {
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
    e.update(extra)
    return e


def _cache(entries=None, **top):
    entries = entries if entries is not None else [_entry(b, t, time=b / t) for b in TUNE["bx"] for t in TUNE["ty"]]
    doc = {
        "device_name": "Test GPU",
        "kernel_name": "k",
        "problem_size": [1],
        "tune_params_keys": list(TUNE),
        "tune_params": TUNE,
        "objective": "time",
        "cache": {f"{e['bx']},{e['ty']}": e for e in entries},
    }
    doc.update(top)
    return doc


def _write(tmp_path, doc, name="GPU.json", gz=False):
    path = tmp_path / (name + (".gz" if gz else ""))
    data = (json.dumps(doc) if not isinstance(doc, str) else doc).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


# ------------------------------------------------------------------ good input


def test_small_cache_loads_with_failures_kept(tmp_path):
    entries = [_entry(b, t, time=b / t) for b in TUNE["bx"] for t in TUNE["ty"]]
    entries[1] = _entry(16, 2, time="RuntimeFailedConfig", times=None)
    del entries[1]["times"]
    # Kernel Tuner 1.5.0 writes failures as __error__ without a time key
    entries[2] = {k: v for k, v in _entry(32, 1).items() if k not in ("time", "times")} | {
        "__error__": "CompilationFailedConfig"
    }
    task = load_cache_task(_write(tmp_path, _cache(entries), gz=True))
    assert task.name == "GPU" and task.space.valid.shape == (6, 2)
    assert task.key.failed.sum() == 2 and np.isnan(task.key.values[task.key.failed]).all()
    assert set(task.key.failure_kinds.values()) == {"RuntimeFailedConfig", "CompilationFailedConfig"}
    ok = ~task.key.failed
    # a fresh evaluation costs compile + verification + the runtimes; failures have no runtimes
    np.testing.assert_allclose(task.key.eval_seconds[ok], (100.0 + 2 * task.key.values[ok]) / 1000)
    np.testing.assert_allclose(task.key.eval_seconds[~ok], 0.1)
    np.testing.assert_allclose(task.key.baseline_seconds, task.key.eval_seconds + 0.01)
    assert task.info["device_name"] == "Test GPU"


def test_restrictions_select_the_valid_rows(tmp_path):
    task = load_cache_task(_write(tmp_path, _cache()), restrictions=("bx * ty <= 64", "bx != 32 or ty == 1"))
    configs = {task.space.config_of(r) for r in range(len(task.space.valid))}
    assert configs == {(16, 1), (16, 2), (32, 1), (64, 1)}


def test_hub_directory_and_single_hub_file(hub_tasks, hub_dir):
    assert [t.name for t in hub_tasks] == [
        f"{a}/{g}" for a in ("convolution_milo", "dedispersion_milo") for g in ("A100", "A4000", "MI250X")
    ]
    conv = hub_tasks[0]
    assert len(conv.space.valid) == 4362 and conv.key.failed.any()
    single = load_tasks(hub_dir / "cachefiles" / "convolution_milo" / "A100.json.gz")
    assert single[0].name == "convolution_milo/A100" and single[0].space.restrictions == conv.space.restrictions
    # the same file twice (directly and through its folder) is loaded once
    both = load_tasks(
        [hub_dir / "cachefiles" / "convolution_milo" / "A100.json.gz", hub_dir / "cachefiles" / "convolution_milo"]
    )
    assert [t.name for t in both] == ["convolution_milo/A100", "convolution_milo/A4000", "convolution_milo/MI250X"]


def test_eval_seconds_are_the_T4_times(hub_dir, hub_tasks):
    """Our per-configuration baseline seconds equal the sum of the hub's T4 times."""
    t4 = json.loads(gzip.decompress((hub_dir / "cachefiles" / "convolution_milo" / "MI250X_T4.json.gz").read_bytes()))
    task = next(t for t in hub_tasks if t.name == "convolution_milo/MI250X")
    names = task.space.param_names
    totals = {}
    for r in t4["results"]:
        t = r["times"]
        totals[tuple(r["configuration"][n] for n in names)] = (
            t["compilation"] + t["framework"] + t["search_algorithm"] + t["validation"] + sum(t["runtimes"])
        ) / 1000
    got = {task.space.config_of(i): s for i, s in enumerate(task.key.baseline_seconds)}
    assert got.keys() == totals.keys()
    assert max(abs(got[k] - totals[k]) for k in got) < 1e-9


def test_vectorised_restrictions_equal_python_on_hub(hub_dir):
    for app in ("convolution_milo", "dedispersion_milo"):
        restrictions = read_t1_restrictions(hub_dir / "kernels" / f"{app}.json")
        doc = json.loads(gzip.decompress((hub_dir / "cachefiles" / app / "A100.json.gz").read_bytes()))
        tp = doc["tune_params"]
        fast = valid_indices(tp, restrictions)
        slow = _valid_python(tp, compile_restrictions(restrictions, list(tp)), [len(v) for v in tp.values()])
        assert np.array_equal(fast, slow)


@pytest.mark.parametrize(
    "expr",
    [
        "bx if ty == 1 else 0",
        "min(bx, 32) * ty >= 32",
        "not (bx in (16, 64))",
        "16 < bx <= 64",
        "int(bx / 3) % 2 == 1",
        "bx // 0 > 1",
    ],
)
def test_vectorised_restrictions_cover_python_constructs(expr):
    fast = valid_indices(TUNE, [expr])
    slow = _valid_python(TUNE, compile_restrictions([expr], list(TUNE)), [3, 2])
    assert np.array_equal(fast, slow)


# ------------------------------------------------------------------ malformed input: one line each


def _one_line_error(fn, *args, match, **kwargs):
    with pytest.raises(TaskError, match=match) as info:
        fn(*args, **kwargs)
    msg = str(info.value)
    assert "\n" not in msg and isinstance(info.value, TunesmithError)
    return msg


def test_not_json(tmp_path):
    msg = _one_line_error(load_cache_task, _write(tmp_path, "{this is not json"), match="not a JSON file")
    assert "GPU.json" in msg and "give a Kernel Tuner cache file" in msg


def test_broken_gzip(tmp_path):
    path = tmp_path / "GPU.json.gz"
    path.write_bytes(b"\x1f\x8b" + b"garbage" * 10)
    _one_line_error(load_cache_task, path, match="not a JSON file")


@pytest.mark.parametrize("key", ["tune_params_keys", "tune_params", "cache"])
def test_missing_keys(tmp_path, key):
    doc = _cache()
    del doc[key]
    _one_line_error(load_cache_task, _write(tmp_path, doc), match=f"missing key '{key}'")


def test_parameter_order_mismatch(tmp_path):
    doc = _cache(tune_params_keys=["ty", "bx"])
    _one_line_error(load_cache_task, _write(tmp_path, doc), match="does not match tune_params_keys.*reorder")


def test_restriction_that_does_not_parse(tmp_path):
    _one_line_error(load_cache_task, _write(tmp_path, _cache()), restrictions=("bx * <= 3",), match="does not parse")


def test_restriction_with_unknown_parameter(tmp_path):
    _one_line_error(load_cache_task, _write(tmp_path, _cache()), restrictions=("bz > 1",), match="unknown parameters")


def test_cache_missing_valid_configurations(tmp_path):
    entries = [_entry(b, t) for b in TUNE["bx"] for t in TUNE["ty"]][:-2]
    msg = _one_line_error(
        load_cache_task,
        _write(tmp_path, _cache(entries)),
        restrictions=("bx > 0",),
        match="2 valid configurations are missing",
    )
    assert "brute-force the whole space or fix the restrictions" in msg


def test_no_timing_keys(tmp_path):
    entries = [{"bx": b, "ty": t, "time": 1.0} for b in TUNE["bx"] for t in TUNE["ty"]]
    _one_line_error(load_cache_task, _write(tmp_path, _cache(entries)), match="no timing keys")


def test_objective_not_in_entries(tmp_path):
    _one_line_error(load_cache_task, _write(tmp_path, _cache(objective="GFLOP/s")), match="no entry has the objective")


def test_empty_cache_and_t4_file(tmp_path):
    _one_line_error(load_cache_task, _write(tmp_path, _cache([])), match="holds no configurations")
    _one_line_error(
        load_cache_task,
        _write(tmp_path, {"results": [], "schema_version": "1.0.0"}, "X_T4.json"),
        match="T4 results file",
    )


def test_cache_key_not_matching_tune_params(tmp_path):
    doc = _cache()
    doc["cache"]["128,1"] = _entry(128, 1)
    _one_line_error(load_cache_task, _write(tmp_path, doc), match="does not match tune_params")


def test_t1_without_conditions_and_bad_paths(tmp_path):
    _one_line_error(read_t1_restrictions, _write(tmp_path, {"General": {}}, "k.json"), match="Conditions")
    _one_line_error(load_tasks, tmp_path / "nothing_here", match="no such file or directory")
    (tmp_path / "empty").mkdir()
    _one_line_error(load_tasks, tmp_path / "empty", match="neither a benchmark hub")


def test_two_tasks_with_one_name(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    _one_line_error(load_tasks, [_write(a, _cache()), _write(b, _cache())], match="also used by")


def test_a_problem_file_by_its_path_is_a_task_entry(tmp_path, monkeypatch, capsys):
    """Issue 40, item 6: the bring-your-own-kernel page's form problem:OUT/<kernel>_template/problem.toml
    failed with 'problem:out not found'; it names a problem file (here a copy of gemm beside its caches)."""
    import shutil

    from generator.campaign.preflight import check_tasks
    from generator.cli import main
    from generator.config import parse_config
    from generator.tasks.entries import resolve_paths

    root = ROOT / "problems"
    shutil.copytree(root / "gemm", tmp_path / "out" / "gemm")
    shutil.copytree(root / "caches" / "gemm", tmp_path / "out" / "caches" / "gemm")
    monkeypatch.chdir(tmp_path)
    [task] = load_tasks("problem:out/gemm/problem.toml")
    assert task.name == "gemm/H200"
    assert main(["stats", "problem:out/gemm/problem.toml"]) == 0 and "## gemm/H200" in capsys.readouterr().out
    # in a campaign file, the path is found beside the file too, as other paths are
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    cfg = parse_config({"tasks": {"train": ["problem:out/gemm/problem.toml"]}}, str(tmp_path / "c.toml"))
    cfg, _ = resolve_paths(cfg, tmp_path)
    check_tasks(cfg)
    assert cfg.tasks.train == [f"problem:{(tmp_path / 'out' / 'gemm' / 'problem.toml').resolve()}"]
