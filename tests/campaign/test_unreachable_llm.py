"""An LLM that gives no answer (issue 24 item 7): a request that never got an answer is not a candidate.
It costs no budget, is never recorded as a failed candidate, and is asked again (same candidate id),
in the run or on resume."""

from __future__ import annotations

import socket

import pytest
from support.fake_llm_server import FakeLLMServer
from support.fault_fixtures import FAKE_KEY, reply_for, write_campaign

from generator.archive import Archive
from generator.campaign.printing import format_status
from generator.campaign.run import run_campaign
from generator.scoring.fitness import Fitness, TaskFitness


def fake_evaluate(code, tasks, repeats, seed, timeout, workers):
    """A score from the code's length: enough to rank candidates without the sandbox."""
    s = (len(code) % 100) / 100
    return Fitness(s, {t.name: TaskFitness(s, 0.0, 50.0) for t in tasks}, 0.01)


@pytest.fixture()
def env(monkeypatch, hub_dir):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))


def _closed_port() -> int:
    """A loopback port nobody listens on (connection refused, as with no network)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_llm_spends_no_budget_and_resume_asks_again_with_the_same_ids(env, tmp_path, capsys):
    from generator.cli import main

    run = tmp_path / "run"
    cfg = write_campaign(tmp_path / "c.toml", f"http://127.0.0.1:{_closed_port()}/v1", run, budget=4, retries=0)
    for command in (["run", str(cfg)], ["resume", str(run)]):
        assert main([*command, "--no-progress"]) == 3  # stopped, resumable
        out = capsys.readouterr().out
        assert "got no answer" in out and f"to continue: tunesmith resume {run}" in out, out
        assert Archive.open(run).candidates() == []  # no failed candidates, no "traceback": "None"
        assert "candidates: 0 of 4" in format_status(run)
    assert all(x.error and "Connection" in x.error for x in Archive.open(run).exchanges())
    with FakeLLMServer(reply_for) as server:  # the network is back (api_base may change between sessions)
        cfg = write_campaign(cfg, server.base_url, run, budget=4, retries=0)
        summary = run_campaign(cfg, progress=False, evaluate=fake_evaluate)
    cands = Archive.open(run).candidates()
    assert summary.state == "finished" and [c.id for c in cands] == ["c0001", "c0002", "c0003", "c0004"]
    assert all(c.exchange_id for c in cands)


def test_one_unanswered_request_is_asked_again_in_the_run(env, tmp_path):
    run = tmp_path / "run"
    with FakeLLMServer(reply_for) as server:
        # no re-asks of near-copies (max_similarity 1.0), so every request beyond the five answers is the retry
        cfg = write_campaign(
            tmp_path / "c.toml",
            server.base_url,
            run,
            budget=5,
            retries=1,
            llm="concurrency = 1",
            extra="[novelty]\nmax_similarity = 1.0",
        )
        server.push(("status", 500), ("status", 500))  # c0001's first request gets no answer (tried twice)
        summary = run_campaign(cfg, progress=False, evaluate=fake_evaluate)
        asked = len(server.requests)
    cands = Archive.open(run).candidates()
    assert summary.state == "finished" and [c.id for c in cands] == [f"c{i:04d}" for i in range(1, 6)]
    assert not any((c.error or {}).get("kind") == "llm" for c in cands)
    exchanges = Archive.open(run).exchanges()
    unanswered = [x for x in exchanges if x.error]
    assert asked == 7 and len(exchanges) == 6 and len(unanswered) == 1  # 2 attempts of one request + 5 answers
    # asked again under the same candidate id, and that candidate holds the answer
    again = next(c for c in cands if c.id == unanswered[0].ref)
    assert again.exchange_id != unanswered[0].id and again.ok
