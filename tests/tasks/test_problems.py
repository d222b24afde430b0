"""Problem specs and the shipped measured caches: loading, consistency with Kernel Tuner, errors."""

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from support.paths import ROOT

from generator.errors import TunesmithError
from generator.scoring.degenerate import degenerate_reason
from generator.scoring.statistics import space_statistics
from generator.tasks.cache import valid_index_matrix
from generator.tasks.entries import load_entry, load_tasks
from generator.tasks.problems import load_problem, load_problem_tasks

PROBLEMS = ROOT / "problems"
CUDA_PROBLEMS = {"gemm": 2406, "conv2d": 1672, "hotspot": 1196, "dedisp": 1764}  # valid configurations
# Spaces measured on an H100 for training (issue 29): valid configurations, optimum and median (ms),
# as problems/README.md and the README's "Problems and live tuning" table give them.
TRAINING_SPACES = {
    "transpose": (288, 0.2010, 0.4149),
    "reduction": (306, 0.09341, 0.1436),
    "nbody": (1988, 0.2172, 2.0972),
    "stencil3d": (3096, 0.06252, 0.07972),
}
# New kernel families for training data (issue 38): configurations after the restrictions.
NEW_SPACES = {
    "softmax": 212,
    "layernorm": 72,
    "scan": 324,
    "fwht": 408,
    "spmv": 288,
    "batched_gemm": 772,
    "attention": 144,
    "bitonic_sort": 92,
}


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


@pytest.mark.parametrize("name", sorted(TRAINING_SPACES))
def test_training_space_loads_by_entry_with_its_statistics(name):
    valid, optimum, median = TRAINING_SPACES[name]
    [task] = load_entry(f"problem:{name}/H100")
    assert task.name == f"{name}/H100" and len(task.space.valid) == valid
    values = task.key.values[~task.key.failed]
    assert values.size == valid  # every configuration compiled, ran and passed verification
    assert values.min() == pytest.approx(optimum, rel=1e-3) and np.median(values) == pytest.approx(median, rel=1e-3)
    assert (task.key.eval_seconds > 0).all()
    stats = space_statistics(task)
    assert stats.size == valid and stats.failed_fraction == 0 and stats.budget_fevals >= 5
    assert degenerate_reason(task) is None  # P is not decided by one configuration here


def test_nbody_reference_is_the_pairwise_sum():
    """The blocked matrix-product reference equals the plain pairwise formula (G = 1/N, softened)."""
    problem = load_problem(PROBLEMS / "nbody" / "problem.toml")
    pos = np.random.default_rng(0).random((300, 4)).astype(np.float32)
    got = problem._reference_function()({"pos": pos}, {})["acc"].reshape(-1, 3)
    p, m = pos[:, :3].astype(np.float64), pos[:, 3].astype(np.float64)
    d = p[None, :, :] - p[:, None, :]  # d[i, j] = p_j - p_i
    want = np.einsum("ij,ijk->ik", m[None, :] * ((d * d).sum(-1) + 0.01) ** -1.5, d) / len(p)
    assert np.allclose(got, want, atol=1e-6)


def test_stencil3d_reference_at_a_corner_and_inside():
    problem = load_problem(PROBLEMS / "stencil3d" / "problem.toml")
    u = np.random.default_rng(0).random((6, 5, 4)).astype(np.float32)
    out = problem._reference_function()({"in": u}, {})["out"].astype(np.float64)
    v = u.astype(np.float64)
    inside = v[2, 2, 2] * 0.4 + 0.1 * (v[1, 2, 2] + v[3, 2, 2] + v[2, 1, 2] + v[2, 3, 2] + v[2, 2, 1] + v[2, 2, 3])
    corner = v[0, 0, 0] * 0.4 + 0.1 * (3 * v[0, 0, 0] + v[1, 0, 0] + v[0, 1, 0] + v[0, 0, 1])  # edges: the cell itself
    assert out[2, 2, 2] == pytest.approx(inside, rel=1e-6) and out[0, 0, 0] == pytest.approx(corner, rel=1e-6)


