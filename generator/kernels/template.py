"""A kernel the user brings, and a template of it: the kernel with tunable parameters, their values, restrictions.

The user's spec is a `problems/<name>/problem.toml` without `[tune_params]` (and without
restrictions): the kernel, its arguments, problem size and a reference. A template comes from an
LLM's reply: one fenced code block (the kernel) and one ```toml block (`[tune_params]`,
`restrictions`, `hypothesis`). Everything in a reply is checked here as data before anything
runs: parameter names, values, the size of the space, and restrictions reduced to arithmetic.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from generator.errors import TunesmithError
from generator.tasks.problems import Problem, ProblemError, load_problem
from generator.tasks.restrictions import RestrictionError, valid_indices

ORIGINAL_PARAM = "byok_original"  # the one-value parameter that lets Kernel Tuner run an untunable kernel
MAX_CONFIGS = 4096  # a larger space is sent back: brute-forcing it on the CPU takes too long
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,40}$")
CODE_FENCE = re.compile(r"```(c|cpp|c\+\+|cu|cuda)\s*\n(.*?)```", re.S | re.I)
TOML_FENCE = re.compile(r"```toml\s*\n(.*?)```", re.S | re.I)
# What a restriction may contain: arithmetic, comparisons, and/or/not, names and numbers; no calls, no attributes.
SAFE_NODES = (
    ast.Expression,
    ast.BoolOp,
    ast.BinOp,
    ast.UnaryOp,
    ast.Compare,
    ast.IfExp,
    ast.Name,
    ast.Load,
    ast.Constant,
    ast.And,
    ast.Or,
    ast.Not,
    ast.USub,
    ast.UAdd,
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.FloorDiv,
    ast.Mod,
    ast.Pow,
    ast.Eq,
    ast.NotEq,
    ast.Lt,
    ast.LtE,
    ast.Gt,
    ast.GtE,
)


class TemplateError(TunesmithError):
    """A reply that is not a usable template; the message is fed back to the LLM."""


@dataclass(frozen=True)
class KernelSpec:
    """The user's kernel: its spec as a Problem (with one dummy parameter), its source, which arguments are outputs."""

    path: Path
    problem: Problem
    doc: dict
    source: str
    outputs: list[int]  # indices of the arguments the reference answers for

    def arguments(self) -> list:
        return self.problem.make_arguments()

    def answer(self, arguments: list) -> list:
        return self.problem.answer(arguments)


def load_kernel_spec(path) -> KernelSpec:
    """Read a kernel spec: a problem.toml without tune_params, with a reference (a C kernel for now)."""
    path = Path(path)
    if path.is_dir():
        path = path / "problem.toml"
    try:
        doc = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ProblemError(f"{path}: kernel spec not found; give a problem.toml without [tune_params]") from None
    except tomllib.TOMLDecodeError as exc:
        raise ProblemError(f"{path}: not valid TOML ({exc}); fix the syntax") from None
    if doc.get("tune_params"):
        raise ProblemError(
            f"{path}: already has [tune_params]; `tunesmith template` takes a kernel without them "
            f"(to measure this one, run `tunesmith cache build {path}`)"
        )
    if not doc.get("reference"):
        raise ProblemError(
            f"{path}: no 'reference'; templates are checked against it, add reference = 'module:function'"
        )
    doc = dict(doc)
    # a CUDA kernel as it came still needs its launch: `original_params = {block_size_x = 16, ...}`
    fixed = doc.pop("original_params", {})
    if not isinstance(fixed, dict) or not all(isinstance(v, int) for v in fixed.values()):
        raise ProblemError(
            f"{path}: original_params must be a table of integers (the original kernel's launch, "
            "e.g. block_size_x = 16); fix it"
        )
    problem = load_problem(path, {**doc, "tune_params": {k: [v] for k, v in fixed.items()} or {ORIGINAL_PARAM: [0]}})
    args = problem.make_arguments()
    answer = problem.answer(args)
    outputs = [i for i, a in enumerate(answer) if a is not None]
    return KernelSpec(path, problem, doc, problem.kernel_source(), outputs)


