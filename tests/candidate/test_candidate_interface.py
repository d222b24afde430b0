"""What a generated optimizer may assume (OptAlg, StopCriterionReached), what it may import, what is
refused with an error a fix can act on, and how the budget ends runs that ignore the stop."""

from __future__ import annotations

import sys
from unittest import mock

import pytest

from generator.evaluation.evaluate import evaluate_source
from generator.llm.prompts import extract_reply
from generator.llm.reply_code import truncation_error
from generator.sandbox.candidate_names import (
    EXPORT_PRELUDE,
    LOCAL,
    candidate_names,
    preimports,
    unbound_names,
    with_prelude,
)
from generator.sandbox.jobs import SandboxConfig

CONFIG = SandboxConfig(timeout_s=20.0, startup_s=180)
LOOP = """
    def __call__(self, func, searchspace):
        while True:
            for cfg in searchspace.get_random_sample(10):
                func(cfg)
"""


@pytest.fixture(scope="module")
def gemm():
    from generator.config import TasksConfig
    from generator.tasks.entries import load_task_set

    return load_task_set(["problem:gemm/H200"], TasksConfig(train=["problem:gemm/H200"]))


def _fit(source, tasks, **kw):
    return evaluate_source(source, tasks, repeats=1, seed=0, config=kw.pop("config", CONFIG), **kw)


# ------------------------------------------------------------------------ predefined names


def test_names_are_kernel_tuners_where_installed():
    from kernel_tuner.strategies.wrapper import OptAlg
    from kernel_tuner.util import StopCriterionReached

    assert candidate_names() == {"OptAlg": OptAlg, "StopCriterionReached": StopCriterionReached}
    with pytest.raises(TypeError):
        LOCAL["OptAlg"]()


def test_llamea_style_class_runs_in_the_sandbox_with_or_without_kernel_tuner_imports(gemm):
    plain = "class X(OptAlg):\n    def __init__(self, budget=5000):\n        self.budget = budget\n" + LOOP
    fit = _fit(plain, gemm)
    assert fit.ok, fit.error
    # importing them itself works too, and StopCriterionReached caught by either name ends the run
    both = (
        "from kernel_tuner.strategies.wrapper import OptAlg\nfrom kernel_tuner.util import StopCriterionReached "
        "as KTStop\nclass X(OptAlg):\n    def __call__(self, func, searchspace):\n        try:\n"
        "            while True:\n                func(searchspace.get_random_sample(1)[0])\n"
        "        except KTStop:\n            return\n"
    )
    fit2 = _fit(both, gemm)
    assert fit2.ok, fit2.error


def test_unbound_names_and_prelude():
    code = "from __future__ import annotations\nimport random\n\nclass X(OptAlg):\n    pass\n"
    assert unbound_names(code) == ["OptAlg"]
    out = with_prelude(code)
    assert out.startswith("from __future__ import annotations\n") and EXPORT_PRELUDE in out
    compile(out, "x", "exec")
    imported = "from kernel_tuner.strategies.wrapper import OptAlg\nclass X(OptAlg):\n    pass\n"
    assert unbound_names(imported) == [] and with_prelude(imported) == imported
    catches = "class X:\n    def __call__(self, f, s):\n        try:\n            f(1)\n        except StopCriterionReached:\n            pass\n"
    assert unbound_names(catches) == ["StopCriterionReached"]


def test_prelude_defines_the_names_without_kernel_tuner():
    namespace = {"__name__": "m"}
    gone = {m: None for m in ("kernel_tuner", "kernel_tuner.util", "kernel_tuner.strategies.wrapper")}
    with mock.patch.dict(sys.modules, gone):
        exec(compile(EXPORT_PRELUDE, "prelude", "exec"), namespace)
    assert namespace["OptAlg"].__module__ == "m" and issubclass(namespace["StopCriterionReached"], Exception)


def test_preimports_only_heavy_allowed_libraries():
    src = "import numpy as np\nfrom scipy.optimize import minimize\nimport scipy.stats\nimport torch\n"
    assert preimports(src) == ["scipy.optimize", "scipy.stats"]
    assert preimports("def broken(:\n") == []


# ------------------------------------------------------------------------ imports and refusals


def test_numpy_scipy_and_the_standard_library_import(gemm):
    src = (
        "import collections, heapq, itertools, math, random, statistics, bisect, functools\nimport numpy as np\n"
        "import scipy.optimize, scipy.spatial, scipy.stats\nfrom scipy.stats import qmc\n"
        "class X:\n" + LOOP
    )
    fit = _fit(src, gemm)
    assert fit.ok, fit.error


@pytest.mark.parametrize(
    "body, words",
    [
        (
            "import subprocess\n        subprocess.run(['ls'])",
            "starting a subprocess (subprocess.Popen) is refused in the sandbox",
        ),
        ("import os\n        os.system('ls')", "is refused in the sandbox"),
        ("import socket\n        socket.create_connection(('8.8.8.8', 53), timeout=1)", "network access"),
        ("import urllib.request\n        urllib.request.urlopen('http://example.com')", "network access"),
        ("import multiprocessing\n        multiprocessing.Process(target=print).start()", "forking a process"),
        ("open('problems/gemm/problem.toml').read()", "compute everything in memory"),
        ("import torch", "use the standard library, numpy or scipy"),
        ("self.local_search(func)", "never defines it"),
        ("import numpy as np\n        np.random.choice(searchspace.get_random_sample(3))", "use random.choice"),
    ],
)
def test_refused_and_missing_things_say_what_to_do(gemm, body, words):
    src = f"class X:\n    def __call__(self, func, searchspace):\n        {body}\n"
    fit = _fit(src, gemm)
    assert fit.error is not None and fit.error.kind == "exception", fit.error
    assert words in fit.error.message, fit.error.message


