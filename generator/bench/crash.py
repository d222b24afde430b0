"""One line for a run that raised, saying whose code failed: the strategy's, Kernel Tuner's or Tunesmith's.

Issue 26: Kernel Tuner's `diff_evo` "crashed" on pnpoly with "...; fix the strategy" while the
error came from the restriction Tunesmith handed Kernel Tuner, before diff_evo's code ran. A
run's error is the strategy's when the strategy's own code (its file, or the Kernel Tuner
strategy module of a built-in) is on the traceback; otherwise it happened around the strategy,
and the line says where, and that the strategy is not to blame.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

from generator.errors import TunesmithError

_PACKAGE = Path(__file__).resolve().parents[1]  # generator/
PIP_NAMES = {"skopt": "scikit-optimize", "sklearn": "scikit-learn"}  # module -> the package that installs it


def crash_message(spec, task_name: str, repeat: int, exc: BaseException) -> str:
    """The one-line error of a run of `spec` on a task that raised `exc`."""
    if isinstance(exc, TunesmithError):  # already one line naming the problem and its fix
        return str(exc)
    if isinstance(exc, ModuleNotFoundError) and exc.name:  # Kernel Tuner's skopt and pyatf_strategies import late
        package = PIP_NAMES.get(exc.name.split(".")[0], exc.name.split(".")[0])
        return (
            f"{spec.label} could not run: it needs the Python module {exc.name!r}, which is not "
            f"installed; pip install {package}, or leave {spec.label} out"
        )
    frames = traceback.extract_tb(exc.__traceback__)
    where = frames[-1] if frames else None
    at = f" at {Path(where.filename).name}:{where.lineno}" if where else ""
    what = f"{type(exc).__name__}: {_one_line(exc)}{at}"
    own = _strategy_files(spec)
    if any(_resolved(f.filename) in own for f in frames):
        fix = (
            "in Kernel Tuner's own strategy code: check its options, or report it to Kernel Tuner"
            if spec.kind == "builtin"
            else "fix the strategy"
        )
        return f"strategy {spec.label} crashed on {task_name} (repeat {repeat}): {what}; {fix}"
    owner = _owner(where.filename) if where else "Tunesmith"
    return (
        f"{spec.label} could not run on {task_name} (repeat {repeat}): {what}, in {owner}'s code around the "
        f"strategy, not in the strategy; please report it (with this line) to Tunesmith"
    )


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."


def _resolved(filename: str) -> str:
    try:
        return str(Path(filename).resolve())
    except OSError:
        return filename


def _strategy_files(spec) -> set[str]:
    """The files that are the strategy's own code."""
    if spec.kind in ("class", "module"):
        return {_resolved(spec.target)}
    if spec.kind == "builtin":
        from kernel_tuner.interface import strategy_map

        module = strategy_map.get(spec.target)
        path = getattr(module, "__file__", None) or getattr(
            sys.modules.get(getattr(module, "__module__", "")), "__file__", None
        )
        return {_resolved(path)} if path else set()
    return set()


def _owner(filename: str) -> str:
    """Whose code a file is: Tunesmith's, Kernel Tuner's, or a named package's."""
    path = Path(_resolved(filename))
    if _PACKAGE in path.parents:
        return "Tunesmith"
    parts = path.parts
    if "site-packages" in parts or "dist-packages" in parts:
        index = max(i for i, p in enumerate(parts) if p in ("site-packages", "dist-packages"))
        package = parts[index + 1] if index + 1 < len(parts) else path.name
        return "Kernel Tuner" if package == "kernel_tuner" else package.split(".")[0]
    if path.name.startswith("constraint") or filename.startswith("constraint"):
        return "python-constraint"
    return path.name