@dataclass(frozen=True)
class Template:
    """A tunable version of the kernel: source, parameter values, restrictions, and the idea behind them."""

    source: str
    tune_params: dict[str, list]
    restrictions: tuple[str, ...] = ()
    hypothesis: str = ""
    configs: list = field(default_factory=list, compare=False)  # the valid configurations, product order
    grid_div: dict = field(default_factory=dict)  # CUDA: grid_div_x/y/z the template sets (parameter names)

    @property
    def size(self) -> int:
        return len(self.configs)


def parse_template(reply: str | None, spec: KernelSpec) -> Template:
    """The template in an LLM's reply, checked as data (names, values, space size, restrictions)."""
    if not reply:
        raise TemplateError("the reply was empty; answer with one ```cpp block and one ```toml block")
    code = CODE_FENCE.findall(reply)
    toml_blocks = TOML_FENCE.findall(reply)
    if not code or not toml_blocks:
        raise TemplateError(
            "the reply needs one ```cpp block (the whole kernel) and one ```toml block "
            "([tune_params], restrictions, hypothesis); one of them is missing"
        )
    source = max((c[1] for c in code), key=len)
    try:
        doc = tomllib.loads(toml_blocks[-1])
    except tomllib.TOMLDecodeError as exc:
        raise TemplateError(
            f"the ```toml block is not valid TOML ({exc}); put restrictions and hypothesis above [tune_params]"
        ) from None
    params = doc.get("tune_params")
    if not isinstance(params, dict) or not params:
        raise TemplateError("the ```toml block has no [tune_params] table of parameter = [values]; add one")
    restrictions = doc.get("restrictions", [])
    if isinstance(params.get("restrictions"), list):  # written below the [tune_params] header
        restrictions = params.pop("restrictions")
    hypothesis = str(doc.get("hypothesis", params.pop("hypothesis", "")))[:500]
    tune_params = {k: _values(k, v, spec) for k, v in params.items()}
    if not isinstance(restrictions, list) or not all(isinstance(r, str) for r in restrictions):
        raise TemplateError("restrictions must be a list of strings (Python expressions over the parameters)")
    for r in restrictions:
        _check_restriction(r, tune_params)
    configs = _valid_configs(tune_params, restrictions)
    grid_div = {}
    for key in ("grid_div_x", "grid_div_y", "grid_div_z"):
        names = doc.get(key, params.pop(key, None))
        if names is None:
            continue
        if spec.problem.lang != "cupy" or not isinstance(names, list) or not set(names) <= set(tune_params):
            raise TemplateError(f"{key} = {names!r}: give a list of tunable parameter names (CUDA kernels only)")
        grid_div[key] = names
    if kernel_name_missing(source, spec.problem.kernel_name):
        raise TemplateError(
            f"the kernel must keep its name and signature: {spec.problem.kernel_name}(...) was not found in the code"
        )
    return Template(source, tune_params, tuple(restrictions), hypothesis, configs, grid_div)


def kernel_name_missing(source: str, name: str) -> bool:
    """Whether the function Kernel Tuner calls is absent from the source."""
    return re.search(rf"\b{re.escape(name)}\s*\(", source) is None


def _values(name: str, values, spec: KernelSpec) -> list:
    if not NAME.match(str(name)) or name == ORIGINAL_PARAM:
        raise TemplateError(f"parameter name {name!r} is not a C identifier; use names like tile_i")
    if name in spec.problem.defines:
        raise TemplateError(f"parameter {name!r} is already a constant of the problem ([defines]); rename it")
    if not isinstance(values, list) or not values or len(values) > 32:
        raise TemplateError(f"tune_params.{name} must be a list of 1 to 32 values")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values) or len(set(values)) != len(values):
        raise TemplateError(f"tune_params.{name} = {values}: use distinct integers (they become -D{name}=value)")
    return list(values)


