"""Live tuning end to end on the CPU (Kernel Tuner's C backend, g++): brute force, sessions, sandboxed
live evaluation; and the fail-fast path of the CUDA problems on a machine without a GPU."""

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from support.paths import ROOT

from generator.cli import main
from generator.errors import TunesmithError
from generator.live.kernel import LiveSession, LiveUnavailable, cpu_name, device_label, require_device
from generator.live.tasks import LiveOracle, load_live_task
from generator.scoring.oracle import StopCriterionReached
from generator.scoring.score import Budget
from generator.tasks.problems import load_problem, load_problem_tasks

CPU = device_label(cpu_name())  # this machine's processor as a cache label, e.g. CPU_Intel_Xeon_Processor

PROBLEMS = ROOT / "problems"

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not on PATH: the C problem cannot run")


def _has_gpu() -> bool:
    from generator.live.kernel import cuda_device_count

    return cuda_device_count()[0] > 0


needs_gpu = pytest.mark.skipif(not _has_gpu(), reason="no CUDA GPU (CuPy finds none): CUDA problems cannot run live")

RANDOM = """# RandomSampler: uniform random configurations
class RandomSampler:
    hyperparameters = {}

    def __init__(self, budget=5000):
        self.budget = budget

    def __call__(self, func, searchspace):
        best = None
        for config in searchspace.get_random_sample(10 ** 6):
            value = func(config)
            if best is None or value < best[1]:
                best = (config, value)
        return best
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    """The CPU problem cut down to 6 configurations, with its caches in its own folder."""
    d = tmp_path_factory.mktemp("tiny")
    for f in ("matmul.cpp", "reference.py"):
        shutil.copy(PROBLEMS / "matmul_c" / f, d)
    text = (PROBLEMS / "matmul_c" / "problem.toml").read_text()
    text = text.replace("tile_i = [8, 16, 32]", "tile_i = [8, 32]").replace("tile_j = [8, 16]", "tile_j = [8]")
    text = text.replace("unroll_k = [1, 4]", "unroll_k = [1]").replace("seed = 5", 'seed = 5\ncaches = "caches"')
    (d / "problem.toml").write_text(text.replace("iterations = 3", "iterations = 2"))
    return d / "problem.toml"


@pytest.fixture(scope="module")
def tiny_cache(tiny) -> Path:
    """The tiny problem brute-forced: first stopped by a time limit, then resumed to the end (CLI)."""
    from generator.live.cache_build import build_cache

    first = build_cache(tiny, time_limit=0.01, progress=False)
    assert first.final is None and first.partial.exists() and first.done < first.total
    assert main(["cache", "build", str(tiny)]) == 0
    return tiny.parent / "caches" / f"{CPU}.json.gz"


def test_device_label():
    assert device_label("NVIDIA H100 80GB HBM3") == "H100"
    assert device_label("NVIDIA H200") == "H200"
    assert device_label("NVIDIA RTX A4000") == "A4000"
    assert device_label("CPU") == "CPU"
    # a processor keeps its model: two machines' caches of one C problem do not share CPU.json.gz (issue 40, item 11)
    assert device_label("CPU Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz") == "CPU_Intel_Xeon_Gold_6248"
    assert device_label("CPU AMD EPYC 7763 64-Core Processor") == "CPU_AMD_EPYC_7763"


@needs_gxx
def test_brute_force_resumes_and_ships_a_gzipped_cache(tiny_cache):
    assert tiny_cache.exists() and not (tiny_cache.parent / f"{CPU}.json").exists()
    with gzip.open(tiny_cache, "rt") as fh:
        doc = json.load(fh)
    assert len(doc["cache"]) == 4 and doc["tunesmith"]["verification_failures"] == 0
    assert all("framework_time" in e and "times" in e for e in doc["cache"].values())
    [task] = load_problem_tasks(tiny_cache.parent.parent / "problem.toml")
    assert task.name == f"matmul_c/{CPU}" and not task.key.failed.any() and (task.key.values > 0).all()


@needs_gxx
def test_wrong_answers_are_failed_configurations_not_a_crash(tmp_path, tiny):
    from generator.live.cache_build import build_cache

    for f in ("matmul.cpp", "problem.toml"):
        shutil.copy(tiny.parent / f, tmp_path)
    (tmp_path / "reference.py").write_text(
        "import numpy as np\ndef matmul(args, params):\n    return {'C': np.full((96, 96), -1.0, np.float32)}\n"
    )
    build = build_cache(tmp_path / "problem.toml", tmp_path / "out", progress=False)
    assert build.wrong == 4 and build.final is not None
    with gzip.open(build.final, "rt") as fh:
        entries = json.load(fh)["cache"].values()
    assert all(e["__error__"] == "RuntimeFailedConfig" and e["verification"] == "failed" for e in entries)


@needs_gxx
def test_live_oracle_measures_each_new_configuration_once(tiny, tiny_cache):
    task = load_live_task(tiny)
    assert task.cached and task.name == f"matmul_c/{CPU}/live"
    session = LiveSession(task.problem)
    try:
        oracle = LiveOracle(task, Budget(np.inf, 2), session=session)
        first = oracle(task.space.config_of(0))
        assert 0 < first < 1e3 and oracle(task.space.config_of(0)) == first  # a revisit is free
        with pytest.raises(StopCriterionReached, match="max_fevals"):  # the evaluation that spends the budget
            oracle(task.space.config_of(1))
        trace = oracle.trace()
        assert list(trace.rows) == [0, 1] and (trace.seconds > 0).all() and oracle.budget_spent_fraction == 1.0
        assert np.isfinite(oracle.values[[0, 1]]).all() and np.isnan(oracle.values[2:]).all()
    finally:
        session.close()


@needs_gxx
def test_live_evaluation_in_the_sandbox_scores_against_the_cache(tiny, tiny_cache):
    from generator.live.evaluate import evaluate_live

    result = evaluate_live(RANDOM, load_live_task(tiny), repeats=1, max_fevals=3, timeout_s=120)
    assert result.error is None and result.basis == "cache", result.summary()
    # (P itself is degenerate on a 4-configuration space; the scoring room tests its numbers)
    assert result.fevals == [3] and result.score is not None and result.best[0] > 0
    assert result.traces[0].rows.size == 3 and (result.traces[0].seconds > 0).all()


@needs_gxx
def test_live_evaluation_without_a_cache_compares_with_random_search():
    from generator.live.evaluate import evaluate_live

    task = load_live_task(PROBLEMS / "matmul_c" / "problem.toml")
    assert not task.cached
    result = evaluate_live(RANDOM, task, repeats=1, max_fevals=2, timeout_s=120)
    assert result.error is None and result.basis == "random", result.summary()
    assert result.fevals == [2] and np.isfinite(result.score)
    with pytest.raises(TunesmithError, match="give max_fevals or seconds"):
        evaluate_live(RANDOM, task)


@needs_gxx
def test_live_evaluation_reports_a_broken_candidate(tiny, tiny_cache):
    from generator.live.evaluate import evaluate_live

    result = evaluate_live(
        "class Broken:\n    def __call__(self, func, searchspace):\n        return 1 / 0\n",
        load_live_task(tiny),
        repeats=1,
        max_fevals=2,
        timeout_s=60,
    )
    assert result.error is not None and result.score is None


@pytest.mark.skipif(_has_gpu(), reason="a CUDA GPU is present: the no-GPU message cannot be checked")
def test_cuda_problem_fails_fast_without_a_gpu(capsys):
    with pytest.raises(LiveUnavailable, match="needs a CUDA GPU"):
        require_device(load_problem(PROBLEMS / "gemm" / "problem.toml"))
    assert main(["cache", "build", str(PROBLEMS / "gemm" / "problem.toml"), "--sample", "1"]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err


@pytest.mark.skipif(_has_gpu(), reason="a CUDA GPU is present: the no-GPU message cannot be checked")
def test_the_no_gpu_message_offers_cached_tasks_only_where_there_are_some(tmp_path):
    """`tunesmith template` of a CUDA kernel said 'or use its cached tasks in .../caches/transpose_naive_cuda',
    a folder that does not exist: a kernel brought to be templated has no measured space yet."""
    with pytest.raises(LiveUnavailable, match="use its cached tasks in") as shipped:
        require_device(load_problem(PROBLEMS / "gemm" / "problem.toml"))
    assert str(PROBLEMS / "caches" / "gemm") in str(shipped.value)
    folder = tmp_path / "mine"
    shutil.copytree(PROBLEMS / "gemm", folder)
    with pytest.raises(LiveUnavailable) as new:
        require_device(load_problem(folder / "problem.toml"))
    assert "cached tasks in" not in str(new.value) and "no measured space" in str(new.value), str(new.value)


@needs_gpu
def test_cuda_session_measures_a_configuration_on_the_gpu():
    task = load_live_task(PROBLEMS / "dedisp" / "problem.toml")
    oracle = LiveOracle(task, Budget(np.inf, 2))
    assert 0 < oracle(task.space.config_of(0)) < 1e3 and oracle.trace().seconds[0] > 0
