"""The sandbox: transparent for honest code (same trace as in-process), walls up, oracle semantics."""

from __future__ import annotations

import os
import sys

import pytest
from support.paths import ROOT

from generator.evaluation.runs import run_seed
from generator.sandbox.jobs import Job, SandboxConfig, child_env, default_hidden_paths, interpreter_paths
from generator.sandbox.pool import run_job
from generator.scoring.score import budget_for

WALK = """
import random
from kernel_tuner.util import StopCriterionReached


class Walk:
    def __init__(self, budget=5000, restart=0.1):
        self.restart = restart

    def __call__(self, func, searchspace):
        cfg = searchspace.get_random_sample(1)[0]
        best = func(cfg)
        try:
            while True:
                nbrs = searchspace.get_neighbors(cfg, neighbor_method="Hamming")
                if not nbrs or random.random() < self.restart:
                    cfg = searchspace.get_random_sample(1)[0]
                    continue
                cand = random.choice(nbrs)
                value = func(cand)
                if value <= best:
                    cfg, best = cand, value
        except StopCriterionReached:
            return cfg, best
"""

CONFIG = SandboxConfig(timeout_s=20.0, startup_s=120)


def _job(task, source, repeats=2, class_name="Walk", kwargs=None, config=CONFIG):
    runs = [(0, r, run_seed(0, r)) for r in range(repeats)]
    return Job(source, class_name, kwargs or {}, [task], [budget_for(task)], runs, config)


def test_trace_matches_in_process_runner(conv_task):
    """Honest code gets exactly the trace it would get in-process (bench's runner, same seeds)."""
    from generator.bench.runner import run_optimizer
    from generator.tasks.space import SearchSpace

    outcome = run_job(_job(conv_task, WALK))
    assert outcome.error is None, outcome.error
    namespace: dict = {}
    exec(compile(WALK, "walk", "exec"), namespace)
    for run in outcome.runs:
        expected = run_optimizer(
            conv_task,
            namespace["Walk"],
            {},
            run_seed(0, run.repeat),
            budget_for(conv_task),
            SearchSpace(conv_task.space),
        )
        assert run.trace.rows.tolist() == expected.rows.tolist()
        assert run.trace.fevals == expected.fevals
    assert outcome.runs[0].trace.rows.tolist() != outcome.runs[1].trace.rows.tolist()


def test_walls_hold(conv_task):
    """As root (sessions and CI) every wall goes up; elsewhere at least the limits do."""
    src = "class Noop:\n    def __call__(self, func, searchspace):\n        func(searchspace.get_random_sample(1)[0])\n"
    outcome = run_job(_job(conv_task, src, repeats=1, class_name="Noop"))
    assert outcome.error is None, outcome.error
    held = outcome.runs[0].protections["held"]
    for wall in ("rlimit_cpu", "rlimit_as", "rlimit_nproc", "rlimit_fsize", "no_new_privs"):
        assert held[wall], wall
    if os.geteuid() == 0:
        for wall in (
            "namespaces",
            "network_namespace",
            "mount_namespace",
            "hidden_paths",
            "private_tmp",
            "private_proc",
            "unprivileged_user",
            "capabilities_dropped",
            "shared_files_in_ram",
        ):
            assert held[wall], (wall, outcome.runs[0].protections)


def test_without_isolation_limits_still_hold(conv_task):
    """isolate=False (what a machine without namespaces gets): timeouts and scoring still work."""
    loop = "class Loop:\n    def __call__(self, func, searchspace):\n        while True:\n            pass\n"
    config = SandboxConfig(timeout_s=1.0, startup_s=120, isolate=False)
    outcome = run_job(_job(conv_task, loop, repeats=1, class_name="Loop", config=config))
    assert outcome.error is not None and outcome.error.kind == "timeout"
    outcome = run_job(_job(conv_task, WALK, repeats=1, config=SandboxConfig(isolate=False, startup_s=120)))
    assert outcome.error is None and outcome.runs[0].trace.rows.size > 10
    assert outcome.runs[0].protections["held"]["namespaces"] is False


