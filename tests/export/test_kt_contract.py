"""The contract Kernel Tuner's strategy tests (`test/strategies/test_strategies.py`) hold a strategy to.

Run for every shipped module and for a module `tunesmith export` has just written, in simulation
mode on Kernel Tuner's own test cache (`data/kernel_tuner/test_cache_file.json`, copied from
KernelTuner/kernel_tuner's test/strategies, Apache-2.0): the budget, unique results, the keys and
types of each result, `x0` as the first evaluation (a `ValueError` for an invalid one), and a
`ValueError` naming the known options for an unknown one, as the built-in strategies do.
"""

from __future__ import annotations

import importlib
import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest
from support.paths import TEST_DATA
from test_export import run_dir  # noqa: F401 - the fixture: a run with a scored, tuned candidate

import generated_algorithms
from generator.export.exporter import export_run

CACHE = TEST_DATA / "kernel_tuner" / "test_cache_file.json"
RESTRICTIONS = ["test_string == 'alg_2'", "test_bool == True", "test_mixed == 2.45"]
X0 = [256, "alg_2", 15, True, 2.45]
EXPECTED_TYPES = {
    "block_size_x": int,
    "time": (float, int),
    "times": list,
    "compile_time": (float, int),
    "verification_time": (float, int),
    "benchmark_time": (float, int),
    "strategy_time": (float, int),
    "framework_time": (float, int),
    "timestamp": str,
    "test_string": str,
    "test_single": int,
    "test_bool": bool,
    "test_mixed": float,
}


def _vector_add():
    kernel = "__global__ void vector_add(float *c, float *a, float *b, int n) { }"
    size = 100
    args = [np.zeros(size, np.float32), np.zeros(size, np.float32), np.zeros(size, np.float32), np.int32(size)]
    tune_params = {
        "block_size_x": [128 + 64 * i for i in range(15)],
        "test_string": ["alg_1", "alg_2"],
        "test_single": [15],
        "test_bool": [True, False],
        "test_mixed": ["test", 1, True, 2.45],
    }
    return ["vector_add", kernel, size, args, tune_params]


def _tune(strategy, options: dict):
    import kernel_tuner

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results, _ = kernel_tuner.tune_kernel(
            *_vector_add(),
            restrictions=RESTRICTIONS,
            strategy=strategy,
            strategy_options=dict(options),
            verbose=False,
            cache=str(CACHE),
            simulation_mode=True,
        )
    return results


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _upstream(exported: Path, tmp_path: Path):
    """The exported module written in Kernel Tuner's own strategy format (`tunesmith upstream`), loaded."""
    from generator.export.upstream import upstream_source

    path = tmp_path / f"gen_{exported.stem}.py"
    path.write_text(upstream_source(exported))
    return _load(path, path.stem)


SHIPPED_DIR = Path(generated_algorithms.__file__).parent


@pytest.fixture(
    params=generated_algorithms.available()
    + ["fresh_export"]
    + [f"upstream:{name}" for name in generated_algorithms.available()]
)
def strategy(request, tmp_path):
    if request.param.startswith("upstream:"):
        return _upstream(SHIPPED_DIR / f"{request.param.split(':')[1]}.py", tmp_path)
    if request.param != "fresh_export":
        return importlib.import_module(f"generated_algorithms.{request.param}")
    path = export_run(request.getfixturevalue("run_dir"), "fresh", out_dir=tmp_path / "pkg").module
    return _load(path, "fresh")


def test_budget_unique_results_keys_and_types(strategy):
    results = _tune(strategy, {"max_fevals": 10})
    assert results
    from kernel_tuner.util import InvalidConfig

    unique = {tuple(r[k] for k in _vector_add()[-1]) for r in results if not isinstance(r["time"], InvalidConfig)}
    assert len(unique) <= 10
    for res in results:
        assert set(res) == set(EXPECTED_TYPES)
        for key, kind in EXPECTED_TYPES.items():
            assert isinstance(res[key], kind), (key, res[key])


def test_x0_is_the_first_evaluation(strategy):
    for x0 in (X0, [704, "alg_2", 15, True, 2.45]):
        results = _tune(strategy, {"max_fevals": 10, "x0": x0})
        assert [results[0][k] for k in _vector_add()[-1]] == x0


@pytest.mark.parametrize(
    "x0",
    [[256, "alg_1", 15, True, 2.45], [256, "alg_2"], [100, "alg_2", 15, True, 2.45]],
    ids=["restricted", "too_short", "unknown_value"],
)
def test_invalid_x0_is_refused(strategy, x0):
    with pytest.raises(ValueError, match=r"x0 .* is not a valid configuration"):
        _tune(strategy, {"max_fevals": 10, "x0": x0})


