"""Exported modules: tuned defaults edited in, provenance, and real Kernel Tuner / methodology runs."""

import gzip
import importlib.util
import json
import shutil
import warnings

import pytest

from generator.archive import Archive, Candidate
from generator.candidate.source import ExportError, check_imports, parse_optimizer, with_defaults
from generator.cli import main
from generator.export.exporter import export_run, generator_label
from generator.export.module_text import Provenance, module_source, valid_module_name
from generator.tuning.results import HpoResult, SplitScores, write_result

SOURCE = '''# tunesmith-synth: {"components": ["sample", "descent"]}
import random

import numpy as np


class SampledDescent:
    """Best of a random sample, then first-improvement descent; restarts until the budget ends."""

    hyperparameters = {
        "sample": {"type": "int", "low": 1, "high": 16, "default": 4},  # random start points
        "neighbor_method": {"type": "categorical", "choices": ["Hamming", "adjacent"], "default": "Hamming"},
        "p_jump": {"type": "float", "low": 0.001, "high": 0.5, "log": True, "default": 0.05},
    }
    last = None  # the instance Kernel Tuner built (lets the test see the options it got)

    def __init__(self, budget=5000, sample=4, neighbor_method="Hamming", *, p_jump=0.05):
        self.budget, self.sample, self.neighbor_method, self.p_jump = budget, sample, neighbor_method, p_jump
        SampledDescent.last = self

    def __call__(self, func, searchspace):
        while func.budget_spent_fraction < 1:
            x = min(searchspace.get_random_sample(self.sample), key=func)
            fx, improved = func(x), True
            while improved:
                improved = False
                neighbors = searchspace.get_neighbors(x, neighbor_method=self.neighbor_method)
                random.shuffle(neighbors)
                for n in neighbors:
                    if func(n) < fx or np.random.random() < self.p_jump:
                        x, fx, improved = n, func(n), func(n) < fx
                        break
'''


