"""`tunesmith bench` never loses a benchmark (issue 26) and cleans up after itself (issue 24, items 5, 6, 10).

A strategy that crashes on a task is recorded as failed there and the others go on; the JSON is
written as strategies finish and at the end, Ctrl-C included; an unwritable --json is refused
before anything runs; Kernel Tuner's cache copies do not outlive the command; a task has the same
name in the table, the JSON and the rest of Tunesmith; mistyped flags are errors.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

import generator.bench.command as bench_module
from generator.bench import kt_simulation
from generator.bench.command import bench
from generator.bench.runner import parse_strategy
from generator.cli import _build_parser, main

# Crashes on the dedispersion spaces only: the bench goes on with the other tasks and strategies.
CRASHES_ON_DEDISPERSION = textwrap.dedent("""
    class Fragile:
        def __init__(self, budget=5000):
            pass

        def __call__(self, func, searchspace):
            func(searchspace.get_random_sample(1)[0])
            if "loop_unroll_factor_channel" in searchspace.tune_params:  # a dedispersion parameter
                return {}["no such key"]
            for cfg in searchspace.get_random_sample(5):
                func(cfg)
""")

# Ends its worker process on the dedispersion spaces (out of memory, a segfault, os._exit).
DIES_ON_DEDISPERSION = CRASHES_ON_DEDISPERSION.replace('return {}["no such key"]', "import os; os._exit(3)")

PRESSES_CTRL_C = textwrap.dedent("""
    class CtrlC:
        def __init__(self, budget=5000):
            pass

        def __call__(self, func, searchspace):
            raise KeyboardInterrupt
""")


@pytest.fixture()
def own_tmp(tmp_path, monkeypatch):
    """Temporary files of this test go to a folder of its own (other processes share /tmp)."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture()
def two_tasks(hub_dir):
    """A convolution and a dedispersion space, both with small budgets."""
    return [
        str(hub_dir / "cachefiles" / "convolution_milo" / "MI250X.json.gz"),
        str(hub_dir / "cachefiles" / "dedispersion_milo" / "A4000.json.gz"),
    ]


def _bench(args, tmp_path, capsys):
    out = tmp_path / "bench.json"
    rc = main(["bench", *args, "--repeats", "2", "--no-progress", "--json", str(out)])
    printed = capsys.readouterr()
    return rc, printed.out, printed.err, (json.loads(out.read_text()) if out.exists() else None)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_crash_on_one_task_is_recorded_there_and_the_rest_goes_on(two_tasks, tmp_path, capsys, workers):
    fragile = tmp_path / "fragile.py"
    fragile.write_text(CRASHES_ON_DEDISPERSION)
    tasks = [a for t in two_tasks for a in ("--tasks", t)]
    rc, out, err, doc = _bench(
        [*tasks, "--strategies", f"random_sample,{fragile},greedy_ils", "--workers", workers], tmp_path, capsys
    )
    assert rc == 1 and str(fragile) in err  # the command says something failed
    entry = doc["results"][str(fragile)]
    assert entry["score"] is None and entry["failed"] == ["dedispersion_milo/A4000"]
    failure = entry["per_task"]["dedispersion_milo/A4000"]
    assert failure["score"] is None
    assert (
        "KeyError" in failure["failed"]
        and "fragile.py" in failure["failed"]
        and "fix the strategy" in failure["failed"]
    )
    assert isinstance(entry["per_task"]["convolution_milo/MI250X"]["score"], float)  # the task it finished
    for other in ("random_sample", "greedy_ils"):  # before and after it
        assert all(isinstance(t["score"], float) for t in doc["results"][other]["per_task"].values())
    assert doc["complete"] is True and doc["pending"] == []
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "bench.json").stat().st_mode & 0o777 == 0o666 & ~umask  # an ordinary file, not mkstemp's 0600
    row = next(line for line in out.splitlines() if line.startswith(str(fragile)))
    assert "failed" in row
    assert any("KeyError" in line and "dedispersion_milo/A4000" in line for line in out.splitlines())


def test_a_worker_that_dies_fails_its_strategy_only(two_tasks, tmp_path, capsys):
    dies = tmp_path / "dies.py"
    dies.write_text(DIES_ON_DEDISPERSION)
    tasks = [a for t in two_tasks for a in ("--tasks", t)]
    rc, out, err, doc = _bench([*tasks, "--strategies", f"{dies},random_sample", "--workers", "2"], tmp_path, capsys)
    assert rc == 1
    assert "worker process died" in doc["results"][str(dies)]["per_task"]["dedispersion_milo/A4000"]["failed"]
    assert all(isinstance(t["score"], float) for t in doc["results"]["random_sample"]["per_task"].values())


