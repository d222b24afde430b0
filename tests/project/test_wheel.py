"""A wheel works from any directory: prompts, problems and campaigns travel inside it (issue 24, item 2).

The wheel is built from a copy of the checkout (a build writes build/ and *.egg-info next to the
sources), installed without dependencies into a venv that sees this process's packages, and run from
an empty folder, so nothing can come from the checkout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from support.nested_venv import make_nested_venv
from support.paths import ROOT

CACHES = "generator/_data/problems/caches"  # the answer key, where a wheel installs it (generator/resources.py)
SKIP = shutil.ignore_patterns(".git", "results", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".venv")


def _pip(*args: str, python: str = sys.executable) -> None:
    proc = subprocess.run(
        [python, "-m", "pip", "--disable-pip-version-check", "-q", *args], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_wheel_installed_outside_the_checkout_finds_its_prompts_problems_and_campaigns(tmp_path):
    """`tunesmith prompt campaigns/quickstart.toml` and `stats problem:gemm/H200` from a wheel, in an empty folder."""
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=SKIP, symlinks=True)
    _pip("wheel", "--no-deps", "-w", str(tmp_path / "dist"), str(source))
    wheel = next((tmp_path / "dist").glob("tunesmith-*.whl"))
    python, purelib = make_nested_venv(tmp_path / "venv")
    _pip("install", "--no-deps", str(wheel), python=str(python))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}

    def tunesmith(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(python), "-c", "import sys; from generator.cli import main; sys.exit(main())", *args],
            capture_output=True,
            text=True,
            cwd=elsewhere,
            env=env,
            timeout=300,
        )

    where = subprocess.run(
        [str(python), "-c", "import generator; print(generator.__file__)"],
        capture_output=True,
        text=True,
        cwd=elsewhere,
        env=env,
        check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(purelib), f"generator came from {where}, not from the wheel"
    # the data travels as package data under generator/_data/ (setup.py), not as links to the checkout; the probe
    # below must find these caches hidden, so they must be there to hide
    assert (purelib / CACHES / "gemm" / "H200.json.gz").is_file(), "the wheel carries no caches under generator/_data"
    prompt = tunesmith("prompt", "campaigns/quickstart.toml")
    assert prompt.returncode == 0, prompt.stderr[-3000:]
    assert "## Search-space statistics" in prompt.stdout and "## Interface" in prompt.stdout
    assert "gemm" in prompt.stdout.lower()
    stats = tunesmith("stats", "problem:hotspot/H200")
    assert stats.returncode == 0, stats.stderr[-3000:]
    assert "hotspot" in stats.stdout
    assert not any(elsewhere.iterdir()), "reading the shipped data writes nothing in the current directory"

    # A run in the sandbox still sees the packages installed beside Tunesmith (numpy.ma, imported lazily,
    # lives there in a user's venv), but nothing of Tunesmith itself: its code, its shipped caches and the
    # exported winners in generated_algorithms are covered (issue 39 item 6).
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE.replace("PURELIB", repr(str(purelib))).replace("CACHES", repr(CACHES)))
    run = tunesmith("evaluate", str(probe), "--tasks", "problem:gemm/H200", "--repeats", "1")
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    assert "walls held" in run.stdout


PROBE = """
class Probe:
    def __call__(self, func, searchspace):
        import importlib
        import os
        seen = {p: os.path.exists(os.path.join(PURELIB, p)) for p in
                ("generated_algorithms/__init__.py", "generated_algorithms/archive/lcb_wide_switching_nearest.py",
                 "generator/__init__.py", CACHES)}
        seen["dist-info beside them"] = any(n.endswith(".dist-info") for n in os.listdir(PURELIB))
        try:
            importlib.import_module("generated_algorithms.archive.lcb_wide_switching_nearest")
            seen["import the shipped winner"] = True
        except ImportError:
            seen["import the shipped winner"] = False
        expected = {"generated_algorithms/__init__.py": False,
                    "generated_algorithms/archive/lcb_wide_switching_nearest.py": False, "generator/__init__.py": False,
                    CACHES: False, "dist-info beside them": True, "import the shipped winner": False}
        if seen != expected:
            raise RuntimeError(f"site-packages as the run sees it: {seen}")
        func(searchspace.get_random_sample(1)[0])
"""
