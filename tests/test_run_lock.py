"""One process writes a run directory at a time (issue 15, item 5).

Two `tunesmith run` of one run directory at once used to duplicate candidates and crash on
status.json.tmp. Now the second is refused at once with one line naming the first one's PID; `hpo`
is refused while a campaign writes the run, and a campaign while `hpo` works on it, but several
`hpo` processes may share a run (tests/test_hpo_parallel.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from fake_llm_server import FakeLLMServer
from fault_fixtures import FAKE_KEY, ROOT, reply_for, tunesmith, wait_for_lines, write_campaign
from generator.archive import Archive


@pytest.fixture()
def server(monkeypatch, hub_dir):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))
    with FakeLLMServer(reply_for, delay=0.3) as srv:
        yield srv


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


def test_second_run_of_one_run_directory_is_refused_with_the_holders_pid(server, tmp_path):
    budget = 6
    cfg = write_campaign(tmp_path / "c.toml", server.base_url, tmp_path / "run", budget=budget)
    first = tunesmith("run", str(cfg), "--no-progress")
    wait_for_lines(tmp_path / "run" / "candidates.jsonl", 1, first)
    second = tunesmith("run", str(cfg), "--no-progress")
    out, err = second.communicate(timeout=120)
    assert second.returncode != 0, (out, err)
    line = _one_line(err)
    assert f"pid {first.pid}" in line and "in use" in line, line
    resumed = tunesmith("resume", str(tmp_path / "run"), "--no-progress")
    _, err = resumed.communicate(timeout=120)
    assert resumed.returncode != 0 and f"pid {first.pid}" in _one_line(err)
    hpo = tunesmith("hpo", str(tmp_path / "run"), "--trials", "1", "--quiet")
    _, err = hpo.communicate(timeout=120)
    assert hpo.returncode != 0 and f"pid {first.pid}" in _one_line(err)

    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    ids = [c.id for c in Archive.open(tmp_path / "run").candidates()]
    assert ids == [f"c{i:04d}" for i in range(1, budget + 1)]  # none twice, none lost
    refs = [x.ref for x in Archive.open(tmp_path / "run").exchanges()]
    assert len(refs) == len(set(refs)) == budget
    assert json.loads((tmp_path / "run" / "status.json").read_text())["state"] == "finished"


HOLDER = textwrap.dedent("""
    import sys
    from generator.run_lock import run_lock

    with run_lock(sys.argv[1], sys.argv[2], shared=sys.argv[3] == "shared"):
        print("held", flush=True)
        sys.stdin.read()  # until the test closes our stdin
""")


def _hold(run, command, mode):
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(run), command, mode], cwd=ROOT, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
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