def test_ctrl_c_keeps_the_finished_strategies_and_the_cache_copies_go(two_tasks, tmp_path, capsys, own_tmp):
    ctrl_c = tmp_path / "ctrl_c.py"
    ctrl_c.write_text(PRESSES_CTRL_C)
    # diff_evo runs in Kernel Tuner's own simulation, which reads an uncompressed copy of the cache
    rc, out, err, doc = _bench(
        [
            "--tasks",
            two_tasks[0],
            "--strategies",
            f"diff_evo,{ctrl_c},random_sample",
            "--workers",
            "1",
            "--max-fevals",
            "20",
        ],
        tmp_path,
        capsys,
    )
    assert rc == 130 and "interrupted" in err.lower()
    assert list(doc["results"]) == ["diff_evo"] and doc["complete"] is False
    assert doc["pending"] == [str(ctrl_c), "random_sample"]
    assert "diff_evo" in out  # the table of what finished
    assert list(own_tmp.iterdir()) == []  # no tunesmith-cache-*.json left behind
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".bench.json")] == []  # no half-written JSON


@pytest.mark.parametrize("workers", [1, 2])
def test_kernel_tuner_cache_copies_are_removed_after_a_bench(two_tasks, own_tmp, workers):
    from generator.tasks.entries import load_tasks

    made = []
    original = kt_simulation._plain_cache

    def spy(task):
        made.append(original(task))
        return made[-1]

    kt_simulation._plain_cache, restore = spy, original
    try:
        results = bench(
            load_tasks(two_tasks),
            [parse_strategy("diff_evo")],
            repeats=2,
            workers=workers,
            progress=False,
            max_fevals=15,
        )
    finally:
        kt_simulation._plain_cache = restore
    assert not results[0].failed
    if workers == 1:  # the pool's workers made theirs in their own processes
        assert made and all(str(own_tmp) in path for path in made)
    assert list(own_tmp.iterdir()) == []


def test_unwritable_json_is_refused_before_the_benchmark_runs(two_tasks, tmp_path, capsys, monkeypatch):
    def must_not_run(*args, **kwargs):
        raise AssertionError("the benchmark ran")

    monkeypatch.setattr(bench_module, "bench", must_not_run)
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    for target, says in (
        (tmp_path / "missing" / "out.json", "does not exist"),
        (a_file / "out.json", "does not exist"),
        (tmp_path, "is a folder"),
    ):
        rc = main(
            [
                "bench",
                "--tasks",
                two_tasks[0],
                "--strategies",
                "random_sample",
                "--repeats",
                "1",
                "--no-progress",
                "--json",
                str(target),
            ]
        )
        err = capsys.readouterr().err.strip()
        assert rc == 2 and err.startswith("tunesmith: error: --json") and says in err and "\n" not in err, err
        assert str(target) in err


def test_table_and_json_name_tasks_as_campaigns_and_stats_do(two_tasks, tmp_path, capsys):
    from generator.tasks.entries import load_tasks

    names = [t.name for t in load_tasks(two_tasks)]
    assert names == ["convolution_milo/MI250X", "dedispersion_milo/A4000"]
    tasks = [a for t in two_tasks for a in ("--tasks", t)]
    rc, out, _, doc = _bench([*tasks, "--strategies", "random_sample", "--workers", "1"], tmp_path, capsys)
    assert rc == 0
    header = out.splitlines()[0].split()
    assert header[1:3] == names == list(doc["results"]["random_sample"]["per_task"]) == doc["tasks"]