def test_oracle_semantics_seen_by_the_candidate(conv_task):
    """Invalid configurations cost float max and nothing else; the budget fraction grows; stop ends the run."""
    src = """
import sys


class Probe:
    def __call__(self, func, searchspace):
        bad = tuple(v[0] for v in searchspace.tune_params.values())
        if searchspace.is_param_config_valid(bad):
            bad = tuple(-1 for _ in searchspace.tune_params)
        if func(bad) != sys.float_info.max or func.budget_spent_fraction != 0.0:
            raise AssertionError("an invalid configuration must cost float max and no budget")
        last = 0.0
        while func.budget_spent_fraction < 0.5:
            func(searchspace.get_random_sample(1)[0])
            if func.budget_spent_fraction < last:
                raise AssertionError("budget_spent_fraction went down")
            last = func.budget_spent_fraction
        try:
            while True:
                func(searchspace.get_random_sample(1)[0])
        except StopCriterionReached:  # the name the sandbox provides without an import
            pass
        if func.budget_spent_fraction < 1.0:
            raise AssertionError("stopped before the budget was spent")
        for _ in range(3):
            try:
                func(searchspace.get_random_sample(1)[0])
                raise AssertionError("a call after the stop must raise again")
            except StopCriterionReached:
                pass
"""
    outcome = run_job(_job(conv_task, src, repeats=1, class_name="Probe"))
    assert outcome.error is None, outcome.error
    trace = outcome.runs[0].trace
    budget = budget_for(conv_task)
    assert trace.seconds.sum() > budget.seconds  # the evaluation that crossed the limit is recorded
    assert trace.seconds[:-1].sum() <= budget.seconds
    assert trace.fevals >= trace.rows.size + 1  # the invalid call counts as a call, not as an evaluation


def test_output_is_capped_and_errors_name_the_line(conv_task):
    src = """
class Loud:
    def __call__(self, func, searchspace):
        for i in range(3000):
            print("y" * 500)
        raise ValueError("bad idea")
"""
    outcome = run_job(_job(conv_task, src, repeats=1, class_name="Loud"))
    assert outcome.error.kind == "exception"
    assert outcome.error.message == "ValueError: bad idea"
    assert outcome.error.lineno == 6 and outcome.error.line == 'raise ValueError("bad idea")'
    assert "bytes cut" in outcome.output and len(outcome.output) < 70 * 1024


def test_constructor_failure_is_an_interface_error(conv_task):
    src = "class Picky:\n    def __init__(self, budget=5000):\n        pass\n    def __call__(self, func, searchspace):\n        pass\n"
    outcome = run_job(_job(conv_task, src, repeats=1, class_name="Picky", kwargs={"unknown": 1}))
    assert outcome.error.kind == "interface" and "unknown" in outcome.error.message


def test_environment_is_whitelisted(monkeypatch, conv_task):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-never-in-the-child")
    env = child_env("/nonexistent")
    assert "ANTHROPIC_API_KEY" not in env and all("sk-never" not in v for v in env.values())
    assert env["PYTHONHASHSEED"] == "0" and env["OPENBLAS_NUM_THREADS"] == "1"


def test_hidden_and_kept_paths(conv_task):
    """The tasks' folders and the project are hidden; the interpreter stays reachable."""
    hidden = default_hidden_paths([conv_task])
    assert str(conv_task.source.resolve().parent) in hidden
    keep = interpreter_paths()
    assert sys.prefix in keep
    assert not any(k.startswith(str(conv_task.source.resolve().parents[2])) for k in keep)


@pytest.mark.parametrize("n_runs", [3])
def test_each_run_starts_fresh(conv_task, n_runs):
    """A class attribute set in one run is not there in the next: every run is a new process."""
    src = """
class Fresh:
    runs = []

    def __call__(self, func, searchspace):
        if Fresh.runs:
            raise RuntimeError("state carried over")
        Fresh.runs.append(1)
        func(searchspace.get_random_sample(1)[0])
"""
    outcome = run_job(_job(conv_task, src, repeats=n_runs, class_name="Fresh"))
    assert outcome.error is None, outcome.error
    assert len(outcome.runs) == n_runs


