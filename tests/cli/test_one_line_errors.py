"""One line, not a traceback (issue 24 item 12): report and export to places that cannot take the output,
a reader that stops early (`| head -1`), Ctrl-C during `hpo` and repeated Ctrl-C during a campaign.
Each is one line naming the path or the command to continue, with a non-zero exit."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.fake_llm_server import FakeLLMServer
from support.fault_fixtures import FAKE_KEY, ROOT, SAMPLER_SOURCE, reply_for, tunesmith, wait_for_lines, write_campaign
from support.run_fixture import build_run

from generator.cli import main


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture()
def run(tmp_path):
    return build_run(tmp_path)


@pytest.fixture()
def unwritable(tmp_path):
    """A folder this process may not write into (root passes permission checks: /sys refuses it)."""
    if os.geteuid() == 0:
        yield Path("/sys")
        return
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    yield folder
    folder.chmod(0o755)


def read_only(path: Path, *command: str) -> subprocess.CompletedProcess:
    """`tunesmith COMMAND` with `path` mounted read-only (a user and mount namespace: works for root too)."""
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1) to mount a folder read-only")
    script = (
        f'mount --bind "{path}" "{path}" && mount -o remount,bind,ro "{path}" && '
        f'exec "{sys.executable}" -m generator.cli "$@"'
    )
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script, "sh", *command],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
    )
    if "mount:" in done.stderr or "unshare:" in done.stderr:
        pytest.skip(f"no read-only mount here: {done.stderr.strip()}")
    return done


# -- report and export ----------------------------------------------------------------------------


def test_report_on_a_read_only_run_says_to_write_it_elsewhere(run):
    done = read_only(run, "report", str(run))
    line = one_line(done.stderr)
    assert done.returncode == 2 and f"{run} is not writable" in line, line
    assert f"tunesmith report {run} -o PATH.html" in line and not (run / "report").exists()


@pytest.mark.parametrize("where", ["folder", "under a file", "unwritable"])
def test_report_to_a_place_that_cannot_take_it_is_one_line(run, tmp_path, unwritable, capsys, where):
    (tmp_path / "afile").write_text("x")
    target = {"folder": tmp_path, "under a file": tmp_path / "afile" / "r.html", "unwritable": unwritable / "r.html"}[
        where
    ]
    before = sorted(p for p in tmp_path.rglob("*"))
    assert main(["report", str(run), "-o", str(target)]) == 2
    line = one_line(capsys.readouterr().err)
    said = {
        "folder": f"{tmp_path} is a folder",
        "under a file": f"{tmp_path / 'afile'} is a file, not a folder",
        "unwritable": f"{unwritable} is not writable",
    }[where]
    assert said in line and "give -o a file where you may write" in line, line
    assert sorted(p for p in tmp_path.rglob("*")) == before  # no figures drawn, nothing half-written


@pytest.mark.parametrize("where", ["read-only", "a file"])
def test_export_out_to_a_place_that_cannot_take_it_is_one_line(run, tmp_path, unwritable, capsys, where):
    (tmp_path / "afile").write_text("x")
    out = unwritable / "pkg" if where == "read-only" else tmp_path / "afile"
    assert main(["export", str(run), "--name", "mine", "--out", str(out)]) == 2
    line = one_line(capsys.readouterr().err)
    assert "give --out a folder where you may write" in line and str(out) in line, line


def test_export_out_to_a_read_only_mount_is_one_line(run, tmp_path):
    (tmp_path / "pkg").mkdir()
    done = read_only(tmp_path / "pkg", "export", str(run), "--name", "mine", "--out", str(tmp_path / "pkg"))
    line = one_line(done.stderr)
    assert done.returncode == 2 and "is not writable" in line and "--out" in line, line


# -- a reader that stops early ------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["status", "stats"])
def test_a_reader_that_stops_early_is_no_traceback(run, command, hub_dir):
    args = [str(run)] if command == "status" else ["problem:gemm/H200"]
    proc = tunesmith(command, *args)
    proc.stdout.close()  # `| head -0`: the reader is gone before anything is written
    err = proc.stderr.read()
    proc.wait(120)
    assert err.strip() == "" and proc.returncode == 141, (proc.returncode, err)


# -- Ctrl-C -------------------------------------------------------------------------------------------


def test_ctrl_c_during_hpo_says_how_to_continue_and_the_command_does(tmp_path, hub_dir):
    from generator.archive import Archive, Candidate

    tasks = {"hub": str(hub_dir), "train": ["hub:convolution_milo/A100"], "test": []}
    archive = Archive.create(
        tmp_path / "run", {"name": "hpo-ctrl-c", "tasks": tasks, "evaluation": {"timeout": 60, "workers": 1}}
    )
    archive.append_candidate(
        Candidate(
            id="c0001",
            generation=0,
            operator="new",
            code_path=archive.write_code("c0001", SAMPLER_SOURCE),
            fitness={"score": 0.3, "per_task": {}},
        )
    )
    journal = tmp_path / "hpo.journal"
    command = [
        "hpo",
        str(archive.run_dir),
        "--storage",
        f"journal:{journal}",
        "--trials",
        "3",
        "--repeats",
        "2",
        "--report-repeats",
        "1",
        "--quiet",
    ]
    proc = tunesmith(*command)
    deadline = time.monotonic() + 120
    while not (journal.exists() and journal.stat().st_size):  # the study exists: trials are running
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C does: the whole process group
    _, err = proc.communicate(timeout=120)
    line = one_line(err)
    assert proc.returncode == 130 and "interrupted (Ctrl-C)" in line, (proc.returncode, line)
    continue_with = line.split("to continue: ", 1)[1]
    assert continue_with == "tunesmith " + " ".join(command), line
    again = tunesmith(*continue_with.split()[1:])
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0 and "Traceback" not in err, err


@pytest.mark.parametrize("presses,gap", [(2, 0.01), (2, 0.3), (3, 0.1)])
def test_repeated_ctrl_c_during_a_campaign_keeps_the_line_to_continue(tmp_path, hub_dir, monkeypatch, presses, gap):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))
    run = tmp_path / "run"
    with FakeLLMServer(reply_for) as server:
        server.delay = 2.0  # requests in flight when the keys are pressed
        cfg = write_campaign(tmp_path / "c.toml", server.base_url, run, budget=12, timeout=30)
        proc = tunesmith("run", str(cfg), "--no-progress")
        wait_for_lines(run / "candidates.jsonl", 1, proc)
        for _ in range(presses):
            os.killpg(proc.pid, signal.SIGINT)
            time.sleep(gap)
        _, err = proc.communicate(timeout=120)
    line = one_line(err)
    # 130, or killed by the last SIGINT once Python's finalisation restored the default handler: a shell
    # reports both as 130
    assert proc.returncode in (130, -signal.SIGINT), (proc.returncode, err)
    assert line.endswith(f"to continue: tunesmith resume {run}"), err
