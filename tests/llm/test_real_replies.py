"""The real-reply corpus (tests/data/real_replies/): each entry does what its sidecar says.

Entries are optimizers and whole LLM replies as generators really write them (README there). For
each: the extractor finds the code (or says there is none, or that it was truncated); the sandbox
(`tunesmith evaluate`) runs it unchanged and scores it in the stated range or fails with the stated
error kind; `tunesmith bench` gives the same P in-process; and its exported module runs in plain
Kernel Tuner (as `strategy=` and through OptAlgWrapper) and without Kernel Tuner. Shipped caches,
two repeats: fast enough for CI on two cores.
"""

from __future__ import annotations

import sys
import tomllib
import warnings
from pathlib import Path
from unittest import mock

import pytest
from support.paths import TEST_DATA

from generator.candidate.checks import inspect_source
from generator.llm.prompts import extract_reply
from generator.scoring.fitness import CandidateError

CORPUS = TEST_DATA / "real_replies"
FILES = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".py", ".txt"))
ENTRIES = [p for p in FILES if p.with_suffix(".toml").exists()]
IDS = [str(p.relative_to(CORPUS)) for p in ENTRIES]
_FITNESS: dict = {}  # entry -> Fitness of its [run], shared by the run and bench tests


def _spec(path: Path) -> dict:
    return tomllib.loads(path.with_suffix(".toml").read_text())


def _tasks(names: list[str]):
    from generator.config import TasksConfig
    from generator.tasks.entries import load_task_set

    return load_task_set(list(names), TasksConfig(train=list(names)))


def _code(path: Path, spec: dict) -> str:
    reply = extract_reply(path.read_text(), spec.get("extract", {}).get("finish_reason"))
    assert reply.code is not None, f"{path.name}: no code extracted"
    return reply.code


def test_every_corpus_file_has_a_sidecar():
    assert not [p for p in FILES if not p.with_suffix(".toml").exists()], "write a .toml sidecar for each"
    assert len([p for p in ENTRIES if p.parent.name == "llamea"]) >= 5
    assert len([p for p in ENTRIES if p.parent.name == "local_model"]) >= 6


@pytest.mark.parametrize("path", ENTRIES, ids=IDS)
def test_sidecar_says_where_the_entry_comes_from(path):
    spec = _spec(path)
    assert spec.get("origin") and spec.get("written_by") in ("llm", "engineer"), path.name
    head = path.read_text()[:1500]
    if path.suffix == ".py" and spec["written_by"] == "engineer":
        assert "NOT written by an LLM" in head, f"{path.name}: say in the file that no LLM wrote it"
    if path.suffix == ".py" and "Kernel Tuner" in spec["origin"]:
        assert "Apache License" in head and "kernel_tuner/strategies/" in head, f"{path.name}: cite source and licence"


@pytest.mark.parametrize("path", ENTRIES, ids=IDS)
def test_extraction(path):
    spec = _spec(path).get("extract", {})
    text = path.read_text()
    reply = extract_reply(text, spec.get("finish_reason"))
    if not spec.get("code", True):
        assert reply.code is None
        return
    assert reply.code is not None
    assert reply.truncated == spec.get("truncated", False)
    if path.suffix == ".py":  # a bare file is its own reply: nothing may be lost or added
        assert reply.code.strip() == text.replace("\r\n", "\n").strip()
    if "description" in spec:
        assert reply.description == spec["description"]
    found = inspect_source(reply.code)
    if "class_name" in spec:
        assert not isinstance(found, CandidateError), found
        assert found.class_name == spec["class_name"]


def _run(path: Path):
    """Fitness of an entry's [run] in the sandbox (once per entry)."""
    from generator.evaluation.evaluate import evaluate_file, evaluate_source
    from generator.sandbox.jobs import SandboxConfig

    if path not in _FITNESS:
        spec = _spec(path)
        run = spec["run"]
        tasks = _tasks(run["tasks"])
        if path.suffix == ".py":  # exactly what `tunesmith evaluate FILE` does with the file
            with mock.patch("generator.evaluation.evaluate.load_task_paths", lambda paths, only=None: tasks):
                _, fit = evaluate_file(
                    str(path),
                    [],
                    repeats=run.get("repeats", 2),
                    seed=run.get("seed", 0),
                    timeout_s=run.get("timeout_s", 60),
                )
        else:
            fit = evaluate_source(
                _code(path, spec),
                tasks,
                repeats=run.get("repeats", 2),
                seed=run.get("seed", 0),
                config=SandboxConfig(timeout_s=run.get("timeout_s", 60), startup_s=180),
            )
        _FITNESS[path] = fit
    return _FITNESS[path]


RUNS = [p for p in ENTRIES if "run" in _spec(p)]