NON_ROOT_SCRIPT = '''
import json, sys
from generator.evaluation.evaluate import evaluate_source
from generator.sandbox.jobs import SandboxConfig
from generator.tasks.entries import load_tasks

task = load_tasks(sys.argv[1] + "/cachefiles/convolution_milo/A100.json.gz")  # hub layout: T1 restrictions
peek = """
class Peek:
    def __call__(self, func, searchspace):
        import os, socket
        seen = []
        for path in (%r, %r):
            try:
                seen.append(len(open(path, "rb").read(1)) > 0)
            except OSError:
                seen.append(False)
        try:
            socket.create_connection(("8.8.8.8", 53), timeout=1)
            seen.append(True)
        except OSError:
            seen.append(False)
        raise RuntimeError(repr(seen))
""" % (str(task[0].source), sys.argv[2])
walk = open(sys.argv[2]).read()
out = {}
for name, src in (("walk", walk), ("peek", peek)):
    f = evaluate_source(src, task, repeats=1, seed=0, config=SandboxConfig(timeout_s=20, startup_s=120))
    out[name] = f.to_dict()
print("RESULT " + json.dumps(out))
'''


def _unreadable_ancestor(path: str):
    """The outermost directory above `path` that other users cannot enter (e.g. /root), and its child."""
    parts = os.path.realpath(path).split("/")[1:]
    for i in range(1, len(parts)):
        d = "/" + "/".join(parts[:i])
        if not os.stat(d).st_mode & 0o001:
            return d, d + "/" + parts[i]
    return None


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become another user for the test")
@pytest.mark.parametrize("python", ["this", "venv"])
def test_non_root_user_gets_walls_through_user_namespaces(conv_task, hub_dir, python):
    """Run an evaluation as user nobody: mount/PID/network walls come from a user namespace.

    With "venv" the evaluation runs under a venv's python: a symlink to this interpreter, which
    may lie in a directory nobody may enter (pyenv under /root)."""
    import shutil
    import tempfile
    from pathlib import Path

    from generator.sandbox.jobs import PROJECT_ROOT

    if not (shutil.which("unshare") and shutil.which("setpriv")):
        pytest.skip("needs util-linux unshare and setpriv")
    tmp_path = Path(tempfile.mkdtemp(prefix="tunesmith-nonroot-"))  # pytest's tmp_path is root-only
    os.chmod(tmp_path, 0o755)
    script = tmp_path / "nonroot.py"
    script.write_text(NON_ROOT_SCRIPT)
    try:
        exe = sys.executable
        if python == "venv":
            from support.nested_venv import make_nested_venv

            exe = str(make_nested_venv(tmp_path / "venv")[0])
        _check_non_root_run(conv_task, hub_dir, tmp_path, script, PROJECT_ROOT, exe)
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


def _check_non_root_run(conv_task, hub_dir, tmp_path, script, PROJECT_ROOT, exe):
    import json
    import subprocess

    walk = PROJECT_ROOT / "tests" / "data" / "strategies" / "random_walk.py"
    lines = ["set -e"]
    # Python may live under a directory nobody may enter (pyenv under /root), and a venv's python
    # may be a symlink into one (the venv's prefix is readable, its base interpreter is not): open
    # a path to each directory the interpreter needs, the base interpreter's included.
    needed = subprocess.run(
        [
            exe,
            "-c",
            "import json, os, sys; from generator.sandbox.jobs import interpreter_paths; "
            "print(json.dumps([os.path.realpath(sys.executable), *interpreter_paths()]))",
        ],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(PROJECT_ROOT)},
    )
    outers: dict = {}
    for path in json.loads(needed.stdout):
        hidden = _unreadable_ancestor(path)
        if hidden:
            outers.setdefault(hidden[0], set()).add(hidden[1])
    for n, (outer, inners) in enumerate(sorted(outers.items())):
        inners = sorted(inners)
        if not all(os.path.isdir(i) for i in inners):
            pytest.skip(f"the interpreter needs {inners} under {outer}, which user nobody cannot enter")
        lines += [f"mkdir -p {tmp_path}/py{n}_{i}" for i in range(len(inners))]
        lines += [f"mount --bind {inner} {tmp_path}/py{n}_{i}" for i, inner in enumerate(inners)]
        lines.append(f"mount -t tmpfs -o mode=0755 tmpfs {outer}")
        for i, inner in enumerate(inners):
            lines += [f"mkdir -p {inner}", f"mount --bind {tmp_path}/py{n}_{i} {inner}"]
    lines.append(
        f"exec setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH=/usr/bin:/bin HOME=/tmp "
        f"PYTHONPATH={PROJECT_ROOT} {exe} {script} {hub_dir} {walk}"
    )
    proc = subprocess.run(
        ["unshare", "-m", "sh", "-c", "\n".join(lines)], capture_output=True, text=True, timeout=300, cwd="/tmp"
    )
    found = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert found, proc.stdout[-2000:] + proc.stderr[-2000:]
    res = json.loads(found[0][7:])
    walk_fit = res["walk"]
    assert walk_fit["error"] is None, walk_fit["error"]
    held = walk_fit["metadata"]["protections"]["held"]
    assert held["namespaces"] and held["network_namespace"] and held["hidden_paths"] and held["private_proc"]
    assert held["capabilities_dropped"] and held["unprivileged_user"] is False
    assert held["shared_files_in_ram"], walk_fit["metadata"]["protections"]  # the host's own user namespace
    from generator.evaluation.evaluate import evaluate_source

    as_root = evaluate_source(walk.read_text(), [conv_task], repeats=1, seed=0)
    assert walk_fit["score"] == pytest.approx(as_root.score, abs=1e-12)
    # the cache file and this very project are hidden, the network is unreachable
    assert res["peek"]["error"]["message"] == "RuntimeError: [False, False, False]"