def test_the_prompts_example_class_is_not_there(gemm):
    fit = _fit("class Mine(MyOptimizer):\n    def __call__(self, func, searchspace):\n        pass\n", gemm)
    assert fit.error.kind == "exception" and "only the prompt's example" in fit.error.message


def test_prompt_says_which_names_exist():
    from generator.config import PromptsConfig
    from generator.llm.prompts import PromptBuilder

    text = PromptBuilder([], PromptsConfig(), statistics={})._render("interface")
    assert "`OptAlg`" in text and "`StopCriterionReached`" in text and "need no import" in text
    assert "does not exist when your code runs" in text and "scipy" in text


# ------------------------------------------------------------------------ the budget ends the run


def test_swallowed_stop_ends_the_run_scored_not_timed_out(gemm):
    """A loop that catches the stop and calls again ends at once; one that computes on ends after a grace."""
    calls_again = (
        "class X(OptAlg):\n    def __call__(self, func, searchspace):\n        while True:\n"
        "            try:\n                func(searchspace.get_random_sample(1)[0])\n"
        "            except StopCriterionReached:\n                pass\n"
    )
    spins = (
        "class X:\n    def __call__(self, func, searchspace):\n        try:\n            while True:\n"
        "                func(searchspace.get_random_sample(1)[0])\n        except BaseException:\n"
        "            while True:\n                pass\n"
    )
    honest = _fit(
        "class X:\n    def __call__(self, func, searchspace):\n        while True:\n"
        "            func(searchspace.get_random_sample(1)[0])\n",
        gemm,
    )
    for src in (calls_again, spins):
        fit = _fit(src, gemm, config=SandboxConfig(timeout_s=8.0, startup_s=180))
        assert fit.ok, fit.error
        assert fit.score == pytest.approx(honest.score, abs=1e-12)  # same samples, same trace, same P
        assert fit.per_task["gemm/H200"].wall_s < 7.5


def test_bench_ends_a_swallowed_stop_in_process(gemm):
    from generator.bench.runner import run_optimizer
    from generator.scoring.score import Budget
    from generator.tasks.space import SearchSpace

    class Stubborn:
        def __call__(self, func, searchspace):
            from kernel_tuner.util import StopCriterionReached

            while True:
                try:
                    func(searchspace.get_random_sample(1)[0])
                except StopCriterionReached:
                    pass

    trace = run_optimizer(gemm[0], Stubborn, {}, 0, Budget(None, 25), SearchSpace(gemm[0].space))
    assert trace.rows.size == 25


# ------------------------------------------------------------------------ truncated replies


def test_truncated_reply_error_asks_for_shorter_code():
    reply = extract_reply(
        "# Tabu\n```python\nclass X:\n    def __call__(self, func, searchspace):\n        for i in range(", "length"
    )
    assert reply.truncated and reply.code.startswith("class X")
    error = truncation_error({"kind": "syntax", "message": "SyntaxError: '(' was never closed", "line": None})
    assert error["message"].startswith("the reply was truncated") and "shorter" in error["message"]
    assert "never closed" in error["message"]
    assert truncation_error({"kind": "exception", "message": "x"}) == {"kind": "exception", "message": "x"}
    # a complete reply that stopped normally is not truncated, even without a closing fence
    assert not extract_reply("```python\nclass X:\n    def __call__(self, f, s):\n        pass\n", "stop").truncated


def test_a_slow_run_is_cut_at_its_wall_clock_limit_and_scored(gemm):
    """Real time counts as in Kernel Tuner: a run whose own code is too slow ends at the limit, scored."""
    slow = (
        "import time\nclass X:\n    def __call__(self, func, searchspace):\n"
        "        for cfg in searchspace.get_random_sample(20):\n            func(cfg)\n"
        "        while True:\n            time.sleep(0.05)\n"
    )
    fit = _fit(slow, gemm, config=SandboxConfig(timeout_s=2.0, startup_s=180))
    assert fit.ok, fit.error
    assert fit.metadata["runs_cut_at_time_limit"] == 1 and fit.per_task["gemm/H200"].unique == 20
    strict = _fit(slow, gemm, config=SandboxConfig(timeout_s=2.0, startup_s=180, cut_slow_runs=False))
    assert strict.error.kind == "timeout" and "did not finish within 2 s" in strict.error.message
    idle = _fit(
        "import time\nclass X:\n    def __call__(self, func, searchspace):\n        time.sleep(60)\n",
        gemm,
        config=SandboxConfig(timeout_s=1.0, startup_s=180),
    )
    assert idle.error.kind == "timeout" and "did not evaluate anything within 1 s" in idle.error.message
