"""evaluate_source / Fitness / static checks / `tunesmith evaluate`: candidate x tasks x repeats -> P."""

from __future__ import annotations

import json

import pytest
from support.paths import ROOT

from generator.candidate.checks import check_source, inspect_source
from generator.errors import TunesmithError
from generator.evaluation.evaluate import evaluate_source, plan_jobs
from generator.evaluation.executors import get_executor
from generator.scoring.fitness import CandidateError, Fitness, TaskFitness

RANDOM_WALK = ROOT / "tests" / "data" / "strategies" / "random_walk.py"

COUNTED = """
class Counted:
    hyperparameters = {"n": {"type": "int", "low": 1, "high": 50, "default": 4},
                       "mode": {"type": "categorical", "choices": ["a", "b"], "default": "a"}}

    def __init__(self, budget=5000, n=4, mode="a"):
        self.n = n

    def __call__(self, func, searchspace):
        for cfg in searchspace.get_random_sample(self.n):
            func(cfg)
"""


# ------------------------------------------------------------------------- static checks


@pytest.mark.parametrize(
    "source, kind, words, lineno",
    [
        ("class A:\n    def __call__(self, func, searchspace)\n        pass\n", "syntax", "SyntaxError", 2),
        ("def f():\n    pass\n", "interface", "no top-level class", None),
        (
            "class A:\n    def __call__(self, f, s): pass\nclass B:\n    def __call__(self, f, s): pass\n",
            "interface",
            "2 classes",
            3,
        ),
        ("class A:\n    def __call__(self, func): pass\n", "interface", "(self, func, searchspace)", 2),
        (
            "class A:\n    def __init__(self, budget): pass\n    def __call__(self, f, s): pass\n",
            "interface",
            "no default",
            2,
        ),
        (
            "class A:\n    hyperparameters = {'x': {'type': 'int', 'low': 5, 'high': 1, 'default': 2}}\n"
            "    def __init__(self, x=2): pass\n    def __call__(self, f, s): pass\n",
            "interface",
            "low (5)",
            2,
        ),
        (
            "class A:\n    hyperparameters = {'x': {'type': 'float', 'low': 0, 'high': 1, 'default': 3}}\n"
            "    def __call__(self, f, s): pass\n",
            "interface",
            "outside",
            2,
        ),
        (
            "class A:\n    hyperparameters = {'x': {'type': 'log', 'low': 0, 'high': 1, 'default': 0.5}}\n"
            "    def __call__(self, f, s): pass\n",
            "interface",
            "low > 0",
            2,
        ),
        (
            "class A:\n    hyperparameters = {'x': {'type': 'categorical', 'choices': ['a'], 'default': 'b'}}\n"
            "    def __call__(self, f, s): pass\n",
            "interface",
            "not one of its choices",
            2,
        ),
        (
            "class A:\n    hyperparameters = {'x': {'type': 'integer', 'low': 0, 'high': 1, 'default': 0}}\n"
            "    def __call__(self, f, s): pass\n",
            "interface",
            "use one of",
            2,
        ),
        (
            "class A:\n    hyperparameters = {'x': {'type': 'int', 'low': 0, 'high': 9}}\n"
            "    def __call__(self, f, s): pass\n",
            "interface",
            "no 'default'",
            2,
        ),
        (
            "N = 3\nclass A:\n    hyperparameters = {'x': {'type': 'int', 'low': 0, 'high': N, 'default': 1}}\n"
            "    def __call__(self, f, s): pass\n",
            "interface",
            "literal dict",
            3,
        ),
        (
            "class A:\n    hyperparameters = {'x': {'type': 'int', 'low': 0, 'high': 9, 'default': 1}}\n"
            "    def __init__(self, budget=5000): pass\n    def __call__(self, f, s): pass\n",
            "interface",
            "does not accept",
            3,
        ),
    ],
)
def test_static_checks_name_the_problem_and_line(source, kind, words, lineno):
    err = check_source(source)
    assert isinstance(err, CandidateError)
    assert err.kind == kind and words in err.message, err
    assert err.lineno == lineno
    if lineno:
        assert err.line == source.splitlines()[lineno - 1].strip()


def test_static_checks_accept_the_interface():
    assert check_source(COUNTED) is None
    assert check_source(RANDOM_WALK.read_text()) is None
    iface = inspect_source(COUNTED)
    assert iface.class_name == "Counted" and iface.defaults() == {"n": 4, "mode": "a"}
    # helper classes without __call__ and a KT-style __call__ with extra defaults are fine
    src = "class H:\n    pass\nclass A:\n    def __call__(self, func, searchspace, verbose=False):\n        pass\n"
    assert check_source(src) is None