def _import(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def run_dir(tmp_path):
    """A run with one scored candidate (child of a failed one) and its HPO result."""
    archive = Archive.create(
        tmp_path / "run",
        {"name": "unit", "llm": {"model": "synth/components"}, "tasks": {"train": ["hub:convolution_milo/A100"]}},
    )
    archive.append_candidate(Candidate(id="c0001", generation=0, operator="new", error={"kind": "runtime"}))
    archive.append_candidate(
        Candidate(
            id="c0002",
            generation=1,
            operator="fix",
            parent_ids=["c0001"],
            description="# SampledDescent: restarts",
            code_path=archive.write_code("c0002", SOURCE),
            fitness={"score": 0.4, "per_task": {"t/A": {"score": 0.4}}},
        )
    )
    info = parse_optimizer(SOURCE)
    write_result(
        archive.run_dir,
        HpoResult(
            "c0002",
            info.class_name,
            "study",
            "sqlite:///x",
            info.hyperparameters,
            {"sample": 4, "neighbor_method": "Hamming", "p_jump": 0.05},
            {"sample": 9, "neighbor_method": "adjacent", "p_jump": 0.05},
            0.6,
            {"complete": 7, "pruned": 1, "failed": 0, "requested": 8},
            SplitScores(["t/A"], 0.4, 0.55),
            SplitScores(["t/B"], 0.3, 0.35),
            2,
            0,
            7919,
            1.0,
        ),
    )
    return archive.run_dir


def test_defaults_are_edited_in_dict_and_signature_keeping_comments():
    out = with_defaults(SOURCE, {"sample": 9, "neighbor_method": "adjacent", "p_jump": 0.125})
    info = parse_optimizer(out)
    assert {k: v["default"] for k, v in info.hyperparameters.items()} == {
        "sample": 9,
        "neighbor_method": "adjacent",
        "p_jump": 0.125,
    }
    assert 'def __init__(self, budget=5000, sample=9, neighbor_method="adjacent", *, p_jump=0.125):' in out
    assert "# random start points" in out and "# tunesmith-synth:" in out
    assert out.count("\n") == SOURCE.count("\n")  # only the literals changed


def test_checks_before_writing():
    with pytest.raises(ExportError, match="requests"):
        check_imports("import requests\nclass A:\n    def __call__(self, f, s): pass\n")
    check_imports(
        "import numpy as np\nfrom collections import deque\nfrom kernel_tuner.util import StopCriterionReached\n"
    )
    with pytest.raises(ExportError, match="module name"):
        valid_module_name("My-Optimizer")
    with pytest.raises(ExportError, match="no class with __call__"):
        parse_optimizer("x = 1\n")
    assert "no LLM" in generator_label("synth/components") and "LLM" in generator_label("openai/gpt-4o")


def test_export_run_writes_module_with_provenance(run_dir, tmp_path):
    out = tmp_path / "pkg"
    exported = export_run(run_dir, "sampled_descent", out_dir=out)
    assert exported.candidate_id == "c0002"
    assert exported.tuned_values == {"sample": 9, "neighbor_method": "adjacent"}
    module = _import(exported.module)
    doc = module.__doc__
    for needle in (
        "unit",
        "c0002",
        "ancestors: c0001",
        "offline synthesizer",
        "default 0.400, tuned 0.550",
        "test tasks (t/B)",
        "Optuna: 8 trials",
    ):
        assert needle in doc, needle
    assert "an LLM" not in doc
    assert module.OPTIMIZER().sample == 9 and module.PROVENANCE["candidate_id"] == "c0002"
    assert "| t/B | test | 0.300 | 0.350 |" in exported.report.read_text()
    assert not (out / "__init__.py").exists()  # issue 40, item 7: --out is the user's folder, not made a package


def test_export_into_the_current_folder_adds_only_the_module_and_its_report(run_dir, tmp_path, monkeypatch, capsys):
    """Issue 40, item 7: `export --out .` (the tutorial's command) wrote an undocumented __init__.py there."""
    here = tmp_path / "repo"
    here.mkdir()
    monkeypatch.chdir(here)
    assert main(["export", str(run_dir), "--name", "my_optimizer", "--out", "."]) == 0
    assert sorted(p.name for p in here.iterdir()) == ["my_optimizer.py", "reports"]
    assert _import(here / "my_optimizer.py").PROVENANCE["candidate_id"] == "c0002"


def test_the_docstring_imports_the_module_from_where_export_put_it(run_dir, tmp_path):
    """`export --out .` (the tutorial) wrote a usage line `import generated_algorithms.my_optimizer`, a module
    that is not there; only an export into the package is imported from it."""
    doc = _import(export_run(run_dir, "mine", out_dir=tmp_path / "here").module).__doc__
    assert "    import mine as strategy" in doc and "generated_algorithms" not in doc
    source = module_source("mine", SOURCE, Provenance("unit", "c0002", [], "test"))
    assert "    import generated_algorithms.mine as strategy" in source


def test_the_docstring_summary_is_cut_at_a_word_not_inside_one():
    """The quickstart's winner's name runs past 60 characters, so its summary was cut mid-word ('with La...')."""
    name = "SpreadPackBroodIteratedMemeticIndexStepKnnAnnealingEvolution"
    description = f"{name}: population search with Latin-hypercube-like spread initial sample, fixed-size mutation"
    source = module_source("mine", SOURCE, Provenance("unit", "c0002", [], "test", description=description))
    first = source.splitlines()[0]
    assert first == f'"""mine: {name} (generated by Tunesmith).', first
    long_words = "a search " + "that keeps going " * 8
    first = module_source("mine", SOURCE, Provenance("unit", "c0002", [], "test", description=long_words)).splitlines()[
        0
    ]
    kept = first.removeprefix('"""mine: ').removesuffix("... (generated by Tunesmith).")
    assert long_words.startswith(kept + " "), first


def test_export_cli(run_dir, tmp_path, capsys):
    assert main(["export", str(run_dir), "--name", "cli_export", "--out", str(tmp_path / "pkg")]) == 0
    assert "exported c0002" in capsys.readouterr().out
    assert main(["export", str(run_dir), "--name", "bad name", "--out", str(tmp_path / "pkg")]) == 2


@pytest.fixture(scope="module")
def plain_cache(hub_dir, tmp_path_factory):
    """Kernel Tuner reads plain JSON caches only: unzip the convolution A100 space (and its T4 twin)."""
    root = tmp_path_factory.mktemp("hub")
    (root / "cachefiles" / "convolution_milo").mkdir(parents=True)
    for name in ("A100.json", "A100_T4.json"):
        with gzip.open(hub_dir / "cachefiles" / "convolution_milo" / f"{name}.gz", "rb") as src:
            (root / "cachefiles" / "convolution_milo" / name).write_bytes(src.read())
    (root / "kernels").mkdir()
    shutil.copy(hub_dir / "kernels" / "convolution_milo.json", root / "kernels")
    (root / "kernels" / "convolution_milo.cu").write_text("// simulation mode never compiles it\n")
    return root


def test_exported_module_is_a_kernel_tuner_strategy(run_dir, tmp_path, plain_cache):
    import kernel_tuner

    module = _import(export_run(run_dir, "kt_strategy", out_dir=tmp_path / "pkg").module)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results, env = kernel_tuner.tune_cache(
            str(plain_cache / "cachefiles" / "convolution_milo" / "A100.json"),
            strategy=module,
            strategy_options={"max_fevals": 25, "seed": 3, "sample": 2},
            verbose=False,
            quiet=True,
        )
    times = [r["time"] for r in results if isinstance(r["time"], float)]
    assert 20 <= len(results) and times
    assert module.OPTIMIZER.last.sample == 2  # a strategy option overrides the tuned default
    assert module.OPTIMIZER.last.neighbor_method == "adjacent"  # the tuned default


def test_exported_module_runs_in_autotuning_methodology(run_dir, tmp_path, plain_cache):
    from autotuning_methodology.report_experiments import get_strategy_scores

    path = export_run(run_dir, "am_strategy", out_dir=tmp_path / "pkg").module
    experiment = {
        "version": "1.2.0",
        "name": "export_check",
        "parent_folder": str(tmp_path),
        "experimental_groups_defaults": {
            "applications": [
                {
                    "name": "convolution_milo",
                    "folder": str(plain_cache / "kernels"),
                    "input_file": "convolution_milo.json",
                    "objective_performance_keys": ["time"],
                }
            ],
            "gpus": ["A100"],
            "pattern_for_full_search_space_filenames": {
                "regex": str(plain_cache / "cachefiles") + "/${applications}/${gpus}_T4.json"
            },
            "stochastic": True,
            "repeats": 2,
            "samples": 32,
            "minimum_fraction_of_budget_valid": 0.1,
            "minimum_number_of_valid_search_iterations": 2,
            "ignore_cache": True,
        },
        "search_strategies": [
            {
                "name": "am_strategy",
                "search_method": "SampledDescent",
                "display_name": "SD",
                "autotuner": "KernelTuner",
                "custom_search_method_path": str(path),
            }
        ],
        "statistics_settings": {
            "cutoff_percentile": 0.95,
            "cutoff_percentile_start": 0.01,
            "cutoff_type": "time",
            "objective_time_keys": ["all"],
        },
        "visualization_settings": {
            "plots": [],
            "resolution": 1000.0,
            "confidence_level": 0.95,
            "compare_baselines": False,
            "compare_split_times": False,
        },
    }
    (tmp_path / "experiment.json").write_text(json.dumps(experiment))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scores = get_strategy_scores(str(tmp_path / "experiment.json"))
    score = float(scores["am_strategy"]["score"])
    assert -2.0 < score <= 1.0


def test_generalisation_table_puts_train_and_test_side_by_side(run_dir, tmp_path, conv_task, hub_tasks):
    from generator.bench.generalisation import compare, markdown, write

    path = export_run(run_dir, "gen_table", out_dir=tmp_path / "pkg").module
    test_task = next(t for t in hub_tasks if t.name == "convolution_milo/A4000")
    g = compare([conv_task], [test_task], [str(path), "random_sample"], repeats=2, workers=1, progress=False)
    assert [r.label for r in g.rows if r.generated] == ["pkg.gen_table"]
    for row in g.rows:
        assert row.train == row.per_task["convolution_milo/A100"]
        assert row.test == row.per_task["convolution_milo/A4000"]
    table = markdown(g)
    assert "| **pkg.gen_table** |" in table and "convolution/A4000 (test)" in table
    write(g, tmp_path / "g.json", tmp_path / "g.md")
    assert json.loads((tmp_path / "g.json").read_text())["repeats"] == 2


def test_shipped_winners_import_and_run(conv_task):
    """Every module in generated_algorithms/ and its archive imports, documents itself and runs as a strategy."""
    import importlib

    import generated_algorithms
    import generated_algorithms.archive
    from generator.bench.runner import parse_strategy, run_once

    names = generated_algorithms.available() + [f"archive.{n}" for n in generated_algorithms.archive.available()]
    assert "recommended" in names and len(names) > 10, names
    for name in names:
        module = importlib.import_module(f"generated_algorithms.{name}")
        assert module.PROVENANCE["candidate_id"] and module.PROVENANCE["generator"] and module.__doc__
        defaults = {k: v["default"] for k, v in module.OPTIMIZER.hyperparameters.items()}
        assert module.PROVENANCE["tuned_values"].items() <= defaults.items()  # tuned values are the defaults
        trace = run_once(conv_task, parse_strategy(module.__file__), seed=1)
        assert trace.rows.size > 10


def test_evaluate_accepts_a_module_export_just_wrote(run_dir, tmp_path, hub_dir, capsys):
    """Issue 24.4: `tunesmith evaluate` takes an exported module, as `bench` does (it saw two __call__ classes)."""
    path = export_run(run_dir, "to_evaluate", out_dir=tmp_path / "pkg").module
    conv = str(hub_dir / "cachefiles" / "convolution_milo" / "A100.json.gz")
    rc = main(["evaluate", str(path), "--tasks", conv, "--repeats", "1", "--json", str(tmp_path / "e.json")])
    out = capsys.readouterr()
    assert rc == 0, out.out + out.err
    assert json.loads((tmp_path / "e.json").read_text())["results"][str(path)]["score"] is not None


def test_export_writes_into_the_current_folder_never_into_the_installed_package(run_dir, tmp_path, monkeypatch, capsys):
    """Issue 41, item 5: without --out, `tunesmith export` wrote into the generated_algorithms package installed
    beside Tunesmith: site-packages after `pip install .`. It writes ./generated_algorithms/ of the current folder.
    In a checkout's root that is the repository's own package (nothing to say); elsewhere it is a new package
    there, the installed one is left as it was, and the command says how to import what it wrote."""
    from generator.export import exporter

    installed = tmp_path / "site-packages" / "generated_algorithms"
    installed.mkdir(parents=True)
    (installed / "__init__.py").write_text("")
    checkout = tmp_path / "checkout"
    (checkout / "generated_algorithms").mkdir(parents=True)
    (checkout / "generated_algorithms" / "__init__.py").write_text("")

    monkeypatch.setattr(exporter, "INSTALLED_PACKAGE", checkout / "generated_algorithms")  # pip install -e .
    monkeypatch.chdir(checkout)
    assert main(["export", str(run_dir), "--name", "mine"]) == 0
    assert "note:" not in capsys.readouterr().out  # the checkout's package is the one Python imports
    doc = _import(checkout / "generated_algorithms" / "mine.py").__doc__
    assert "    import generated_algorithms.mine as strategy" in doc
    assert main(["export", str(run_dir), "--name", "mine", "--out", "generated_algorithms", "--force"]) == 0
    assert "note:" not in capsys.readouterr().out

    monkeypatch.setattr(exporter, "INSTALLED_PACKAGE", installed)  # pip install . (a wheel)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["export", str(run_dir), "--name", "other"]) == 0
    out = capsys.readouterr().out
    assert sorted(p.name for p in installed.iterdir()) == ["__init__.py"], "nothing written into the installation"
    written = elsewhere / "generated_algorithms"
    assert sorted(p.name for p in written.iterdir()) == ["__init__.py", "other.py", "reports"]
    assert "import it as `generated_algorithms.other` from " + str(elsewhere) in out, out
    assert "    import generated_algorithms.other as strategy" in _import(written / "other.py").__doc__