@pytest.mark.parametrize("path", RUNS, ids=[str(p.relative_to(CORPUS)) for p in RUNS])
def test_evaluate_in_the_sandbox(path):
    run = _spec(path)["run"]
    fit = _run(path)
    expect = run.get("expect", "ok")
    if expect == "ok":
        assert fit.error is None, f"{path.name}: {fit.error}"
        low, high = run["score"]
        assert low <= fit.score <= high, f"{path.name}: P = {fit.score:.3f} outside [{low}, {high}]"
    else:
        assert fit.error is not None and fit.error.kind == expect, f"{path.name}: {fit.error}"
        assert run.get("message", "") in fit.error.message, fit.error.message
        if _spec(path).get("extract", {}).get("truncated") and expect in ("syntax", "interface"):
            from generator.llm.reply_code import truncation_error  # what the campaign shows the fix operator

            assert truncation_error(fit.error.to_dict())["message"].startswith("the reply was truncated")


BENCH = [p for p in RUNS if _spec(p)["run"].get("bench")]


@pytest.mark.parametrize("path", BENCH, ids=[str(p.relative_to(CORPUS)) for p in BENCH])
def test_bench_gives_the_same_score(path, tmp_path):
    from generator.bench.command import bench
    from generator.bench.runner import parse_strategy

    run = _spec(path)["run"]
    fit = _run(path)
    file = path
    if path.suffix != ".py":
        file = tmp_path / "reply.py"
        file.write_text(_code(path, _spec(path)))
    [result] = bench(
        _tasks(run["tasks"]),
        [parse_strategy(str(file))],
        repeats=run.get("repeats", 2),
        seed=run.get("seed", 0),
        workers=1,
        progress=False,
    )
    for name, tf in fit.per_task.items():
        assert result.per_task[name].score == pytest.approx(tf.score, abs=1e-12), name


EXPORTS = [p for p in ENTRIES if "export" in _spec(p)]


def _exported(path: Path, tmp_path: Path):
    from generator.export.exporter import write_module
    from generator.export.module_text import Provenance, module_source

    name = "corpus_" + path.stem.replace("-", "_").lower()
    text = module_source(name, _code(path, _spec(path)), Provenance("corpus", path.stem, [], "test"))
    return write_module(name, text, tmp_path / "pkg"), text


@pytest.mark.parametrize("path", EXPORTS, ids=[str(p.relative_to(CORPUS)) for p in EXPORTS])
def test_export_runs_in_plain_kernel_tuner(path, tmp_path):
    import importlib.util

    from kernel_tuner.strategies.wrapper import OptAlgWrapper

    from generator.bench.kt_simulation import run_kernel_tuner
    from generator.scoring.score import Budget, budget_for

    spec = _spec(path)
    ways = spec["export"].get("kernel_tuner", [])
    if not ways:
        pytest.skip("no Kernel Tuner run asked for")
    file, _ = _exported(path, tmp_path)
    mod_spec = importlib.util.spec_from_file_location(file.stem, file)
    module = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(module)
    task = _tasks(spec["run"]["tasks"][:1])[0]
    budget = Budget(budget_for(task).seconds, 40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for way in ways:  # "tune": the module as strategy=; "OptAlgWrapper": Kernel Tuner's own wrapper
            strategy = module if way == "tune" else OptAlgWrapper(module.OPTIMIZER())
            trace = run_kernel_tuner(task, strategy, {}, seed=1, budget=budget)
            assert 10 <= trace.rows.size <= 40, f"{path.name} via {way}: {trace.rows.size} evaluations"


@pytest.mark.parametrize("path", EXPORTS, ids=[str(p.relative_to(CORPUS)) for p in EXPORTS])
def test_export_runs_without_kernel_tuner(path, tmp_path):
    from generator.bench.runner import run_optimizer
    from generator.scoring.score import Budget, budget_for
    from generator.tasks.space import SearchSpace

    spec = _spec(path)
    if not spec["export"].get("without_kernel_tuner"):
        pytest.skip("not asked for")
    _, text = _exported(path, tmp_path)
    gone = {
        m: None
        for m in ("kernel_tuner", "kernel_tuner.util", "kernel_tuner.strategies", "kernel_tuner.strategies.wrapper")
    }
    namespace = {"__name__": "exported_without_kt"}
    with mock.patch.dict(sys.modules, gone):
        exec(compile(text, "exported.py", "exec"), namespace)
    assert namespace["OptAlg"].__module__ == "exported_without_kt"  # its own, not Kernel Tuner's
    task = _tasks(spec["run"]["tasks"][:1])[0]
    trace = run_optimizer(
        task, namespace["OPTIMIZER"], {}, 1, Budget(budget_for(task).seconds, 30), SearchSpace(task.space)
    )
    assert trace.rows.size == 30