def test_bench_task_filter(hub_dir, tmp_path, capsys):
    rc, out, _, doc = _bench(
        [
            "--tasks",
            str(hub_dir),
            "--task",
            "MI250X",
            "--task",
            "dedispersion_milo/A100",
            "--strategies",
            "random_sample",
            "--workers",
            "1",
        ],
        tmp_path,
        capsys,
    )
    assert rc == 0 and doc["tasks"] == ["convolution_milo/MI250X", "dedispersion_milo/A100", "dedispersion_milo/MI250X"]
    rc = main(["bench", "--tasks", str(hub_dir), "--task", "gauss", "--strategies", "random_sample"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.startswith("tunesmith: error: --task gauss: no task name matches") and "\n" not in err


@pytest.mark.parametrize(
    "argv, says",
    [
        (["bench", "--task", "x", "--strategies", "random_sample"], "required: --tasks"),  # --task once meant --tasks
        (["bench", "--tasks", "x", "--strat", "random_sample"], "required: --strategies"),
        (["bench", "--tasks", "x", "--strategies", "random_sample", "--rep", "2"], "unrecognized arguments: --rep"),
        (["evaluate", "x.py", "--tasks", "x", "--repeat", "2"], "unrecognized arguments: --repeat"),
        (["cache", "build", "problem.toml", "--samp", "3"], "unrecognized arguments: --samp"),
    ],
)
def test_abbreviated_flags_are_errors(argv, says, capsys):
    with pytest.raises(SystemExit) as stop:
        _build_parser().parse_args(argv)
    assert stop.value.code == 2 and says in capsys.readouterr().err


def test_bench_task_is_the_filter_not_tasks():
    args = _build_parser().parse_args(["bench", "--tasks", "DIR", "--task", "gauss", "--strategies", "pso"])
    assert args.tasks == ["DIR"] and args.only == ["gauss"]


def test_no_parser_takes_abbreviations():
    import argparse

    seen, todo = [], [_build_parser()]
    while todo:
        parser = todo.pop()
        seen.append(parser)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo.extend(action.choices.values())
    assert len(seen) > 15  # the main parser, every subcommand and their own subcommands (cache build, llm ...)
    assert [p.prog for p in seen if p.allow_abbrev] == []


def test_generalisation_table_survives_a_strategy_that_fails_on_a_test_task(two_tasks, tmp_path):
    from generator.bench.generalisation import compare, label_of, markdown
    from generator.tasks.entries import load_tasks

    fragile = tmp_path / "fragile.py"
    fragile.write_text(CRASHES_ON_DEDISPERSION)
    train, test = load_tasks(two_tasks)
    table = compare([train], [test], [str(fragile), "random_sample"], repeats=2, workers=1, progress=False)
    rows = {row.label: row for row in table.rows}
    assert isinstance(rows[label_of(str(fragile))].train, float) and rows[label_of(str(fragile))].test is None
    assert rows["random_sample"].test is not None and label_of(str(fragile)) in markdown(table)


def test_a_scoring_failure_is_recorded_for_that_task(two_tasks, monkeypatch):
    from generator.tasks.entries import load_tasks

    tasks = load_tasks(two_tasks)
    real = bench_module.score_traces

    def score_traces(task, traces):
        if task.name.startswith("dedispersion"):
            raise ZeroDivisionError("division by zero")
        return real(task, traces)

    monkeypatch.setattr(bench_module, "score_traces", score_traces)
    (result,) = bench(tasks, [parse_strategy("random_sample")], repeats=1, workers=1, progress=False)
    assert list(result.per_task) == ["convolution_milo/MI250X"]
    assert "ZeroDivisionError" in result.failed["dedispersion_milo/A4000"] and result.score != result.score  # NaN


SLEEPS = textwrap.dedent("""
    import time

    class Sleeper:
        def __init__(self, budget=5000):
            pass

        def __call__(self, func, searchspace):
            func(searchspace.get_random_sample(1)[0])
            time.sleep(60)
""")


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_stops_the_workers_at_once(two_tasks, tmp_path, how):
    """Ctrl-C reaches every process of the terminal's group; `kill` only the command: both end it in seconds,
    with the finished strategies saved, not after the runs already queued to the workers (minutes)."""
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text(SLEEPS)
    out, scratch = tmp_path / "bench.json", tmp_path / "tmp"
    scratch.mkdir()
    command = [
        sys.executable,
        "-m",
        "generator.cli",
        "bench",
        "--tasks",
        two_tasks[0],
        "--strategies",
        f"diff_evo,{sleeper}",
        "--repeats",
        "6",
        "--workers",
        "2",
        "--max-fevals",
        "10",
        "--no-progress",
        "--json",
        str(out),
    ]
    bench_run = subprocess.Popen(
        command,
        env={**os.environ, "TMPDIR": str(scratch)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 240
        while not (out.exists() and "diff_evo" in json.loads(out.read_text())["results"]):
            assert bench_run.poll() is None and time.monotonic() < deadline, bench_run.communicate()
            time.sleep(0.5)
        time.sleep(2)  # the sleepers are running, more are queued
        sent = time.monotonic()
        if how == signal.SIGINT:
            os.killpg(bench_run.pid, how)
        else:
            bench_run.send_signal(how)
        stdout, stderr = bench_run.communicate(timeout=50)
    finally:
        if bench_run.poll() is None:
            os.killpg(bench_run.pid, signal.SIGKILL)
    assert time.monotonic() - sent < 45  # each queued sleeper alone takes 60 s
    assert bench_run.returncode == 128 + how and "Traceback" not in stderr, stderr
    doc = json.loads(out.read_text())
    assert list(doc["results"]) == ["diff_evo"] and doc["pending"] == [str(sleeper)]
    assert "diff_evo" in stdout and list(scratch.iterdir()) == []


def test_cache_copies_of_a_run_outside_bench_go_when_the_process_ends(two_tasks, tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    code = (
        "import os, sys; from generator.tasks.entries import load_tasks; "
        "from generator.bench.runner import parse_strategy, run_once; "
        f"run_once(load_tasks({two_tasks[0]!r})[0], parse_strategy('diff_evo'), 1); "
        "print(os.listdir(os.environ['TMPDIR']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "TMPDIR": str(scratch)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "tunesmith-caches-" in done.stdout  # it made its copy ...
    assert list(scratch.iterdir()) == []  # ... and removed it on the way out


def test_table_says_an_error_shared_by_several_tasks_once():
    from generator.bench.results import StrategyResult, table

    missing = "skopt could not run: it needs the Python module 'skopt', which is not installed; pip install x"
    result = StrategyResult(
        "skopt",
        float("nan"),
        {},
        0.1,
        {},
        {"a/A100": missing, "b/A100": missing, "c/A100": "strategy skopt crashed on c/A100: boom"},
    )
    lines = table([result]).splitlines()
    assert lines[1].split() == ["skopt", "failed", "failed", "failed", "failed", "0.1"]
    assert lines[2:] == [f"{missing} (on 2 tasks)", "strategy skopt crashed on c/A100: boom"]