def test_hosts_are_pooled_and_a_killed_one_is_not_reused(conv_task):
    from generator.sandbox import pool as sandbox_pool

    sandbox_pool.close_pool()
    noop = (
        "class Noop:\n    def __call__(self, func, searchspace):\n        func(searchspace.get_random_sample(1)[0])\n"
    )
    assert run_job(_job(conv_task, noop, repeats=1, class_name="Noop")).error is None
    [host] = sandbox_pool._POOL
    pid = host.proc.pid
    assert run_job(_job(conv_task, WALK, repeats=2)).error is None  # another candidate, same host
    assert [h.proc.pid for h in sandbox_pool._POOL] == [pid]
    loop = "class Loop:\n    def __call__(self, func, searchspace):\n        while True:\n            pass\n"
    out = run_job(_job(conv_task, loop, repeats=1, class_name="Loop", config=SandboxConfig(timeout_s=1, startup_s=120)))
    assert out.error.kind == "timeout"
    assert sandbox_pool._POOL == []  # it was killed with the run
    bad = "class Bad:\n    def __call__(self, func, searchspace):\n        raise ValueError(1)\n"
    assert run_job(_job(conv_task, bad, repeats=3, class_name="Bad")).error.kind == "exception"
    assert len(sandbox_pool._POOL) == 1  # a failed candidate does not spoil its host
    assert run_job(_job(conv_task, WALK, repeats=1)).error is None


def test_runs_die_with_the_evaluating_process(hub_dir, tmp_path):
    """Kill the evaluating process mid-run: the host notices and takes the run's tree with it."""
    import signal
    import subprocess
    import time
    import uuid

    token = f"{7000 + uuid.uuid4().int % 999}.{uuid.uuid4().int % 1000:03d}"
    script = tmp_path / "evaluator.py"
    script.write_text(f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
from generator.evaluation.evaluate import evaluate_source
from generator.tasks.entries import load_tasks
task = load_tasks({str(hub_dir / "cachefiles" / "convolution_milo" / "A100.json.gz")!r})
src = ("import ctypes, sys\\nclass S:\\n    def __call__(self, func, searchspace):\\n"  # the run's root has no shell
       "        argv = (ctypes.c_char_p * 4)(sys.executable.encode(), b'-c', b'import time; time.sleep({token})', None)\\n"
       "        ctypes.CDLL(None).execv(argv[0], argv)\\n")
print("started", flush=True)
evaluate_source(src, task, repeats=1, timeout_s=120)
""")
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "started"
    deadline = time.monotonic() + 60
    while not _processes_with(token) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_with(token), "the candidate's sleep never started"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 15
    while _processes_with(token) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _processes_with(token)


def _processes_with(token: str) -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if token.encode() in fh.read():
                    found.append(pid)
        except OSError:
            continue
    return found
