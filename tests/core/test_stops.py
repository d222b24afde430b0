"""Stops the way a user makes them (issue 40, item 1): Ctrl-C at the terminal (SIGINT to the process group),
`kill -INT PID`, `kill PID` (SIGTERM), at random moments of a campaign, again and again on the same run.
Each stop ends the process within seconds with the line that says how to continue, and the resumes
together give exactly the run an uninterrupted campaign gives.

The stops used to leave the process alive: its evaluation threads waited for ever on sandbox jobs that
the stop had cancelled (`shutdown(cancel_futures=True)` never wakes `wait()`), and Python joins those
threads before it exits."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest
from support.fault_fixtures import tunesmith

from generator.archive import Archive

EXIT_LIMIT_S = 8.0  # "within a few seconds", with room for a loaded 2-core test machine
STOPS = [("group", signal.SIGINT), ("process", signal.SIGINT), ("process", signal.SIGTERM)] * 3


def _campaign(path, run_dir, budget: int = 30):
    """The quickstart's kind of campaign (offline synthesizer, sandbox runs in two workers), made small."""
    path.write_text(f'''name = "stops"
[llm]
model = "synth/components"
seed = 1
concurrency = 3
[evolution]
n_parents = 3
n_offspring = 4
budget = {budget}
seed = 1
[tasks]
train = ["problem:gemm/H200"]
[evaluation]
repeats = 2
timeout = 10
workers = 2
[output]
run_dir = "{run_dir}"
''')
    return path


def _digest(run):
    return [
        (c.id, c.operator, tuple(c.parent_ids), c.code_hash, c.score, (c.error or {}).get("kind"))
        for c in Archive.open(run).candidates()
    ]


def _stop(proc: subprocess.Popen, how: str, sig: int) -> tuple[float, str]:
    """Send the stop; (seconds until the process ended, its stderr)."""
    start = time.monotonic()
    if how == "group":
        os.killpg(proc.pid, sig)  # what Ctrl-C at a terminal does: every process of the foreground group
    else:
        proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        return float("inf"), err
    return time.monotonic() - start, err


def _catches_sigterm(pid: int) -> bool:
    """Whether the process has its stop handlers up (Tunesmith's first act; SIGTERM is bit 15 of SigCgt)."""
    try:
        status = open(f"/proc/{pid}/status").read()
    except OSError:
        return False
    caught = next((line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), "0")
    return bool(int(caught, 16) & (1 << (signal.SIGTERM - 1)))


def _state(run) -> str:
    try:
        return json.loads((run / "status.json").read_text()).get("state", "")
    except (OSError, ValueError):
        return ""


@pytest.fixture()
def sigint_reaches_children():
    """A test run started in the background of a script ignores SIGINT, and its children inherit that; a user's
    `tunesmith` at a terminal does not, so neither may the ones this test starts."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        yield
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    else:
        yield


def test_stops_at_random_moments_end_at_once_and_the_resumes_give_the_same_run(tmp_path, sigint_reaches_children):
    reference = tmp_path / "reference"
    # in a process of its own, as the stopped runs are: the offline synthesizer keeps state across campaigns in
    # one process, so an in-process reference differs when earlier tests of the suite ran campaigns here
    proc = tunesmith("run", str(_campaign(tmp_path / "reference.toml", reference)), "--no-progress")
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    expected = _digest(reference)

    run = tmp_path / "run"
    cfg = _campaign(tmp_path / "run.toml", run)
    rng = random.Random(40)
    stopped = 0
    for how, sig in STOPS:
        first = not (run / "config.json").exists()
        proc = tunesmith(*(("run", str(cfg)) if first else ("resume", str(run))), "--no-progress")
        while not _catches_sigterm(proc.pid) and proc.poll() is None:
            time.sleep(0.02)  # the interpreter is starting: no program says anything before its code runs
        while first and not (run / "config.json").exists() and proc.poll() is None:
            time.sleep(0.02)  # a new run: from here on there is a run to resume
        time.sleep(rng.uniform(0.0, 3.5))  # importing, setting up, asking, evaluating, recording: wherever it is
        if proc.poll() is not None:
            out, err = proc.communicate()
            assert proc.returncode == 0 and _state(run) == "finished", (proc.returncode, err)
            break  # the campaign finished before this stop; the stops so far are checked below
        seconds, err = _stop(proc, how, sig)
        label = f"stop {stopped + 1} ({'SIGTERM' if sig == signal.SIGTERM else 'SIGINT'} to the {how})"
        assert seconds < EXIT_LIMIT_S, f"{label}: still running {seconds:.0f} s later; stderr: {err}"
        assert proc.returncode == 128 + sig, (label, proc.returncode, err)
        assert f"to continue: tunesmith resume {run}" in err, (label, err)
        assert "Traceback" not in err, (label, err)
        stopped += 1
    assert stopped >= 6, f"only {stopped} stops came before the campaign finished; raise its budget"

    proc = tunesmith("resume", str(run), "--no-progress")
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert _state(run) == "finished"
    assert _digest(run) == expected


# Code that loses the KeyboardInterrupt a stop raises in it, as pydantic did while litellm was imported (it
# turned it into a SchemaError) and C code that clears errors does: the command must end all the same.
SWALLOWS = """
import sys, time
from generator.interrupts import says_how_to_continue, sigterm_as_interrupt, stop_within_seconds
stop_within_seconds()
with sigterm_as_interrupt(), says_how_to_continue("tunesmith resume RUN"):
    while True:
        try:  # the stop lands in here, never between the loops
            print("ready", flush=True)
            while True:
                time.sleep(0.05)
        except KeyboardInterrupt:
            pass  # lost
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_whose_interrupt_is_lost_still_ends_the_command_with_the_resume_line(sig, sigint_reaches_children):
    from support.fault_fixtures import ROOT

    proc = subprocess.Popen(
        [sys.executable, "-c", SWALLOWS],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        start_new_session=True,
    )
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(sig)
    seconds, err = _stop_wait(proc)
    assert seconds < EXIT_LIMIT_S, f"still running {seconds:.0f} s after the stop"
    assert proc.returncode == 128 + sig
    assert "; the run is saved, to continue: tunesmith resume RUN" in err, err


