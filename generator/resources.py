"""Where Tunesmith's data lives: the prompt templates, the problems (their specs, kernels and measured caches,
which are the answer key a candidate must never see) and the shipped campaign files.

In a checkout (an editable install, PYTHONPATH) they are the top-level folders `prompts/`, `problems/` and
`campaigns/` beside the package: data and code stay apart in the source tree. A wheel carries the same folders
as package data under `generator/_data/` (setup.py copies them in at build time). Inside the package path
they sit behind the same sandbox wall that hides the package's code (sandbox/jobs.py), so a candidate run
from an installed wheel cannot read the caches either (tests/project/test_wheel.py probes it).

This module imports nothing of Tunesmith: every room may ask it where the data is.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
WHEEL_DATA = PACKAGE_DIR / "_data"  # only an installed wheel has it (setup.py's build step makes it)
DATA_FOLDERS = ("prompts", "problems", "campaigns")


def data_dir(name: str) -> Path:
    """The folder `name` (one of DATA_FOLDERS): the wheel's copy when installed, else the checkout's."""
    if name not in DATA_FOLDERS:
        raise ValueError(f"{name!r} is not one of Tunesmith's data folders {DATA_FOLDERS}")
    # the wheel's copy first: beside an installed package the parent folder is site-packages, where an
    # unrelated distribution could have put a folder of the same name
    root = WHEEL_DATA if WHEEL_DATA.is_dir() else PACKAGE_DIR.parent
    return root / name


PROMPTS_DIR = data_dir("prompts")
PROBLEMS_DIR = data_dir("problems")
CAMPAIGNS_DIR = data_dir("campaigns")
