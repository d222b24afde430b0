"""Sphinx configuration of the Tunesmith docs (Sphinx + MyST, like Kernel Tuner, Optuna and LLaMEA).

Build: sphinx-build -W --keep-going -b html docs docs/_build/html  (pip install -e ".[docs]")
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE / "_ext"), str(HERE.parent)]

project = "Tunesmith"
author = "the Tunesmith authors"
copyright = "2026, the Tunesmith authors (MIT)"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "tunesmith_docs",  # docs/_ext: reference and results pages generated from the code and benchmark JSON
]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build", "_generated", "Thumbs.db", ".DS_Store"]
suppress_warnings = ["myst.header"]  # generated fragments start at ## inside their page

html_theme = "furo"
html_title = "Tunesmith"
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": False}
nitpicky = False  # internal references are checked (-W); Python types of third parties are not
html_static_path = ["_static"]
html_css_files = ["tunesmith.css"]
