"""`tunesmith status` asks the run lock whether a process is at work on the run (issue 24 item 15):
`running` from the first second (before status.json exists), `stopped` after kill -9, never `unknown`."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from support.fake_llm_server import FakeLLMServer
from support.fault_fixtures import FAKE_KEY, reply_for, tunesmith, write_campaign

from generator.campaign.printing import format_status


@pytest.fixture()
def held_server(monkeypatch, hub_dir):
    """A fake LLM whose replies wait until `srv.gate` is set: the campaign stays at its first request."""
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))
    gate = threading.Event()

    def reply(body):
        gate.wait(120)
        return reply_for(body)

    with FakeLLMServer(reply) as srv:
        srv.gate = gate
        yield srv
        gate.set()


def _state(run) -> str:
    return next(line for line in format_status(run).splitlines() if line.startswith("state: "))


def test_status_says_running_while_a_process_holds_the_run_and_stopped_after_kill_9(held_server, tmp_path):
    run = tmp_path / "run"
    cfg = write_campaign(tmp_path / "c.toml", held_server.base_url, run, budget=4, timeout=150)
    proc = tunesmith("run", str(cfg), "--no-progress")
    try:
        deadline = time.monotonic() + 120
        while not held_server.requests and time.monotonic() < deadline:  # started, nothing recorded yet
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        assert not (run / "status.json").exists()
        state = _state(run)
        assert state.startswith("state: running -- tunesmith run") and f"(pid {proc.pid})" in state, state
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    state = _state(run)
    assert state.startswith("state: stopped") and f"tunesmith resume {run}" in state, state
    assert "unknown" not in format_status(run)


def test_a_status_that_says_running_is_not_believed_when_nobody_holds_the_run(tmp_path):
    from support.run_fixture import build_run

    run = build_run(tmp_path)
    (run / "status.json").write_text('{"state": "running", "reason": "", "candidates": 7, "budget": 7}')
    state = _state(run)
    assert state.startswith("state: stopped -- no process holds the run") and "resume" in state, state
    from generator.run_lock import run_lock

    with run_lock(run, "run"):  # this process at work on it: running
        assert _state(run).startswith("state: running -- "), _state(run)


def test_status_never_says_more_candidates_than_of_the_budget(tmp_path):
    from support.run_fixture import build_run

    run = build_run(tmp_path)  # 7 candidates; an earlier version let `resume --budget 5` write budget 5
    (run / "status.json").write_text('{"state": "finished", "reason": "", "candidates": 7, "budget": 5}')
    line = next(x for x in format_status(run).splitlines() if x.startswith("candidates: "))
    assert line.startswith("candidates: 7 (more than the budget of 5) generated"), line
