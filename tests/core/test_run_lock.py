"""One process writes a run directory at a time (issue 15, item 5).

Two `tunesmith run` of one run directory at once used to duplicate candidates and crash on
status.json.tmp. Now the second is refused at once with one line naming the first one's PID; `hpo`
is refused while a campaign writes the run, and a campaign while `hpo` works on it, but several
`hpo` processes may share a run (tests/tuning/test_hpo_parallel.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest
from support.fake_llm_server import FakeLLMServer
from support.fault_fixtures import FAKE_KEY, ROOT, reply_for, tunesmith, wait_for_lines, write_campaign

from generator.archive import Archive


@pytest.fixture()
def server(monkeypatch, hub_dir):
    """The fake LLM; while `srv.gate` is cleared, its replies wait (the first campaign is mid-run)."""
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))
    gate = threading.Event()
    gate.set()

    def reply(body):
        gate.wait(120)
        return reply_for(body)

    with FakeLLMServer(reply) as srv:
        srv.gate = gate
        yield srv


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


def test_second_run_of_one_run_directory_is_refused_with_the_holders_pid(server, tmp_path):
    budget = 6
    cfg = write_campaign(tmp_path / "c.toml", server.base_url, tmp_path / "run", budget=budget, timeout=150)
    first = tunesmith("run", str(cfg), "--no-progress")
    try:
        wait_for_lines(tmp_path / "run" / "candidates.jsonl", 1, first)
        server.gate.clear()  # the first campaign now waits for its next reply, holding the run directory
        _refused_while_running(first, cfg, tmp_path / "run")
    except BaseException:
        os.killpg(first.pid, signal.SIGKILL)
        raise
    finally:
        server.gate.set()
    out, err = _finish(first, 300)
    assert first.returncode == 0, err
    ids = [c.id for c in Archive.open(tmp_path / "run").candidates()]
    assert ids == [f"c{i:04d}" for i in range(1, budget + 1)]  # none twice, none lost
    refs = [x.ref for x in Archive.open(tmp_path / "run").exchanges()]
    assert len(refs) == len(set(refs))  # none asked twice
    assert len([r for r in refs if not r.endswith(":reask")]) == budget  # (near-copies are asked once more)
    assert json.loads((tmp_path / "run" / "status.json").read_text())["state"] == "finished"


def _finish(proc, timeout=120):
    """The output of a process that must end soon; killed (and the test failed) if it does not."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError(f"{proc.args} did not end: it was not refused") from None


def _refused_while_running(first, cfg, run):
    second = tunesmith("run", str(cfg), "--no-progress")
    out, err = _finish(second)
    assert second.returncode != 0, (out, err)
    line = _one_line(err)
    assert f"pid {first.pid}" in line and "in use" in line, line
    resumed = tunesmith("resume", str(run), "--no-progress")
    _, err = _finish(resumed)
    assert resumed.returncode != 0 and f"pid {first.pid}" in _one_line(err)
    hpo = tunesmith("hpo", str(run), "--trials", "1", "--quiet")
    _, err = _finish(hpo)
    assert hpo.returncode != 0 and f"pid {first.pid}" in _one_line(err)


HOLDER = textwrap.dedent("""
    import sys
    from generator.run_lock import run_lock

    with run_lock(sys.argv[1], sys.argv[2], shared=sys.argv[3] == "shared"):
        print("held", flush=True)
        sys.stdin.read()  # until the test closes our stdin
""")


def _hold(run, command, mode):
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(run), command, mode],
        cwd=ROOT,
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_campaign_is_refused_while_hpo_works_on_its_run_and_hpo_may_share(tmp_path):
    from generator.run_lock import RunLocked, run_lock

    run = Archive.create(tmp_path / "run", {"name": "x"}).run_dir
    holder = _hold(run, "hpo", "shared")
    try:
        with pytest.raises(RunLocked, match=rf"in use by tunesmith hpo \(pid {holder.pid}\)"):
            with run_lock(run, "run"):
                pass
        other = _hold(run, "hpo", "shared")  # a second hpo process on the same run: allowed
        other.stdin.close()
        other.wait(10)
    finally:
        holder.stdin.close()
        holder.wait(10)
    with run_lock(run, "run"):  # the holder is gone, and so is its lock
        with run_lock(run, "hpo", shared=True):  # the campaign's own [hpo] stage, same process
            pass
