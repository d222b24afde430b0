"""Problem specs and the shipped measured caches: loading, consistency with Kernel Tuner, errors."""

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from generator.errors import TunesmithError
from generator.tasks.problems import load_problem, load_problem_tasks
from generator.tasks.cache import valid_index_matrix
from generator.tasks.entries import load_tasks

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "problems"
CUDA_PROBLEMS = {"gemm": 2406, "conv2d": 1672, "hotspot": 1196, "dedisp": 1764}  # valid configurations


@pytest.mark.parametrize("name", sorted(CUDA_PROBLEMS))
def test_shipped_cache_loads_as_task(name):
    [task] = load_problem_tasks(PROBLEMS / name / "problem.toml")
    assert task.name == f"{name}/H200"
    assert len(task.space.valid) == CUDA_PROBLEMS[name]
    values = task.key.values[~task.key.failed]
    assert values.size > 0.9 * CUDA_PROBLEMS[name]
    assert np.median(values) > 1.3 * values.min()  # a real spread, not a flat space
    assert (task.key.eval_seconds > 0).all()
    assert task.info["application"]["kernel_name"] == load_problem(PROBLEMS / name / "problem.toml").kernel_name


def test_objective_of_hotspot_is_time_per_step():
    [task] = load_problem_tasks(PROBLEMS / "hotspot" / "problem.toml")
    assert task.objective.name == "time_per_step" and not task.objective.higher_is_better


def test_load_tasks_dispatches_problem_specs_and_folders():
    assert [t.name for t in load_tasks(PROBLEMS / "gemm" / "problem.toml")] == ["gemm/H200"]
    names = {t.name for t in load_tasks(PROBLEMS)}
    assert {f"{p}/H200" for p in CUDA_PROBLEMS} <= names


@pytest.mark.parametrize("name", ["gemm", "hotspot"])
def test_restrictions_agree_with_kernel_tuner(name):
    from kernel_tuner.searchspace import Searchspace

    problem = load_problem(PROBLEMS / name / "problem.toml")
    ours = valid_index_matrix(problem.path, problem.tune_params, problem.restrictions)
    mine = {tuple(problem.tune_params[k][i] for k, i in zip(problem.tune_params, row)) for row in ours}
    kt = Searchspace(problem.tune_params, list(problem.restrictions), 1024)
    assert mine == set(map(tuple, kt.list))


def test_tune_kwargs_carry_defines_grid_divisors_and_metrics():
    problem = load_problem(PROBLEMS / "hotspot" / "problem.toml")
    kw = problem.tune_kwargs()
    assert "-DGRID_W=4096" in kw["compiler_options"]
    assert kw["grid_div_x"] == ["block_size_x", "tile_size_x"]
    assert kw["objective"] == "time_per_step" and kw["metrics"] == {"time_per_step": "time / temporal_tiling_factor"}
    assert kw["lang"] == "cupy"


def test_arguments_are_deterministic_and_quantised():
    problem = load_problem(PROBLEMS / "dedisp" / "problem.toml")
    a, b = problem.make_arguments(), problem.make_arguments()
    delay = a[[x.name for x in problem.arguments].index("delay")]
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert np.allclose(delay * 64, np.round(delay * 64)) and delay.max() < 8  # exact shifts on GPU and CPU


def _tiny_spec(tmp_path: Path, extra: str = "", reference: str = "reference:matmul") -> Path:
    src = PROBLEMS / "matmul_c"
    shutil.copy(src / "matmul.cpp", tmp_path)
    shutil.copy(src / "reference.py", tmp_path)
    text = (src / "problem.toml").read_text().replace('reference = "reference:matmul"', f'reference = "{reference}"')
    (tmp_path / "problem.toml").write_text(text + extra)
    return tmp_path / "problem.toml"


def test_reference_param_gives_a_tunable_answer(tmp_path):
    (tmp_path / "ref2.py").write_text("import numpy as np\n"
                                      "def f(args, params):\n"
                                      "    return {'C': np.full((96, 96), params['tile_i'], np.float32)}\n")
    spec = _tiny_spec(tmp_path, reference="ref2:f")
    spec.write_text(spec.read_text().replace('seed = 5', 'seed = 5\nreference_param = "tile_i"'))
    problem = load_problem(spec)
    answer = problem.answer(problem.make_arguments())
    assert answer.param_key == "tile_i" and sorted(answer) == [8, 16, 32]
    assert answer[16][0][0, 0] == 16 and answer[16][1] is None


@pytest.mark.parametrize("edit, words", [
    (lambda t: t.replace('kernel_name = "matmul_c"\n', ''), "missing key 'kernel_name'"),
    (lambda t: t.replace('lang = "C"', 'lang = "OpenCL"'), "lang 'OpenCL' is not supported"),
    (lambda t: t + '\nrestrictions = ["tile_i > 0"]\n', "inside [tune_params]"),
    (lambda t: t.replace('seed = 5', 'seed = 5\ncolour = "red"'), "unknown keys ['colour']"),
    (lambda t: t.replace('kernel_file = "matmul.cpp"', 'kernel_file = "nope.cpp"'), "does not exist"),
    (lambda t: t.replace('dtype = "float32"', 'dtype = "floaty"', 1), "not a numpy dtype"),
    (lambda t: t + "\n[[arguments]]\nname = 'x'\ndtype = 'int32'\n", "without 'value'"),
])
def test_spec_errors_name_the_file_and_the_fix(tmp_path, edit, words):
    spec = _tiny_spec(tmp_path)
    spec.write_text(edit(spec.read_text()))
    with pytest.raises(TunesmithError) as info:
        load_problem(spec)
    assert words in str(info.value) and str(spec) in str(info.value)


def test_problem_without_caches_says_how_to_build_them(tmp_path):
    spec = _tiny_spec(tmp_path)
    with pytest.raises(TunesmithError, match="tunesmith cache build"):
        load_problem_tasks(spec)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH: cannot compile the CUDA kernels here")
@pytest.mark.parametrize("name", sorted(CUDA_PROBLEMS))
def test_cuda_kernel_compiles_at_a_corner_of_its_space(tmp_path, name):
    """nvcc -c at the largest values of every parameter that the restrictions allow (no GPU needed)."""
    problem = load_problem(PROBLEMS / name / "problem.toml")
    valid = valid_index_matrix(problem.path, problem.tune_params, problem.restrictions)
    row = valid[np.lexsort(valid.T[::-1])[-1]]
    config = {k: problem.tune_params[k][i] for k, i in zip(problem.tune_params, row)}
    defines = [f"-D{k}={v}" for k, v in {**problem.defines, **config}.items()]
    out = subprocess.run(["nvcc", "-arch=sm_90", "-c", str(problem.kernel_file), "-o", str(tmp_path / "k.o"),
                          *defines], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
