"""SIGTERM stops a campaign as Ctrl-C does (issue 15, item 8): status `stopped`, resumable, and the
command to resume it printed. SIGTERM used to kill the run outright and leave `status: running`."""

from __future__ import annotations

import json
import signal

import pytest
from support.fake_llm_server import FakeLLMServer
from support.fault_fixtures import FAKE_KEY, reply_for, tunesmith, wait_for_lines, write_campaign

from generator.archive import Archive
from generator.campaign.run import resume, run_campaign


@pytest.fixture()
def server(monkeypatch, hub_dir):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))
    with FakeLLMServer(reply_for) as srv:
        yield srv


def _digest(run):
    return [
        (c.id, c.operator, tuple(c.parent_ids), c.code_hash, c.score, (c.error or {}).get("kind"))
        for c in Archive.open(run).candidates()
    ]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_signal_stops_cleanly_says_how_to_resume_and_resume_finishes_the_same_run(sig, server, tmp_path):
    budget = 6
    reference = write_campaign(tmp_path / "reference.toml", server.base_url, tmp_path / "reference", budget=budget)
    run_campaign(reference, progress=False)

    run = tmp_path / "run"
    cfg = write_campaign(tmp_path / "c.toml", server.base_url, run, budget=budget)
    server.delay = 0.3
    proc = tunesmith("run", str(cfg), "--no-progress")
    wait_for_lines(run / "candidates.jsonl", 2, proc)
    proc.send_signal(sig)  # `kill PID` (or Ctrl-C) to the tunesmith process only
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, err
    status = json.loads((run / "status.json").read_text())
    assert status["state"] == "stopped", status
    assert ("SIGTERM" if sig == signal.SIGTERM else "Ctrl-C") in status["reason"]
    assert f"tunesmith resume {run}" in err, err
    assert "Traceback" not in err, err

    server.delay = 0.0
    summary = resume(run, progress=False)
    assert summary.state == "finished" and summary.candidates == budget
    assert _digest(run) == _digest(tmp_path / "reference")
