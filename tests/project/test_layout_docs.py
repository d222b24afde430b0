"""The layout page (docs/reference/repository-layout.md) and the package docstring (generator/__init__.py) name
every room of the package, checked against the folder tree (issue 41, item 7: both had left out kernels/,
parsing.py and cli_scoring.py), and the layout page names no generator/ path that does not exist."""

from __future__ import annotations

import re

from support.paths import ROOT

import generator

PACKAGE = ROOT / "generator"
LAYOUT = ROOT / "docs" / "reference" / "repository-layout.md"


def rooms() -> dict[str, str]:
    """Each room under generator/ -> how the layout page writes it: `NAME/` for a sub-package, `NAME.py` for a
    module (the package's own __init__ aside)."""
    found = {p.name: f"{p.name}/" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    found |= {p.stem: p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"}
    assert {"tasks", "kernels", "parsing", "cli"} <= set(found), f"the rooms could not be read: {found}"
    return found


def test_the_layout_page_names_every_room():
    text = LAYOUT.read_text()
    named = set(re.findall(r"`(?:generator/)?([\w]+(?:/|\.py))`", text))
    missing = sorted(shown for shown in rooms().values() if shown not in named)
    assert not missing, f"docs/reference/repository-layout.md does not name these rooms of generator/: {missing}"


def test_the_layout_page_names_no_path_that_does_not_exist():
    text = LAYOUT.read_text()
    paths = set(re.findall(r"`(generator/[\w/.]+)`", text))
    assert paths, "the layout page names no generator/ path: the extraction broke"
    gone = sorted(p for p in paths if not (ROOT / p.rstrip("/")).exists())
    assert not gone, f"docs/reference/repository-layout.md names paths that do not exist: {gone}"


def test_the_package_docstring_names_every_room():
    words = set(re.findall(r"\w+", generator.__doc__ or ""))
    missing = sorted(name for name in rooms() if name not in words)
    assert not missing, f"generator/__init__.py's docstring does not name these rooms: {missing}"
