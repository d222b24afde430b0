"""Module paths written as strings name modules that exist.

Some code names a module in a string, not an import: the registry's and the public API's "module:attribute"
tables, the Dask worker preload, the walled kernel child started with `-m`, the sandbox's `sys.modules`
key of the seeding module, the command line that `run_lock` recognises. A rename that misses one breaks
only inside the walls, on a cluster or on first use; this test finds it at once.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

from support.paths import ROOT

PACKAGE = ROOT / "generator"
DOTTED = re.compile(r"generator(?:\.\w+)+(?::\w+)?")


def _module_strings(root: Path = PACKAGE) -> list[tuple[str, int, str]]:
    """(file, line, string) for every string literal that is wholly a dotted generator path."""
    out = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and DOTTED.fullmatch(node.value):
                out.append((str(path.relative_to(root)), node.lineno, node.value))
    return out


def _problem(text: str) -> str | None:
    module, _, attribute = text.partition(":")
    try:
        loaded = importlib.import_module(module)
    except ImportError as exc:
        return f"no module {module} ({exc})"
    if attribute and not hasattr(loaded, attribute):
        return f"{module} has no {attribute}"
    return None


def test_every_module_path_written_as_a_string_names_a_module():
    strings = _module_strings()
    # the places the plan names (R2) are found, so the test looks where the risk is
    assert {"generator.cli", "generator.kernels.walled_child", "generator.scoring.seeding"} <= {s for *_, s in strings}
    problems = [f"{f}:{line}: {s!r}: {p}" for f, line, s in strings if (p := _problem(s)) is not None]
    assert problems == []


def test_a_stale_module_string_is_found(tmp_path):
    (tmp_path / "m.py").write_text('PRELOAD = "generator.evaluation.dask_setup"\nKEY = "generator.tasks:nothing"\n')
    found = _module_strings(tmp_path)
    assert [s for *_, s in found] == ["generator.evaluation.dask_setup", "generator.tasks:nothing"]
    assert all(_problem(s) for *_, s in found)