def test_objective_of_hotspot_is_time_per_step():
    [task] = load_problem_tasks(PROBLEMS / "hotspot" / "problem.toml")
    assert task.objective.name == "time_per_step" and not task.objective.higher_is_better


def test_load_tasks_dispatches_problem_specs_and_folders():
    assert [t.name for t in load_tasks(PROBLEMS / "gemm" / "problem.toml")] == ["gemm/H200"]
    names = {t.name for t in load_tasks(PROBLEMS)}
    assert {f"{p}/H200" for p in CUDA_PROBLEMS} <= names


@pytest.mark.parametrize("name", ["gemm", "hotspot", *sorted(TRAINING_SPACES), *sorted(NEW_SPACES)])
def test_restrictions_agree_with_kernel_tuner(name):
    from kernel_tuner.searchspace import Searchspace

    problem = load_problem(PROBLEMS / name / "problem.toml")
    ours = valid_index_matrix(problem.path, problem.tune_params, problem.restrictions)
    mine = {tuple(problem.tune_params[k][i] for k, i in zip(problem.tune_params, row)) for row in ours}
    kt = Searchspace(problem.tune_params, list(problem.restrictions), 1024)
    assert mine == set(map(tuple, kt.list))
    assert name not in NEW_SPACES or len(mine) == NEW_SPACES[name]


@pytest.mark.parametrize("name", sorted(NEW_SPACES))
def test_new_space_has_its_stated_size_and_a_reference_for_every_output(name):
    from kernel_tuner.searchspace import Searchspace

    problem = load_problem(PROBLEMS / name / "problem.toml")
    assert len(Searchspace(problem.tune_params, list(problem.restrictions), 1024).list) == NEW_SPACES[name]
    assert (
        f"{NEW_SPACES[name]} configurations"
        in problem.path.read_text().splitlines()[0] + problem.path.read_text().splitlines()[1]
    )
    arguments = problem.make_arguments()
    answer = problem.answer(arguments)
    outputs = [(a, x) for a, x in zip(arguments, answer) if x is not None]
    assert len(outputs) == 1 and outputs[0][0].shape == outputs[0][1].shape and np.isfinite(outputs[0][1]).all()


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
    (tmp_path / "ref2.py").write_text(
        "import numpy as np\ndef f(args, params):\n    return {'C': np.full((96, 96), params['tile_i'], np.float32)}\n"
    )
    spec = _tiny_spec(tmp_path, reference="ref2:f")
    spec.write_text(spec.read_text().replace("seed = 5", 'seed = 5\nreference_param = "tile_i"'))
    problem = load_problem(spec)
    answer = problem.answer(problem.make_arguments())
    assert answer.param_key == "tile_i" and sorted(answer) == [8, 16, 32]
    assert answer[16][0][0, 0] == 16 and answer[16][1] is None


def test_generator_builds_the_arguments_fills_cannot(tmp_path):
    (tmp_path / "gen.py").write_text(
        "import numpy as np\n"
        "def make(args, rng):\n"
        "    return {'A': np.tile(rng.permutation(96).astype(np.float32), (96, 1))}\n"
    )
    spec = _tiny_spec(tmp_path)
    spec.write_text(spec.read_text().replace("seed = 5", 'seed = 5\ngenerator = "gen:make"'))
    problem = load_problem(spec)
    a, b = problem.make_arguments(), problem.make_arguments()
    assert sorted(a[1][0]) == list(range(96)) and np.array_equal(a[1], b[1])  # built, and seeded
    assert a[2].shape == (96, 96) and a[2].dtype == np.float32  # the others still come from their fill
    (tmp_path / "gen.py").write_text("import numpy as np\ndef make(args, rng):\n    return {'A': np.zeros(3)}\n")
    with pytest.raises(TunesmithError, match="generator gen:make made A as float64 .3,.*make them agree"):
        load_problem(spec).make_arguments()


