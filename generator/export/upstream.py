"""An exported optimizer written in Kernel Tuner's own strategy format, to be proposed upstream as is.

Kernel Tuner's strategies (`kernel_tuner/strategies/*.py`, e.g. `gen_hybrid_vndx.py`, the 2025
paper's winner) are plain modules: the algorithm, an `_options` dict of name -> (description,
default), and `tune(searchspace, runner, tuning_options)` that reads the options with
`common.get_options` (an unknown option is a ValueError there), builds a `CostFunc` and returns its
results. `tunesmith export` modules carry Tunesmith's provenance and a more general entry point;
this writes the same algorithm in the upstream shape, with nothing of Tunesmith's left in it but a
paragraph of provenance.

The exported module is read, never imported: its class, hyperparameters and provenance are
literals in its source (ast), so converting a module runs none of its code.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from generator import parsing
from generator.errors import TunesmithError
from generator.export.module_text import ExportError, entry_point_parts


class UpstreamError(TunesmithError):
    """A module that cannot be written in Kernel Tuner's strategy format."""


@dataclass(frozen=True)
class ExportedModule:
    """What the upstream file needs from a `tunesmith export` module."""

    name: str
    class_name: str
    summary: str  # the class's one-line docstring
    code: str  # imports and the optimizer class, as exported
    hyperparameters: dict  # name -> {type, low, high, default}
    budget_default: int
    provenance: dict


TUNE_TEMPLATE = '''

from kernel_tuner.strategies import common
from kernel_tuner.strategies.common import CostFunc
from kernel_tuner.util import StopCriterionReached

_options = dict(
{options}
)


def tune(searchspace, runner, tuning_options):
    options = tuning_options.strategy_options
    values = dict(zip(_options, common.get_options(options, _options)))
{seeding}    x0 = options.get("x0")
    if x0 is not None and (len(x0) != len(searchspace.tune_params) or not searchspace.is_param_config_valid(tuple(x0))):
        raise ValueError(f"x0 {{x0!r}} is not a valid configuration: one value per tune parameter, passing the restrictions")
    cost_func = CostFunc(searchspace, tuning_options, runner, scaling=False, snap=False)
    optimizer = {cls}(**values)
    try:
        if x0 is not None:
            cost_func(list(x0))  # the first configuration evaluated, as in the other strategies
        optimizer(_stops_once(cost_func), searchspace)
    except (StopCriterionReached, _RunEnded) as e:
        if tuning_options.verbose:
            print(e)
    return cost_func.results


class _RunEnded(BaseException):
    """The optimizer called the cost function again after StopCriterionReached: the run ends."""


def _stops_once(cost_func):
    """cost_func, except that a call after StopCriterionReached ends the run (an optimizer that catches
    the stop and goes on would otherwise loop for ever). Its attributes stay readable: an optimizer that
    reads cost_func.budget_spent_fraction must see the tuner's own measure, as through the exported module."""

    class StopsOnce:
        stopped = False

        def __getattr__(self, name):
            return getattr(cost_func, name)

        def __call__(self, *args, **kwargs):
            if self.stopped:
                raise _RunEnded("cost function called again after StopCriterionReached")
            try:
                return cost_func(*args, **kwargs)
            except StopCriterionReached:
                self.stopped = True
                raise

    return StopsOnce()


tune.__doc__ = common.get_strategy_docstring({title!r}, _options)
'''


def read_exported(path) -> ExportedModule:
    """The parts of a `tunesmith export` module (read as text, never run)."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise UpstreamError(
            f"cannot read {path}: {exc.strerror}; give a module written by `tunesmith export`"
        ) from None
    try:
        cut, cls_name, provenance = entry_point_parts(text)
    except ExportError as exc:
        raise UpstreamError(f"{path}: {exc}") from None
    head = parsing.parse(text[:cut])
    cls = _class(head, cls_name, path)
    docstring = ast.get_docstring(head)
    code_start = head.body[1].lineno - 1 if docstring else 0
    code = "\n".join(text[:cut].splitlines()[code_start:]).strip("\n")
    return ExportedModule(
        path.stem,
        cls.name,
        (ast.get_docstring(cls) or cls.name).splitlines()[0],
        code,
        _hyperparameters(cls),
        _budget_default(cls),
        provenance,
    )


def _class(tree: ast.Module, name: str, path: Path) -> ast.ClassDef:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    raise UpstreamError(f"{path}: no class {name} before its entry point; export it again")


def _hyperparameters(cls: ast.ClassDef) -> dict:
    for node in cls.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "hyperparameters" for t in node.targets):
            return ast.literal_eval(node.value)
    return {}


def _budget_default(cls: ast.ClassDef) -> int:
    """The default of `budget` in the optimizer's __init__ (Kernel Tuner's custom-strategy convention: 5000)."""
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            args = node.args.args[len(node.args.args) - len(node.args.defaults) :]
            for arg, default in zip(args, node.args.defaults):
                if arg.arg == "budget":
                    return int(ast.literal_eval(default))
    return 5000


# `seed`, as the exported module takes it (the tutorial passes it), or Kernel Tuner's own tune_kernel(seed=...)
SEEDING = """    seed = values.pop("seed")
    if seed is None:
        seed = tuning_options.get("seed")  # tune_kernel(..., seed=N), as the built-in strategies read it
    if seed is not None:  # numpy's and random's global generators, which the optimizer draws from
        import random

        import numpy

        random.seed(seed)
        numpy.random.seed(seed)
"""
SEED_OPTION = (
    "    seed=(\"seed for numpy's and random's global generators (None: tune_kernel's seed, else leave them "
    'alone)", None),'
)


def _seed_is_an_option(module: ExportedModule) -> bool:
    return "seed" not in module.hyperparameters  # an optimizer with a `seed` hyperparameter takes it itself


def _option_lines(module: ExportedModule) -> str:
    lines = [
        f'    budget=("evaluations the optimizer plans for (max_fevals still stops it)", {module.budget_default}),'
    ]
    if _seed_is_an_option(module):
        lines.append(SEED_OPTION)
    for name, spec in module.hyperparameters.items():
        kind, low, high = spec.get("type", ""), spec.get("low"), spec.get("high")
        about = f"{kind} in [{low}, {high}]" if low is not None and high is not None else str(kind or "value")
        lines.append(f"    {name}=({about!r}, {spec.get('default')!r}),")
    return "\n".join(lines)


def _docstring(module: ExportedModule) -> str:
    prov = module.provenance
    trained = ", ".join(prov.get("scores", {}).get("train", {}).get("tasks") or []) or "its campaign's training tasks"
    return "\n".join(
        [
            f"{module.summary}",
            "",
            f"Algorithm generated by Tunesmith ({prov.get('generator', 'unknown generator')}) in campaign "
            f"{prov.get('campaign', '?')}, candidate {prov.get('candidate_id', '?')}, trained on {trained}.",
            *([f"Note: {prov['note']}"] if prov.get("note") else []),
            "Written in Kernel Tuner's strategy format by `tunesmith upstream`.",
        ]
    )


def upstream_source(path) -> str:
    """The text of a Kernel Tuner strategy file for the optimizer exported at `path`."""
    module = read_exported(path)
    title = module.class_name
    text = f'"""{_docstring(module)}\n"""\n\n{module.code}\n' + TUNE_TEMPLATE.format(
        options=_option_lines(module),
        cls=module.class_name,
        title=title,
        seeding=SEEDING if _seed_is_an_option(module) else "",
    )
    parsing.compile_code(text, f"gen_{module.name}.py", "exec")  # fail here, not in Kernel Tuner
    return text
