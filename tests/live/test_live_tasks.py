"""`live:` tasks everywhere: the reference syntax, `tunesmith evaluate` / `bench` / a campaign on the CPU
problem (Kernel Tuner's C backend, g++) through the sandbox, one job per device at a time, and the
fail-fast path of CUDA problems on a machine without a GPU."""

import json
import shutil
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from support.paths import ROOT

from generator.cli import main
from generator.live.entries import LiveEntry, LiveEntryError, parse_live_entry, problem_spec
from generator.live.kernel import cpu_name, device_label

CPU = device_label(cpu_name())  # this machine's processor as a cache label, e.g. CPU_Intel_Xeon_Processor

MATMUL = "live:matmul_c,fevals=3"  # the same text in every test: one live random-search baseline per process

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not on PATH: the C problem cannot run live")


def _has_gpu() -> bool:
    from generator.live.kernel import cuda_device_count

    return cuda_device_count()[0] > 0


RANDOM = """# RandomSampler: uniform random configurations
class RandomSampler:
    hyperparameters = {}

    def __init__(self, budget=5000):
        self.budget = budget

    def __call__(self, func, searchspace):
        for config in searchspace.get_random_sample(10 ** 6):
            func(config)
"""


@pytest.fixture
def optimizer(tmp_path, monkeypatch) -> Path:
    """A candidate file; the test runs in tmp_path, so stray files would show up there."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "random_sampler.py"
    path.write_text(RANDOM)
    return path


def _campaign(tmp_path: Path, entry: str, run_dir: str = "run") -> Path:
    path = tmp_path / "live.toml"
    path.write_text(
        f'name = "live"\n[llm]\nmodel = "synth/components"\nseed = 1\n'
        f"[evolution]\nn_parents = 2\nn_offspring = 1\nbudget = 2\nseed = 1\n"
        f'[tasks]\ntrain = ["{entry}"]\n[evaluation]\nrepeats = 1\ntimeout = 60\nseed = 0\n'
        f'[output]\nrun_dir = "{tmp_path / run_dir}"\n'
    )
    return path


# ------------------------------------------------------------------ the reference syntax (no device)


def test_live_references_parse_and_bad_ones_say_how_to_write_them():
    assert parse_live_entry("live:gemm") == LiveEntry("gemm")
    e = parse_live_entry("live:problems/matmul_c/problem.toml, seconds=2.5 ,fevals=20,device=1,gpu=H200")
    assert (e.fevals, e.seconds, e.device, e.gpu) == (20, 2.5, 1, "H200")
    assert e.budget().max_fevals == 20 and e.budget().seconds == 2.5
    assert parse_live_entry("live:x,fevals=4").budget().seconds == float("inf")
    assert parse_live_entry("live:x").budget() is None  # the methodology's, from the measured cache
    assert parse_live_entry(e.text()) == e
    for bad, why in [
        ("live:", "no problem named"),
        ("live:gemm,fevals=0", "fevals must be a positive integer"),
        ("live:gemm,seconds=soon", "seconds must be a positive number"),
        ("live:gemm,budget=3", "unknown option"),
        ("live:gemm,gpu=", "gpu= needs a label"),
    ]:
        with pytest.raises(LiveEntryError, match=why) as info:
            parse_live_entry(bad)
        assert "\n" not in str(info.value) and str(info.value).startswith(repr(bad))
    assert problem_spec("matmul_c") == ROOT / "problems" / "matmul_c" / "problem.toml"
    assert problem_spec("problems/matmul_c", ROOT) == ROOT / "problems" / "matmul_c" / "problem.toml"
    with pytest.raises(LiveEntryError, match=r"no problem spec found.*name one of \[.*'matmul_c'"):
        problem_spec("nope")


def test_a_bad_live_entry_in_a_campaign_is_one_line_and_starts_nothing(tmp_path, capsys):
    cfg = _campaign(tmp_path, "live:matmul_c,fevals=many")
    assert main(["run", str(cfg)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tunesmith: error: tasks.train[0]: 'live:matmul_c,fevals=many': fevals must be")
    assert len(err.splitlines()) == 1 and not (tmp_path / "run").exists()


def test_dask_asks_for_a_gpu_only_for_live_cuda_tasks():
    from generator.evaluation.dask_executor import job_resources
    from generator.live.tasks import LiveTask
    from generator.sandbox.jobs import Job
    from generator.tasks.cache import AnswerKey, Objective, SpaceSpec

    spec = SpaceSpec({"x": [1, 2]}, (), np.array([[0], [1]], dtype=np.int32))
    key = AnswerKey(np.full(2, np.nan), np.zeros(2, bool), np.zeros(2))

    def job(lang):
        task = LiveTask("t", spec, key, Objective(), {"live": True, "lang": lang})
        return Job("", "X", {}, [task], [None], [(0, 0, 0)])

    assert job_resources(job("cupy")) == {"GPU": 1} and job_resources(job("C")) is None


def test_device_lock_excludes_other_threads_and_is_reentrant_in_one():
    from generator.live.kernel import device_lock

    key, inside, order = f"test-{time.time_ns()}", threading.Event(), []

    def holder():
        with device_lock(key), device_lock(key):  # re-entrant: a job holds it, each measurement takes it again
            inside.set()
            time.sleep(0.3)
            order.append("holder out")

    t = threading.Thread(target=holder)
    t.start()
    inside.wait()
    with device_lock(key):
        order.append("second in")
    t.join()
    assert order == ["holder out", "second in"]
    (Path(tempfile.gettempdir()) / f"tunesmith-device-{key}.lock").unlink()


@pytest.mark.skipif(_has_gpu(), reason="a CUDA GPU is present: the no-GPU message cannot be checked")
def test_cuda_live_task_fails_fast_from_every_entry_point(tmp_path, optimizer, capsys):
    start = time.monotonic()
    assert main(["evaluate", str(optimizer), "--tasks", "live:gemm,fevals=5", "--repeats", "1"]) == 2
    assert main(["bench", "--tasks", "live:dedisp,fevals=5", "--strategies", "random_sample", "--no-progress"]) == 2
    assert main(["run", str(_campaign(tmp_path, "live:hotspot,fevals=5"))]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 3 and all("needs a CUDA GPU and none is usable here" in e for e in errors), errors
    assert errors[2].startswith("tunesmith: error: tasks.train[0]:") and not (tmp_path / "run").exists()
    assert time.monotonic() - start < 20


# ------------------------------------------------------------------ the C problem, for real


@needs_gxx
def test_evaluate_cli_tunes_the_c_problem_live_in_the_sandbox(optimizer, tmp_path, capsys):
    out = tmp_path / "out.json"
    assert main(["evaluate", str(optimizer), "--tasks", MATMUL, "--repeats", "1", "--json", str(out)]) == 0
    # no measured cache for this CPU: the score is the advantage over live random search, and says so (it was
    # printed as 'P' and 'mean P = ...')
    text = capsys.readouterr().out
    assert "advantage over live random search" in text and "not P" in text and "mean P" not in text, text
    doc = json.loads(out.read_text())
    [(name, task)] = doc["results"][str(optimizer)]["per_task"].items()
    assert name == f"matmul_c/{CPU}/live" and task["unique_evals"] == 3 and np.isfinite(task["score"])
    # the walls are up as for any run (Kernel Tuner and g++ run on the oracle's side, outside them)
    assert doc["fitness"]["metadata"]["protections"]["held"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json", "random_sampler.py"]  # no temp_* left here


@needs_gxx
def test_a_cached_live_task_is_scored_with_a_finite_p(tmp_path):
    from generator.evaluation.evaluate import evaluate_source
    from generator.live.cache_build import build_cache
    from generator.live.tasks import load_live_entry

    tiny = tmp_path / "tiny"
    tiny.mkdir()
    for f in ("matmul.cpp", "reference.py"):
        shutil.copy(ROOT / "problems" / "matmul_c" / f, tiny)
    text = (ROOT / "problems" / "matmul_c" / "problem.toml").read_text()
    text = text.replace("tile_i = [8, 16, 32]", "tile_i = [8, 32]").replace("tile_j = [8, 16]", "tile_j = [8]")
    text = text.replace("unroll_k = [1, 4]", "unroll_k = [1]").replace("seed = 5", 'seed = 5\ncaches = "caches"')
    (tiny / "problem.toml").write_text(text.replace("iterations = 3", "iterations = 1"))
    assert build_cache(tiny / "problem.toml", progress=False).final is not None
    [task] = load_live_entry(f"live:{tiny / 'problem.toml'}")  # no budget given: the methodology's, from the cache
    assert task.cached and task.budget is None and len(task.space.valid) == 4
    fitness = evaluate_source(RANDOM, [task], repeats=2, timeout_s=60)
    assert fitness.error is None, fitness.error
    tf = fitness.per_task[task.name]
    assert np.isfinite(tf.score) and np.isfinite(tf.per_repeat).all()  # was inf: random search reaches the optimum


@needs_gxx
def test_bench_runs_built_ins_live_and_refuses_simulation_only_ones_at_once(optimizer, capsys):
    assert (
        main(
            [
                "bench",
                "--tasks",
                MATMUL,
                "--strategies",
                f"random_sample,{optimizer}",
                "--repeats",
                "1",
                "--no-progress",
            ]
        )
        == 0
    )
    table = capsys.readouterr().out
    assert f"matmul_c/{CPU}/live" in table and "random_sample" in table and "nan" not in table
    # no measured cache here: the number is the advantage over live random search, and the output says so
    assert f"note: matmul_c/{CPU}/live is scored by its advantage over live random search" in table
    start = time.monotonic()
    assert main(["bench", "--tasks", MATMUL, "--strategies", "random_sample,bayes_opt", "--no-progress"]) == 2
    assert "bayes_opt: runs on cached tasks only" in capsys.readouterr().err and time.monotonic() - start < 5


@needs_gxx
def test_concurrent_live_evaluations_never_share_the_device(monkeypatch):
    from generator.evaluation.evaluate import evaluate_source
    from generator.live.tasks import load_live_entry
    from generator.sandbox import pool

    [task] = load_live_entry(MATMUL)
    spans, original = [], pool.run_job

    def timed(job):
        start = time.monotonic()
        try:
            return original(job)
        finally:
            spans.append((start, time.monotonic()))

    monkeypatch.setattr(pool, "run_job", timed)
    results = []
    threads = [
        threading.Thread(target=lambda: results.append(evaluate_source(RANDOM, [task], repeats=1))) for _ in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(spans) == 2 and all(f.error is None for f in results)
    (a0, a1), (b0, b1) = sorted(spans)
    assert a1 <= b0  # the second job waited for the device


@needs_gxx
def test_a_campaign_trains_on_a_live_task(tmp_path):
    from generator.campaign.run import run_campaign

    summary = run_campaign(_campaign(tmp_path, MATMUL), progress=False)
    scored = [c for c in summary.leaderboard if c.score is not None]
    assert summary.state == "finished" and scored, summary
    assert all(np.isfinite(c.score) and set(c.fitness["per_task"]) == {f"matmul_c/{CPU}/live"} for c in scored)