def test_spmv_rows_are_irregular_and_the_reference_sums_them():
    problem = load_problem(PROBLEMS / "spmv" / "problem.toml")
    args = dict(zip((a.name for a in problem.arguments), problem.make_arguments()))
    ptr = args["row_ptr"]
    lengths = np.diff(ptr.astype(np.int64)).reshape(-1, 64)
    assert ptr[0] == 0 and ptr[-1] == args["vals"].size
    assert (np.sort(lengths, axis=1) == np.arange(1, 65)).all() and len({tuple(r) for r in lengths[:50]}) == 50
    y = problem.answer(list(args.values()))[0]
    for row in (0, 1, 77, ptr.size - 2):
        k = slice(ptr[row], ptr[row + 1])
        assert y[row] == float(np.dot(args["vals"][k], args["x"][args["col_idx"][k]]))


@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda t: t.replace('kernel_name = "matmul_c"\n', ""), "missing key 'kernel_name'"),
        (lambda t: t.replace('lang = "C"', 'lang = "OpenCL"'), "lang 'OpenCL' is not supported"),
        (lambda t: t + '\nrestrictions = ["tile_i > 0"]\n', "inside [tune_params]"),
        (lambda t: t.replace("seed = 5", 'seed = 5\ncolour = "red"'), "unknown keys ['colour']"),
        (lambda t: t.replace('kernel_file = "matmul.cpp"', 'kernel_file = "nope.cpp"'), "does not exist"),
        (lambda t: t.replace('dtype = "float32"', 'dtype = "floaty"', 1), "not a numpy dtype"),
        (lambda t: t + "\n[[arguments]]\nname = 'x'\ndtype = 'int32'\n", "without 'value'"),
    ],
)
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
@pytest.mark.parametrize("name", sorted(CUDA_PROBLEMS) + sorted(TRAINING_SPACES) + sorted(NEW_SPACES))
def test_cuda_kernel_compiles_at_a_corner_of_its_space(tmp_path, name):
    """nvcc -c at the largest values of every parameter that the restrictions allow (no GPU needed)."""
    problem = load_problem(PROBLEMS / name / "problem.toml")
    valid = valid_index_matrix(problem.path, problem.tune_params, problem.restrictions)
    row = valid[np.lexsort(valid.T[::-1])[-1]]
    config = {k: problem.tune_params[k][i] for k, i in zip(problem.tune_params, row)}
    defines = [f"-D{k}={v}" for k, v in {**problem.defines, **config}.items()]
    out = subprocess.run(
        ["nvcc", "-arch=sm_90", "-c", str(problem.kernel_file), "-o", str(tmp_path / "k.o"), *defines],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr


def test_build_script_keeps_a_carried_pythonpath(tmp_path):
    """The GPU image lacks pydantic: carried wheels installed under a PYTHONPATH must stay importable."""
    line = next(
        ln for ln in (PROBLEMS / "build_caches.sh").read_text().splitlines() if ln.startswith("export PYTHONPATH")
    )
    out = subprocess.run(
        ["bash", "-c", f"{line}; echo $PYTHONPATH"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": "/tmp/site", "PATH": "/usr/bin:/bin"},
    )
    assert out.stdout.split() == [f"{tmp_path}:/tmp/site"]


def test_a_c_problem_without_caches_says_to_build_them_here_not_on_a_gpu_machine(tmp_path):
    """Issue 40, item 11: a CPU problem's error said to run `cache build` "on a machine with the GPU"."""
    shutil.copytree(ROOT / "problems" / "matmul_c", tmp_path / "matmul_c")
    with pytest.raises(TunesmithError) as refused:
        load_problem_tasks(tmp_path / "matmul_c" / "problem.toml")
    message = str(refused.value)
    assert "tunesmith cache build" in message and "GPU" not in message and "this machine's CPU" in message, message
