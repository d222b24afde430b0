"""Tuning problems that Tunesmith ships: a tunable kernel plus the spec that says how to tune it.

A problem spec is a TOML file (problems/<name>/problem.toml): the kernel file and name, the
language, the problem size, grid divisors, the kernel's arguments (how to create them), the tunable
parameters and their values, the restrictions, the objective, and a reference function that
computes the right output (problems/<name>/reference.py) for verification. The measured search
spaces (Kernel Tuner cache files, one per GPU) live in problems/caches/<name>/<GPU>.json.gz and
load as ordinary cached Tasks named `<name>/<GPU>`.
"""

from __future__ import annotations

import importlib.util
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from generator import resources
from generator.errors import TunesmithError
from generator.tasks.cache import Objective, Task, load_cache_task

# The problems Tunesmith ships: the checkout's problems/, or the wheel's copy (generator/resources.py).
PROBLEMS_DIR = resources.PROBLEMS_DIR
LANGS = ("cupy", "C")  # Kernel Tuner backends a spec may name: CUDA through CuPy, C through g++
FILLS = ("zeros", "random", "value")
SPEC_KEYS = {
    "name",
    "description",
    "kernel_file",
    "kernel_name",
    "lang",
    "problem_size",
    "grid_div_x",
    "grid_div_y",
    "grid_div_z",
    "block_size_names",
    "tune_params",
    "restrictions",
    "defines",
    "arguments",
    "reference",
    "reference_param",
    "objective",
    "objective_higher_is_better",
    "metrics",
    "iterations",
    "atol",
    "seed",
    "caches",
    "compiler_options",
    "generator",
}


class ProblemError(TunesmithError):
    """A problem spec that cannot be used; the message names the file, the key and the fix."""


@dataclass(frozen=True)
class Argument:
    """One kernel argument: an array (shape, dtype, how to fill it) or a scalar value."""

    name: str
    dtype: str
    shape: tuple[int, ...] | None = None  # None: a scalar
    fill: str = "zeros"  # zeros | random (uniform in [low, high), optionally rounded to `quantum`) | value
    low: float = 0.0
    high: float = 1.0
    quantum: float | None = None
    value: float | int | None = None

    def make(self, rng: np.random.Generator):
        """The numpy array (or numpy scalar) passed to the kernel."""
        dtype = np.dtype(self.dtype)
        if self.shape is None:
            return dtype.type(self.value)
        if self.fill == "zeros":
            return np.zeros(self.shape, dtype=dtype)
        if self.fill == "value":
            return np.full(self.shape, self.value, dtype=dtype)
        data = rng.uniform(self.low, self.high, size=self.shape)
        if self.quantum:
            data = np.floor(data / self.quantum) * self.quantum
        return data.astype(dtype)


