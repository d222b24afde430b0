"""The channel between the evaluator and a candidate's run: nothing of one run reaches the
next run or the next candidate, malformed frames fail only their candidate, figures come from the
evaluator's records, `func` is safe from any thread (issue 23, items 3, 5, 6, 7, 12, 15, 16).

The hostile candidates live in tests/hostile/ (test_hostile.py also runs each once)."""

from __future__ import annotations

import os
import threading
import time

import pytest
from support.paths import HOSTILE_DIR

from generator.evaluation.evaluate import evaluate_source
from generator.evaluation.runs import run_seed
from generator.sandbox.jobs import Job, SandboxConfig
from generator.sandbox.pool import close_pool, run_job
from generator.scoring.score import budget_for

HOSTILE = HOSTILE_DIR
CONFIG = SandboxConfig(timeout_s=3.0, memory_mb=256, startup_s=120)

HONEST = """
class RandomSearch:
    def __call__(self, func, searchspace):
        while True:
            for cfg in searchspace.get_random_sample(10):
                func(cfg)
"""


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
    honest = evaluate_source(
        _hostile("forged_calls").replace("func.local_calls = 10**12", "pass"),
        [conv_task],
        repeats=2,
        seed=0,
        config=CONFIG,
    )
    assert forged.ok and honest.ok
    assert forged.per_task[conv_task.name].fevals == honest.per_task[conv_task.name].fevals <= 20


def test_a_forged_done_count_is_ignored(conv_task):
    """Item 15: a "done" frame claiming 2**31 - 1 calls records the calls the evaluator saw."""
    src = """
import os
import struct


class Claims:
    def __call__(self, func, searchspace):
        first, second = searchspace.get_random_sample(2)
        func(first)
        func(first)  # a revisit: answered in the run, counted by the evaluator (told with the next request)
        func(second)
        os.write(func._req, struct.pack("<ci", b"D", 2**31 - 1))
        os._exit(0)
"""
    runs = [(0, 0, run_seed(0, 0))]
    outcome = run_job(Job(src, "Claims", {}, [conv_task], [budget_for(conv_task)], runs, CONFIG))
    assert outcome.error is None, outcome.error
    assert outcome.runs[0].trace.fevals == 3 and outcome.runs[0].trace.rows.size == 2


def test_calls_answered_in_the_run_are_all_counted(conv_task):
    """Item 15: revisits and invalid configurations travel in batches; every one is counted once."""
    src = """
class Revisits:
    def __call__(self, func, searchspace):
        cfg = searchspace.get_random_sample(1)[0]
        for _ in range(1000):
            func(cfg)
        for _ in range(10):
            func(tuple(-1 for _ in cfg))
"""
    runs = [(0, 0, run_seed(0, 0))]
    outcome = run_job(Job(src, "Revisits", {}, [conv_task], [budget_for(conv_task)], runs, CONFIG))
    assert outcome.error is None, outcome.error
    assert outcome.runs[0].trace.fevals == 1010 and outcome.runs[0].trace.rows.size == 1


# ------------------------------------------------------------------ 12: func from several threads


class _FakeEvaluator(threading.Thread):
    """Answers each request on the pipe with value = 2 * row, like the evaluator would, slowly."""

    def __init__(self, req_r: int, resp_w: int, stop_after: int):
        super().__init__(daemon=True)
        self.req_r, self.resp_w, self.stop_after, self.requests = req_r, resp_w, stop_after, 0

    def run(self):
        from generator.sandbox.streams import ANSWER, FRAME, read_exact

        while True:
            try:
                kind, row = FRAME.unpack(read_exact(self.req_r, FRAME.size))
            except (EOFError, OSError):
                return
            if kind != b"E":
                continue
            self.requests += 1
            stop = self.requests > self.stop_after
            time.sleep(0.0005)  # lets another thread's request overtake this answer if it can
            os.write(self.resp_w, ANSWER.pack(b"S" if stop else b"V", 2.0 * row, min(1.0, self.requests / 50)))


def test_func_answers_each_thread_its_own_value():
    """Item 12: eight threads calling func at once each get the value of their own configuration,
    and once the evaluator said stop, every thread gets StopCriterionReached without a request."""
    from concurrent.futures import ThreadPoolExecutor

    from generator.sandbox.candidate_names import StopCriterionReached
    from generator.sandbox.candidate_run import CostFunction

    class Space:
        def row_of(self, config):
            return config[0] if 0 <= config[0] < 1000 else None

    req_r, req_w = os.pipe()
    resp_r, resp_w = os.pipe()
    evaluator = _FakeEvaluator(req_r, resp_w, stop_after=200)
    evaluator.start()
    func = CostFunction(Space(), req_w, resp_r)
    with ThreadPoolExecutor(8) as pool:
        rows = list(range(200))
        assert list(pool.map(lambda r: func((r,)), rows)) == [2.0 * r for r in rows]
        assert list(pool.map(lambda r: func((r,)), rows[:50])) == [2.0 * r for r in rows[:50]]  # revisits
        with pytest.raises(StopCriterionReached):
            func((500,))
        asked = evaluator.requests
        together = threading.Barrier(8)  # one call per pool thread (a told thread calling again ends the run)

        def call_once(i):
            together.wait()
            return func((600 + i,))

        futures = [pool.submit(call_once, i) for i in range(8)]
        assert all(isinstance(f.exception(), StopCriterionReached) for f in futures)
    assert evaluator.requests == asked  # raised locally: no request after the stop
    for fd in (req_w, resp_w, req_r, resp_r):
        os.close(fd)


def test_threaded_population_search_is_scored_and_reproducible(conv_task):
    """Item 12: a ThreadPoolExecutor(8) population search is never killed for it; every repeat uses
    its budget (no run is cut short by another's leftovers); the same seed gives the same evaluations
    up to the order within the last batch."""
    source = _hostile("threaded_population")
    config = SandboxConfig(timeout_s=20.0, startup_s=120)
    runs = [(0, r, run_seed(s, r)) for s in range(4) for r in range(2)]
    job = lambda: Job(source, "ThreadedPopulation", {}, [conv_task], [budget_for(conv_task)], runs, config)  # noqa: E731 - fresh
    first, second = run_job(job()), run_job(job())
    for outcome in (first, second):
        assert outcome.error is None, outcome.error
        assert all(r.trace is not None and r.trace.rows.size > 20 for r in outcome.runs)
    for a, b in zip(first.runs, second.runs):  # batches of 16: only the last one's order may differ
        assert len(set(a.trace.rows.tolist()) ^ set(b.trace.rows.tolist())) <= 2 * 16
        assert set(a.trace.rows[:16].tolist()) == set(b.trace.rows[:16].tolist())


def test_campaign_goes_on_after_a_deeply_nested_frame(server, make_config):
    """Item 7: in a campaign (real sandbox), the candidate that sends JSON nested 100,000 deep fails
    as `killed`; the run finishes, so a resume has nothing to replay into a crash."""
    from generator.archive import Archive
    from generator.campaign.run import run_campaign

    cfg = make_config(server, budget=2, concurrency=1)
    server.push(("reply", f"# Deep JSON frame\n```python\n{_hostile('deep_json')}```\n"))
    summary = run_campaign(cfg, progress=False)
    assert summary.state == "finished" and summary.candidates == 2
    first = Archive.open(cfg.parent / "run").candidates()[0]
    assert first.error["kind"] == "killed" and "malformed" in first.error["message"]