def test_static_failure_does_not_run_anything(conv_task):
    fit = evaluate_source("class A:\n  def f(:\n", [conv_task], repeats=1)
    assert fit.error.kind == "syntax" and fit.score is None and fit.per_task == {}


# ------------------------------------------------------------------------- Fitness


def test_fitness_json_round_trip():
    fit = Fitness(
        0.25,
        {"app/GPU": TaskFitness(0.25, 0.1, 120.5, 100.0, (0.2, 0.3), 1.5)},
        3.2,
        None,
        {"seed": 1, "protections": {"held": {"namespaces": True}, "notes": []}},
    )
    back = Fitness.from_dict(json.loads(json.dumps(fit.to_dict())))
    assert back == fit
    err = Fitness(None, {}, 0.1, CandidateError("timeout", "too slow", "tb", "x = 1", 3, "app/GPU", 0), {})
    back = Fitness.from_dict(json.loads(json.dumps(err.to_dict())))
    assert back == err and not back.ok and str(back.error) == "timeout: too slow (line 3: x = 1)"
    with pytest.raises(ValueError):
        CandidateError("weird", "x")


# ------------------------------------------------------------------------- evaluation


def test_evaluate_scores_like_bench(conv_task):
    """The sandboxed score of an honest file equals `bench`'s in-process score (same seeds)."""
    from generator.bench.command import bench
    from generator.bench.runner import parse_strategy

    fit = evaluate_source(RANDOM_WALK.read_text(), [conv_task], repeats=3, seed=5)
    assert fit.ok, fit.error
    [result] = bench([conv_task], [parse_strategy(str(RANDOM_WALK))], repeats=3, seed=5, workers=1, progress=False)
    assert fit.score == pytest.approx(result.score, abs=1e-12)
    assert fit.per_task[conv_task.name].unique == pytest.approx(result.unique_evals[conv_task.name])


def test_deterministic_and_independent_of_workers(hub_tasks):
    tasks = [t for t in hub_tasks if t.name in ("convolution_milo/A100", "dedispersion_milo/A4000")]
    one = evaluate_source(RANDOM_WALK.read_text(), tasks, repeats=2, seed=3, workers=1)
    two = evaluate_source(RANDOM_WALK.read_text(), tasks, repeats=2, seed=3, workers=2)
    assert one.ok and two.ok
    assert one.score == two.score
    assert {k: v.per_repeat for k, v in one.per_task.items()} == {k: v.per_repeat for k, v in two.per_task.items()}
    assert two.metadata["workers"] == 2
    assert set(one.per_task) == {t.name for t in tasks}


def test_hyperparameters_reach_the_constructor(conv_task):
    fit = evaluate_source(COUNTED, [conv_task], repeats=2, hyperparameters={"n": 7})
    assert fit.ok and fit.per_task[conv_task.name].fevals == 7
    assert fit.metadata["hyperparameters"] == {"n": 7, "mode": "a"}
    with pytest.raises(TunesmithError, match="not declared"):
        evaluate_source(COUNTED, [conv_task], repeats=1, hyperparameters={"m": 1})


def test_plan_jobs_cuts_runs_into_contiguous_chunks():
    runs = [(t, r, 0) for t in range(2) for r in range(3)]
    assert plan_jobs(runs, 1) == [runs]
    sizes = [len(c) for c in plan_jobs(runs, 4)]
    assert len(sizes) == 4 and max(sizes) - min(sizes) <= 1
    assert sum(plan_jobs(runs, 10), []) == runs


def test_executor_by_url():
    with get_executor(None, 2) as ex:
        assert ex.submit(sum, [1, 2]).result() == 3
    with pytest.raises(TunesmithError, match="unknown kind"):
        get_executor("carrier-pigeon://x", 1)


# ------------------------------------------------------------------------- CLI