def _check_restriction(expr: str, tune_params: dict) -> None:
    """Only arithmetic over the parameters: a restriction is evaluated in this process, so it must not be code."""
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        raise TemplateError(f"restriction {expr!r} does not parse as a Python expression; fix it") from None
    for node in ast.walk(tree):
        if not isinstance(node, SAFE_NODES):
            raise TemplateError(
                f"restriction {expr!r} uses {type(node).__name__}; use only arithmetic, comparisons "
                "and and/or/not over the parameters"
            )
        if isinstance(node, ast.Name) and node.id not in tune_params:
            raise TemplateError(
                f"restriction {expr!r} names {node.id!r}, which is not a parameter; use names from [tune_params]"
            )
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
            raise TemplateError(f"restriction {expr!r} has the constant {node.value!r}; use numbers only")


def _valid_configs(tune_params: dict, restrictions: list) -> list[tuple]:
    cartesian = int(np.prod([len(v) for v in tune_params.values()]))
    if cartesian > MAX_CONFIGS:
        raise TemplateError(
            f"the space has {cartesian} configurations before restrictions; keep it at most "
            f"{MAX_CONFIGS} (fewer values per parameter)"
        )
    try:
        rows = valid_indices(tune_params, restrictions)
    except RestrictionError as exc:
        raise TemplateError(str(exc)) from None
    values = list(tune_params.values())
    configs = [tuple(values[j][i] for j, i in enumerate(row)) for row in rows.tolist()]
    if not configs:
        raise TemplateError("no configuration passes the restrictions; loosen them")
    return configs


def sample_configs(template: Template, k: int, seed: int = 0) -> list[tuple]:
    """The configurations a check runs: the extremes (each parameter's smallest and largest value), then random ones."""
    picks: list[tuple] = [template.configs[0], template.configs[-1]]
    for j in range(len(template.tune_params)):
        picks.append(min(template.configs, key=lambda c: (c[j], c)))
        picks.append(max(template.configs, key=lambda c: (c[j], c)))
    rng = np.random.default_rng(seed)
    for i in rng.permutation(len(template.configs)):
        picks.append(template.configs[int(i)])
    unique = list(dict.fromkeys(picks))
    return unique[: max(k, 1)]


def write_problem(spec: KernelSpec, template: Template, out_dir: Path, name: str) -> Path:
    """The accepted template as a problem (problem.toml, kernel, reference) that every command takes as is."""
    out_dir.mkdir(parents=True, exist_ok=True)
    kernel_file = out_dir / f"{name}{spec.problem.kernel_file.suffix}"
    kernel_file.write_text(template.source if template.source.endswith("\n") else template.source + "\n")
    ref_module = spec.problem.reference.partition(":")[0]
    shutil.copy(spec.path.parent / f"{ref_module}.py", out_dir / f"{ref_module}.py")
    top = {
        k: v
        for k, v in spec.doc.items()
        if not isinstance(v, (dict, list))
        or k in ("problem_size", "compiler_options", "grid_div_x", "grid_div_y", "grid_div_z", "block_size_names")
    }
    top.pop("original_params", None)
    top.update(
        name=name,
        kernel_file=kernel_file.name,
        restrictions=list(template.restrictions),
        caches="caches",
        **template.grid_div,
    )
    if template.hypothesis:
        top["description"] = f"{spec.doc.get('description', '')} Template: {template.hypothesis}".strip()
    lines = [
        f"# Written by `tunesmith template` from {spec.path.name} of {spec.problem.name}.",
        *(f"{k} = {_toml(v)}" for k, v in top.items()),
    ]
    for table in ("defines", "metrics"):
        if spec.doc.get(table):
            lines += ["", f"[{table}]", *(f"{k} = {_toml(v)}" for k, v in spec.doc[table].items())]
    for arg in spec.doc["arguments"]:
        lines += ["", "[[arguments]]", *(f"{k} = {_toml(v)}" for k, v in arg.items())]
    lines += ["", "[tune_params]", *(f"{k} = {_toml(v)}" for k, v in template.tune_params.items())]
    path = out_dir / "problem.toml"
    path.write_text("\n".join(lines) + "\n")
    load_problem(path)  # what we wrote must load as any problem does
    return path


def _toml(value) -> str:
    """A TOML value (strings, numbers, booleans and flat lists of them: JSON spells them alike)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value)