@dataclass(frozen=True, eq=False)
class Problem:
    """A tunable kernel and everything Kernel Tuner needs to tune, verify and measure it."""

    name: str
    path: Path  # the spec file
    description: str
    kernel_file: Path
    kernel_name: str
    lang: str
    problem_size: tuple
    tune_params: dict[str, list]
    restrictions: tuple[str, ...]
    arguments: tuple[Argument, ...]
    objective: Objective
    grid_div: dict[str, list | None] = field(default_factory=dict)  # grid_div_x/y/z -> divisors
    block_size_names: tuple[str, ...] | None = None
    defines: dict[str, int | float | str] = field(default_factory=dict)
    compiler_options: tuple[str, ...] = ()
    reference: str | None = None  # "module:function" in the spec's folder
    reference_param: str | None = None  # the answer depends on this parameter's value
    generator: str | None = None  # "module:function" that builds arguments `fill` cannot (e.g. CSR indices)
    metrics: dict[str, str] = field(default_factory=dict)
    iterations: int = 7
    atol: float = 1e-6
    seed: int = 0
    caches_dir: Path | None = None

    @property
    def cartesian_size(self) -> int:
        return int(np.prod([len(v) for v in self.tune_params.values()]))

    def cache_files(self) -> list[Path]:
        """The shipped measured search spaces of this problem, one per GPU."""
        if self.caches_dir is None or not self.caches_dir.is_dir():
            return []
        return sorted(p for p in self.caches_dir.glob("*.json.gz"))

    def kernel_source(self) -> str:
        return self.kernel_file.read_text()

    def make_arguments(self) -> list:
        """Fresh kernel arguments, the same every time (seeded)."""
        rng = np.random.default_rng(self.seed)
        arrays = [a.make(rng) for a in self.arguments]
        if self.generator:
            arrays = self._generated(arrays, rng)
        return arrays

    def _generated(self, arrays: list, rng: np.random.Generator) -> list:
        """The arguments with those the generator builds replaced; each must keep its spec's shape and dtype."""
        named = {a.name: v for a, v in zip(self.arguments, arrays)}
        made = self._module_function(self.generator, "generator")(named, rng)
        for a, i in ((a, i) for i, a in enumerate(self.arguments) if a.name in made):
            value = made.pop(a.name)
            if a.shape is None or getattr(value, "shape", None) != a.shape or value.dtype != np.dtype(a.dtype):
                raise ProblemError(
                    f"{self.path}: generator {self.generator} made {a.name} as "
                    f"{getattr(value, 'dtype', type(value).__name__)} {getattr(value, 'shape', '')}, "
                    f"the spec says {a.dtype} {a.shape}; make them agree"
                )
            arrays[i] = value
        if made:
            raise ProblemError(
                f"{self.path}: generator {self.generator} returned unknown arguments {sorted(made)}; "
                "return a dict keyed by array argument names"
            )
        return arrays

    def answer(self, arguments: list):
        """The expected kernel outputs (Kernel Tuner `answer=`), or None when the spec has no reference."""
        if not self.reference:
            return None
        func = self._reference_function()
        named = {a.name: v for a, v in zip(self.arguments, arguments)}
        if self.reference_param is None:
            return self._answer_list(func(named, {}))
        from kernel_tuner.accuracy import Tunable

        return Tunable(
            self.reference_param,
            {
                v: self._answer_list(func(named, {self.reference_param: v}))
                for v in self.tune_params[self.reference_param]
            },
        )

    def _answer_list(self, outputs: dict) -> list:
        unknown = set(outputs) - {a.name for a in self.arguments}
        if unknown:
            raise ProblemError(
                f"{self.path}: reference {self.reference} returned unknown outputs {sorted(unknown)}; "
                "return a dict keyed by argument names"
            )
        return [outputs.get(a.name) for a in self.arguments]

    def _reference_function(self):
        return self._module_function(self.reference, "reference")

    def _module_function(self, where: str, key: str):
        module_name, _, func_name = where.partition(":")
        file = self.path.resolve().parent / f"{module_name}.py"
        spec = importlib.util.spec_from_file_location(f"tunesmith_problem_{self.name}_{module_name}", file)
        if spec is None or not file.is_file():
            raise ProblemError(f"{self.path}: {key} module {file} not found; fix the '{key}' key")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        func = getattr(module, func_name or key, None)
        if func is None:
            raise ProblemError(f"{self.path}: {file} has no function {func_name!r}; fix the '{key}' key")
        return func

    def tune_kwargs(self) -> dict:
        """Keyword arguments of `kernel_tuner.tune_kernel` that describe this problem (no data, no strategy)."""
        kwargs = dict(
            kernel_name=self.kernel_name,
            kernel_source=str(self.kernel_file),
            problem_size=self.problem_size,
            tune_params=self.tune_params,
            restrictions=list(self.restrictions) or None,
            lang=self.lang,
            iterations=self.iterations,
            objective=self.objective.name,
            objective_higher_is_better=self.objective.higher_is_better,
            compiler_options=list(self.compiler_options) + [f"-D{k}={v}" for k, v in self.defines.items()],
            metrics=dict(self.metrics) or None,
            atol=self.atol,
        )
        kwargs.update({k: v for k, v in self.grid_div.items() if v is not None})
        if self.block_size_names:
            kwargs["block_size_names"] = list(self.block_size_names)
        return kwargs

    def application_info(self) -> dict:
        """What a prompt may say about the kernel (no measured values)."""
        return {
            "problem": self.name,
            "description": self.description,
            "kernel_name": self.kernel_name,
            "language": self.lang,
            "problem_size": list(self.problem_size),
            "tune_params": self.tune_params,
            "restrictions": list(self.restrictions),
            "objective": self.objective.name,
            "objective_higher_is_better": self.objective.higher_is_better,
        }


def _require(path: Path, doc: dict, key: str, kind):
    if key not in doc:
        raise ProblemError(f"{path}: missing key {key!r}; add it to the problem spec")
    value = doc[key]
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise ProblemError(f"{path}: key {key!r} must be a {names}, got {type(value).__name__}; fix its value")
    return value


def _argument(path: Path, i: int, doc: dict) -> Argument:
    where = f"arguments[{i}]"
    if not isinstance(doc, dict) or "name" not in doc or "dtype" not in doc:
        raise ProblemError(f"{path}: {where} needs 'name' and 'dtype'; see problems/README.md")
    try:
        np.dtype(doc["dtype"])
    except TypeError:
        raise ProblemError(f"{path}: {where}.dtype {doc['dtype']!r} is not a numpy dtype; use e.g. 'float32'") from None
    shape = doc.get("shape")
    fill = doc.get("fill", "value" if shape is None else "zeros")
    if fill not in FILLS:
        raise ProblemError(f"{path}: {where}.fill {fill!r} is unknown; use one of {FILLS}")
    if (shape is None or fill == "value") and "value" not in doc:
        raise ProblemError(f"{path}: {where} ({doc['name']}) is a scalar or constant fill without 'value'; add 'value'")
    return Argument(
        str(doc["name"]),
        str(doc["dtype"]),
        tuple(int(s) for s in shape) if shape is not None else None,
        fill,
        float(doc.get("low", 0.0)),
        float(doc.get("high", 1.0)),
        float(doc["quantum"]) if "quantum" in doc else None,
        doc.get("value"),
    )