@pytest.mark.parametrize("option", ["knn_kk", "patiense", "no_such_option"])
def test_unknown_option_is_refused_naming_the_known_ones(strategy, option):
    with pytest.raises(ValueError, match=rf"Unrecognized option {option} in strategy_options \(allowed: .*'x0'"):
        _tune(strategy, {"max_fevals": 10, option: 3})


def test_shipped_modules_have_the_current_entry_point():
    """Regenerated with `rewrapped`: algorithm and provenance as exported, the wrapper as export writes it today."""
    from generator.export.module_text import rewrapped

    for name in generated_algorithms.available():
        path = Path(generated_algorithms.__file__).parent / f"{name}.py"
        text = path.read_text()
        assert rewrapped(text) == text, f"{name}: run module_text.rewrapped on it"


SWALLOWS_STOP = '''
class SwallowsStop:
    """Catches the stop and calls again: the exported tune() must still end the run."""

    def __init__(self, budget=5000):
        self.calls = 0

    def __call__(self, func, searchspace):
        while True:
            for config in searchspace.get_random_sample(4):
                try:
                    self.calls += 1
                    func(config)
                except Exception:
                    pass
'''


def test_exported_tune_ends_an_optimizer_that_swallows_the_stop(tmp_path):
    from generator.export.module_text import Provenance, module_source

    path = tmp_path / "swallows.py"
    path.write_text(module_source("swallows", SWALLOWS_STOP, Provenance("unit", "c0001", [], "test")))
    spec = importlib.util.spec_from_file_location("swallows", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    results = _tune(module, {"max_fevals": 5, "x0": X0})
    assert results and [results[0][k] for k in _vector_add()[-1]] == X0


def test_upstream_tune_ends_an_optimizer_that_swallows_the_stop(tmp_path):
    from generator.export.module_text import Provenance, module_source

    exported = tmp_path / "swallows.py"
    exported.write_text(module_source("swallows", SWALLOWS_STOP, Provenance("unit", "c0001", [], "test")))
    results = _tune(_upstream(exported, tmp_path), {"max_fevals": 5, "x0": X0})
    assert results and [results[0][k] for k in _vector_add()[-1]] == X0


@pytest.mark.parametrize("name", generated_algorithms.available())
def test_upstream_file_searches_as_the_exported_module_does(name, tmp_path):
    """Same algorithm, same options, same global seed: the same configurations in the same order."""
    import random

    def evaluated(module, options):
        random.seed(3)
        np.random.seed(3)
        return [tuple(r[k] for k in _vector_add()[-1]) for r in _tune(module, {"max_fevals": 12, **options})]

    exported = importlib.import_module(f"generated_algorithms.{name}")
    upstream = _upstream(SHIPPED_DIR / f"{name}.py", tmp_path)
    budget = {"budget": 40}  # the exported entry point passes budget only when given; upstream always does
    assert evaluated(upstream, budget) == evaluated(exported, budget)
    text = Path(upstream.__file__).read_text()
    assert "from generator" not in text and "import generator" not in text  # nothing of Tunesmith's is needed
    assert upstream.tune.__doc__ and set(upstream._options) >= set(exported.HYPERPARAMETERS) | {"budget"}


def test_shipped_upstream_file_is_what_upstream_writes_today():
    """generated_algorithms/kernel_tuner/gen_NAME.py: `tunesmith upstream generated_algorithms/NAME.py --out` it again."""
    from generator.export.upstream import upstream_source

    shipped = sorted((SHIPPED_DIR / "kernel_tuner").glob("gen_*.py"))
    assert shipped, "no upstream file shipped"
    for path in shipped:
        assert path.read_text() == upstream_source(SHIPPED_DIR / f"{path.stem[len('gen_') :]}.py"), path.name


def test_upstream_command_writes_into_a_folder_it_creates(tmp_path):
    """`tunesmith upstream MODULE --out new/folder/gen_x.py` makes the folder, as a user naming one expects."""
    from generator.cli import main

    out = tmp_path / "new" / "folder" / "gen_knn_late_acceptance.py"
    assert main(["upstream", str(SHIPPED_DIR / "archive" / "knn_late_acceptance.py"), "--out", str(out)]) == 0
    assert "def tune(searchspace, runner, tuning_options)" in out.read_text()


def test_a_provenance_note_reaches_the_module_its_report_and_the_upstream_file(tmp_path):
    """Code re-rendered after its campaign says so wherever it is read (benchmarks/export_rerendered.py)."""
    from generator.export.exporter import write_report
    from generator.export.module_text import Provenance, module_source

    note = 'not the campaign\'s code: re-rendered with {"global_pool": 4}'
    prov = Provenance("unit", "c0001", [], "test", note=note)
    exported = tmp_path / "noted.py"
    exported.write_text(module_source("noted", SWALLOWS_STOP, prov))
    assert f"- note: {note}" in exported.read_text().split('"""')[1]  # the module's docstring
    assert f"- note: {note}" in write_report(exported, "noted", prov, {}).read_text()
    assert f"Note: {note}" in _upstream(exported, tmp_path).__doc__
    plain = tmp_path / "plain.py"
    plain.write_text(module_source("plain", SWALLOWS_STOP, Provenance("unit", "c0001", [], "test")))
    assert "note:" not in plain.read_text().split('"""')[1] and "Note:" not in _upstream(plain, tmp_path).__doc__


READS_SPENT = '''
SEEN = []


class ReadsSpent:
    """Records the tuner's own measure of the budget spent after each evaluation."""

    def __init__(self, budget=5000):
        pass

    def __call__(self, func, searchspace):
        for config in searchspace.get_random_sample(4):
            func(config)
            SEEN.append(getattr(func, "budget_spent_fraction", None))
'''


def test_the_tuners_budget_measure_reaches_the_optimizer_through_both_entry_points(tmp_path):
    """func.budget_spent_fraction (Kernel Tuner's CostFunc) is readable through the exported tune() and the
    upstream file alike: the upstream file hid it once, so a synthesizer optimizer searched differently there."""
    from generator.export.module_text import Provenance, module_source

    exported = tmp_path / "reads_spent.py"
    exported.write_text(module_source("reads_spent", READS_SPENT, Provenance("unit", "c0001", [], "test")))
    for module in (_load(exported, "reads_spent"), _upstream(exported, tmp_path)):
        _tune(module, {"max_fevals": 8})
        assert module.SEEN == [0.125, 0.25, 0.375, 0.5], module.__name__


def _configs(results) -> list:
    return [tuple(r[k] for k in _vector_add()[-1]) for r in results]


def test_an_exported_synthesizer_optimizer_asks_for_no_more_samples_than_the_space_holds(tmp_path):
    """Issue 40, item 15: on a small space (15 valid configurations here) the synthesizer's optimizers asked
    Kernel Tuner for up to 512 random samples, and Kernel Tuner warned "Too many samples requested"."""
    import kernel_tuner

    from generator.export.module_text import Provenance, module_source
    from generator.llm.synth.compose import read_composition, render

    composition = read_composition((SHIPPED_DIR / "archive" / "lcb_wide_switching_nearest.py").read_text())
    path = tmp_path / "small_space.py"
    path.write_text(module_source("small_space", render(composition)[2], Provenance("unit", "c0001", [], "test")))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results, _ = kernel_tuner.tune_kernel(
            *_vector_add(),
            restrictions=RESTRICTIONS,
            strategy=_load(path, "small_space"),
            strategy_options={"max_fevals": 15},
            verbose=False,
            cache=str(CACHE),
            simulation_mode=True,
        )
    assert len(set(_configs(results))) == 15  # the whole space, found without asking for more of it
    too_many = [str(w.message) for w in caught if "Too many samples" in str(w.message)]
    assert not too_many, too_many[:3]


def test_the_kernel_tuner_format_file_takes_seed_as_the_exported_module_does(tmp_path):
    """Issue 40, item 15: the tutorial passes strategy_options={"seed": 1} to the exported module; the file in
    Kernel Tuner's own format refused it ("Unrecognized option seed"). It takes it now, and Kernel Tuner's own
    tune_kernel(seed=...) too, and a seed gives the same run again."""
    import kernel_tuner

    module = _upstream(SHIPPED_DIR / "archive" / "lcb_wide_switching_nearest.py", tmp_path)
    first = _configs(_tune(module, {"max_fevals": 12, "seed": 1}))
    assert first == _configs(_tune(module, {"max_fevals": 12, "seed": 1})) and len(first) >= 12
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = [
            kernel_tuner.tune_kernel(
                *_vector_add(),
                restrictions=RESTRICTIONS,
                strategy=module,
                seed=1,
                strategy_options={"max_fevals": 12},
                verbose=False,
                cache=str(CACHE),
                simulation_mode=True,
            )[0]
            for _ in range(2)
        ]
    assert _configs(runs[0]) == _configs(runs[1]) == first