def test_cli_evaluate_writes_bench_shaped_json(tmp_path, hub_dir, capsys):
    from generator.cli import main

    out = tmp_path / "out.json"
    conv = str(hub_dir / "cachefiles" / "convolution_milo" / "A100.json.gz")  # one hub task, its T1 applied
    rc = main(
        [
            "evaluate",
            str(RANDOM_WALK),
            "--tasks",
            conv,
            "--task",
            "convolution_milo/A100",
            "--repeats",
            "2",
            "--json",
            str(out),
        ]
    )
    assert rc == 0
    doc = json.loads(out.read_text())
    entry = doc["results"][str(RANDOM_WALK)]
    assert set(entry) >= {"score", "per_task", "wall_s"} and "error" not in doc
    assert set(entry["per_task"]["convolution_milo/A100"]) >= {"score", "std"}
    assert "mean P" in capsys.readouterr().out

    bad = tmp_path / "bad.py"
    bad.write_text("class A:\n    def __call__(self, func, searchspace):\n        raise KeyError('nope')\n")
    rc = main(["evaluate", str(bad), "--tasks", conv, "--repeats", "1", "--json", str(out)])
    assert rc == 1
    doc = json.loads(out.read_text())
    assert doc["error"]["kind"] == "exception" and doc["error"]["lineno"] == 3
    assert doc["results"][str(bad)]["score"] is None
    assert "FAILED (exception)" in capsys.readouterr().out


def test_cli_evaluate_user_errors(tmp_path, hub_dir, capsys):
    from generator.cli import main

    conv = str(hub_dir / "cachefiles" / "convolution_milo" / "A100.json.gz")
    assert main(["evaluate", str(tmp_path / "missing.py"), "--tasks", conv]) == 2
    assert "cannot read the optimizer file" in capsys.readouterr().err
    assert main(["evaluate", str(RANDOM_WALK), "--tasks", conv, "--task", "no-such-task"]) == 2
    assert "no task name matches" in capsys.readouterr().err
    assert main(["evaluate", str(RANDOM_WALK), "--tasks", conv, "--hp", "oops"]) == 2
    assert "NAME=VALUE" in capsys.readouterr().err


def test_weak_walls_are_named():
    from generator.evaluation.evaluate import weak_walls

    assert weak_walls({}) == []
    main = [
        "network_namespace",
        "mount_namespace",
        "allowlist_root",
        "hidden_paths",
        "private_proc",
        "unprivileged_user",
        "shared_files_in_ram",
    ]
    assert weak_walls(dict.fromkeys(main, True)) == []
    assert weak_walls({"network_namespace": False, "rlimit_cpu": True}) == main
    # a root that fell back to covering paths is named, even though the covered paths held
    assert weak_walls({**dict.fromkeys(main, True), "allowlist_root": False}) == ["allowlist_root"]


# ------------------------------------------------------------------------- literals (issue 39)

HUGE_DEFAULT = """
class Huge:
    hyperparameters = {"width": {"type": "int", "low": 1, "high": %s, "default": %s}}

    def __init__(self, budget=None, width=%s):
        self.width = width

    def __call__(self, func, searchspace):
        for cfg in searchspace.get_random_sample(5):
            func(cfg)
"""
BYTES_CHOICES = HUGE_DEFAULT.replace(
    '"type": "int", "low": 1, "high": %s, "default": %s',
    '"type": "categorical", "choices": [b"a", b"b"], "default": b"a"',
).replace("%s", 'b"a"')


@pytest.mark.parametrize(
    "source", [HUGE_DEFAULT % (("0x" + "f" * 3700,) * 3), BYTES_CHOICES], ids=["3700-digit default", "bytes choices"]
)
def test_cli_evaluate_json_refuses_hyperparameters_that_are_not_json_scalars(source, tmp_path, hub_dir, capsys):
    """Issue 39: these passed the static checks, then `evaluate --json` crashed on JSON encoding after the
    table. A hyperparameter value is a bounded JSON scalar; anything else is the candidate's failure."""
    from generator.cli import main

    conv = str(hub_dir / "cachefiles" / "convolution_milo" / "A100.json.gz")
    cand, out = tmp_path / "cand.py", tmp_path / "out.json"
    cand.write_text(source)
    rc = main(
        [
            "evaluate",
            str(cand),
            "--tasks",
            conv,
            "--task",
            "convolution_milo/A100",
            "--repeats",
            "1",
            "--json",
            str(out),
        ]
    )
    assert rc == 1
    doc = json.loads(out.read_text())
    assert doc["error"]["kind"] == "interface" and "hyperparameter 'width'" in doc["error"]["message"]
    assert "\n" not in doc["error"]["message"] and len(doc["error"]["message"]) < 200
    assert "FAILED (interface)" in capsys.readouterr().out
