"""Issue 23, the channel between the evaluator and a candidate's run: nothing of one run reaches the
next run or the next candidate, malformed frames fail only their candidate, figures come from the
evaluator's records, text from a candidate is capped and escaped, `func` is safe from any thread.

The hostile candidates live in tests/hostile/ (test_hostile.py also runs each once)."""

from __future__ import annotations

import json
import os
import struct
import threading
from pathlib import Path

import pytest

from generator.evaluation.evaluate import evaluate_source
from generator.sandbox import Job, SandboxConfig, run_job
from generator.sandbox.pool import close_pool
from generator.evaluation.runs import run_seed
from generator.scoring.score import budget_for

HOSTILE = Path(__file__).parent / "hostile"
CONFIG = SandboxConfig(timeout_s=3.0, memory_mb=256, startup_s=120)

HONEST = '''
class RandomSearch:
    def __call__(self, func, searchspace):
        while True:
            for cfg in searchspace.get_random_sample(10):
                func(cfg)
'''


def _hostile(name: str) -> str:
    return (HOSTILE / f"{name}.py").read_text()


@pytest.fixture(scope="module")
def honest_alone(conv_task):
    """The honest candidate's result in a fresh host (no candidate before it)."""
    close_pool()
    fit = evaluate_source(HONEST, [conv_task], repeats=2, seed=0, config=CONFIG)
    assert fit.ok, fit.error
    return fit


# ------------------------------------------------------------------ 3, 5, 6, 16: per-run channels

def test_stale_answers_do_not_reach_the_next_run(conv_task):
    """Item 3: answers a run never read are gone when the next run of the same job starts."""
    fit = evaluate_source(_hostile("stale_answers"), [conv_task], repeats=3, seed=0, config=CONFIG)
    assert fit.ok, fit.error


@pytest.mark.parametrize("name", ["stale_answers", "half_request"])
def test_leftovers_do_not_reach_the_next_candidate(name, conv_task, honest_alone):
    """Items 5 and 6: unread answers or half a request left by one candidate change nothing for the
    next candidate served by the same pooled host."""
    close_pool()
    evaluate_source(_hostile(name), [conv_task], repeats=1, seed=0, config=CONFIG)
    after = evaluate_source(HONEST, [conv_task], repeats=2, seed=0, config=CONFIG)
    assert after.ok, after.error
    assert after.score == honest_alone.score
    assert after.per_task[conv_task.name].fevals == honest_alone.per_task[conv_task.name].fevals


def test_half_a_frame_stays_with_its_run(conv_task):
    """Item 16: half a frame and a sleep in run 0 (cut at its limit) leave run 1's messages alone."""
    config = SandboxConfig(timeout_s=1.5, memory_mb=256, startup_s=120)
    fit = evaluate_source(_hostile("half_frame_sleep"), [conv_task], repeats=2, seed=0, config=config)
    assert fit.ok, fit.error
    assert fit.per_task[conv_task.name].unique == 5  # both runs: five evaluations each, none lost


# ------------------------------------------------------------------ 7: deep JSON

def test_deeply_nested_frame_fails_only_its_candidate(conv_task, honest_alone):
    """Item 7: JSON nested 100,000 deep is a protocol error of that candidate, not a traceback."""
    fit = evaluate_source(_hostile("deep_json"), [conv_task], repeats=1, seed=0, config=CONFIG)
    assert fit.error is not None and fit.error.kind == "killed" and "malformed" in fit.error.message
    after = evaluate_source(HONEST, [conv_task], repeats=2, seed=0, config=CONFIG)
    assert after.score == honest_alone.score


# ------------------------------------------------------------------ 15: figures from our records

def test_fevals_are_counted_by_the_evaluator(conv_task):
    """Item 15: the run's own count (func.local_calls, the "done" frame) is not a figure we record."""
    forged = evaluate_source(_hostile("forged_calls"), [conv_task], repeats=2, seed=0, config=CONFIG)
    honest = evaluate_source(_hostile("forged_calls").replace("func.local_calls = 10**12", "pass"),
                             [conv_task], repeats=2, seed=0, config=CONFIG)
    assert forged.ok and honest.ok
    assert forged.per_task[conv_task.name].fevals == honest.per_task[conv_task.name].fevals <= 20


def test_a_forged_done_count_is_ignored(conv_task):
    """Item 15: a "done" frame claiming 2**31 - 1 calls records the calls the evaluator saw."""
    src = '''
import os
import struct


class Claims:
    def __call__(self, func, searchspace):
        cfg = searchspace.get_random_sample(1)[0]
        func(cfg)
        func(cfg)  # a revisit: answered in the run, counted by the evaluator
        os.write(func._req, struct.pack("<ci", b"D", 2**31 - 1))
        os._exit(0)
'''
    runs = [(0, 0, run_seed(0, 0))]
    outcome = run_job(Job(src, "Claims", {}, [conv_task], [budget_for(conv_task)], runs, CONFIG))
    assert outcome.error is None, outcome.error
    assert outcome.runs[0].trace.fevals == 2 and outcome.runs[0].trace.rows.size == 1