def _stop_wait(proc: subprocess.Popen) -> tuple[float, str]:
    start = time.monotonic()
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        return float("inf"), err
    return time.monotonic() - start, err


# A command whose stop a library turns into its own error (pydantic made a SchemaError of it while litellm was
# being imported): loaded into the `tunesmith` command through sitecustomize, in place of `status`.
DISGUISES = """
import time
import generator.cli as cli
from generator.interrupts import says_how_to_continue


def handler(args):
    with says_how_to_continue("tunesmith resume RUN"):
        try:
            print("ready", flush=True)
            while True:
                time.sleep(0.05)
        except KeyboardInterrupt:
            raise RuntimeError("SchemaError: Error building serializer: Terminated") from None


setup, _, text = cli.COMMANDS["status"]
cli.COMMANDS["status"] = (setup, handler, text)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_a_library_turned_into_its_own_error_is_still_a_stop(sig, tmp_path, sigint_reaches_children):
    from support.fault_fixtures import ROOT

    (tmp_path / "sitecustomize.py").write_text(DISGUISES)
    command = os.path.join(os.path.dirname(sys.executable), "tunesmith")
    proc = subprocess.Popen(
        [command, "status", "RUN"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"},
        start_new_session=True,
    )
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(sig)
    seconds, err = _stop_wait(proc)
    assert seconds < EXIT_LIMIT_S and proc.returncode == 128 + sig, (proc.returncode, err)
    assert "; the run is saved, to continue: tunesmith resume RUN" in err and "Traceback" not in err, err


def test_ctrl_c_on_a_dask_local_campaign_is_one_line_not_the_workers_tracebacks(tmp_path, sigint_reaches_children):
    """Ctrl-C at the terminal reaches `dask-local`'s worker processes too (one process group); each of them
    printed its KeyboardInterrupt traceback (about 100 lines in all) around the resume line. The campaign
    process alone decides how a stop ends: the workers leave SIGINT to it."""
    pytest.importorskip("distributed")
    from support.fault_fixtures import wait_for_lines

    run = tmp_path / "run"
    cfg = _campaign(tmp_path / "run.toml", run)
    proc = tunesmith("run", str(cfg), "--no-progress", "--executor", "dask-local")
    wait_for_lines(run / "candidates.jsonl", 2, proc)  # the workers are up and evaluating
    seconds, err = _stop(proc, "group", signal.SIGINT)
    assert seconds < EXIT_LIMIT_S + 10, f"still running {seconds:.0f} s later; stderr: {err}"  # +10: closing Dask
    assert proc.returncode == 130, (proc.returncode, err)
    assert f"to continue: tunesmith resume {run}" in err, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err


HANGING_EXIT_HANDLER = """
import atexit, time
from generator.interrupts import exit_now

atexit.register(lambda: time.sleep(60))  # as Dask's clean-up waits on a cluster whose close was cut short
print("ready", flush=True)
exit_now(130)
"""


def test_exit_handlers_that_hang_do_not_keep_a_stopped_command():
    """After a second Ctrl-C had cut Dask's cluster close short, its exit handler waited 10 s more: the exit
    handlers of a stop get GRACE_S on the main thread too, as they had on the watchdog's."""
    from support.fault_fixtures import ROOT

    proc = subprocess.Popen(
        [sys.executable, "-c", HANGING_EXIT_HANDLER],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdout.readline() == "ready\n"
    seconds, _ = _stop_wait(proc)
    assert seconds < EXIT_LIMIT_S, f"still running {seconds:.0f} s after exit_now"
    assert proc.returncode == 130