def load_problem(path, doc: dict | None = None) -> Problem:
    """Read and check a problem spec (TOML); `doc`: its parsed content, given (paths resolve from `path`)."""
    path = Path(path)
    try:
        doc = tomllib.loads(path.read_text()) if doc is None else doc
    except FileNotFoundError:
        raise ProblemError(f"{path}: problem spec not found; give a path such as problems/gemm/problem.toml") from None
    except tomllib.TOMLDecodeError as exc:
        raise ProblemError(f"{path}: not valid TOML ({exc}); fix the syntax") from None
    unknown = set(doc) - SPEC_KEYS
    if unknown:
        raise ProblemError(f"{path}: unknown keys {sorted(unknown)}; allowed are {sorted(SPEC_KEYS)}")
    name = _require(path, doc, "name", str)
    lang = doc.get("lang", "cupy")
    if lang not in LANGS:
        raise ProblemError(f"{path}: lang {lang!r} is not supported; use one of {LANGS}")
    kernel_file = (path.parent / _require(path, doc, "kernel_file", str)).resolve()
    if not kernel_file.is_file():
        raise ProblemError(f"{path}: kernel_file {kernel_file} does not exist; fix 'kernel_file'")
    tune_params = _require(path, doc, "tune_params", dict)
    for k, v in tune_params.items():
        if k in SPEC_KEYS:  # a TOML key written after the [tune_params] header lands inside it
            raise ProblemError(f"{path}: {k!r} is inside [tune_params]; move it above the first [table] header")
        if not isinstance(v, list) or not v:
            raise ProblemError(f"{path}: tune_params.{k} must be a non-empty list of values; fix it")
    args = _require(path, doc, "arguments", list)
    size = _require(path, doc, "problem_size", (list, int, str))
    reference_param = doc.get("reference_param")
    if reference_param is not None and reference_param not in tune_params:
        raise ProblemError(f"{path}: reference_param {reference_param!r} is not a tunable parameter; fix it")
    caches = (path.parent / doc["caches"] if "caches" in doc else path.parent.parent / "caches" / name).resolve()
    return Problem(
        name=name,
        path=path,
        description=str(doc.get("description", "")),
        kernel_file=kernel_file,
        kernel_name=_require(path, doc, "kernel_name", str),
        lang=lang,
        problem_size=tuple(size) if isinstance(size, list) else (size,),
        tune_params={k: list(v) for k, v in tune_params.items()},
        restrictions=tuple(str(r) for r in doc.get("restrictions", [])),
        arguments=tuple(_argument(path, i, a) for i, a in enumerate(args)),
        objective=Objective(str(doc.get("objective", "time")), bool(doc.get("objective_higher_is_better", False))),
        grid_div={k: doc.get(k) for k in ("grid_div_x", "grid_div_y", "grid_div_z")},
        block_size_names=tuple(doc["block_size_names"]) if "block_size_names" in doc else None,
        defines=dict(doc.get("defines", {})),
        compiler_options=tuple(doc.get("compiler_options", [])),
        reference=doc.get("reference"),
        reference_param=reference_param,
        generator=doc.get("generator"),
        metrics={str(k): str(v) for k, v in doc.get("metrics", {}).items()},
        iterations=int(doc.get("iterations", 7)),
        atol=float(doc.get("atol", 1e-6)),
        seed=int(doc.get("seed", 0)),
        caches_dir=caches,
    )


def gpu_of_cache(path: Path) -> str:
    """The GPU label of a cache file name (problems/caches/gemm/H200.json.gz -> H200)."""
    return Path(path).name.split(".")[0]


def load_problem_tasks(path, gpus: list[str] | None = None) -> list[Task]:
    """One cached Task per measured GPU of a problem spec, named `<problem>/<GPU>`."""
    problem = load_problem(path)
    files = problem.cache_files()
    if gpus is not None:
        files = [f for f in files if gpu_of_cache(f) in gpus]
    if not files:
        raise ProblemError(
            f"{problem.path}: no measured caches in {problem.caches_dir}"
            f"{' for ' + ', '.join(gpus) if gpus else ''}; "
            f"run `tunesmith cache build {problem.path}` "
            + ("here (a C kernel runs on this machine's CPU)" if problem.lang == "C" else "on a machine with the GPU")
        )
    info = {"application": problem.application_info(), "app": problem.name, "problem": str(problem.path)}
    return [
        load_cache_task(
            f,
            problem.restrictions,
            name=f"{problem.name}/{gpu_of_cache(f)}",
            objective=problem.objective,
            info={**info, "gpu": gpu_of_cache(f)},
        )
        for f in files
    ]
