"""`.ci/run` runs the README's test command exactly, in a fresh venv outside the repository (issue 24, item 1)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from support.paths import ROOT

PROBE = (
    "python3 -c \"import sys, os; open('ran.txt', 'w').write(repr((sys.prefix, sys.base_prefix, "
    "os.environ.get('VIRTUAL_ENV'))))\""
)


def _run_ci(tmp_path: Path, readme: str) -> tuple[subprocess.CompletedProcess, Path]:
    """.ci/run in a copy of the repository holding only `readme`, with a stub hub and browser."""
    repo = tmp_path / "repo"
    (repo / ".ci").mkdir(parents=True)
    shutil.copy(ROOT / ".ci" / "run", repo / ".ci" / "run")
    (repo / "README.md").write_text(readme)
    return _run_ci_in(repo, tmp_path)


def _run_ci_in(repo: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess, Path]:
    """.ci/run in `repo` as it stands, with a stub hub and browser."""
    hub = tmp_path / "hub"
    (hub / "cachefiles").mkdir(parents=True)
    stubs = tmp_path / "bin"  # the browser test's tools, so CI's apt-get step is not taken here
    stubs.mkdir()
    for tool in ("chromium", "chromedriver"):
        (stubs / tool).write_text("#!/bin/sh\n")
        (stubs / tool).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME")}
    env.update(TUNESMITH_BENCHMARK_HUB=str(hub), PATH=f"{stubs}:{env['PATH']}")
    proc = subprocess.run(["bash", str(repo / ".ci" / "run")], capture_output=True, text=True, env=env, timeout=300)
    return proc, repo


def test_ci_run_runs_the_readme_test_command_in_a_fresh_venv(tmp_path):
    """The command comes from README.md's "Tests:" block and runs under a new venv's python3, removed after."""
    proc, repo = _run_ci(tmp_path, f"# x\n\nTests:\n\n    {PROBE}\n\nMore text.\n\n    not this\n")
    assert proc.returncode == 0, proc.stderr[-2000:]
    prefix, base, virtual_env = eval((repo / "ran.txt").read_text())
    assert prefix != base and prefix == virtual_env, (prefix, base, virtual_env)
    assert not Path(prefix).is_relative_to(repo), "the venv must live outside the repository"
    assert not Path(prefix).exists(), "the venv is removed when CI ends"


def test_ci_run_refuses_a_readme_without_a_test_command(tmp_path):
    """No "Tests:" block in the README is one line and a non-zero exit, not a silent pass."""
    proc, _ = _run_ci(tmp_path, "# x\n\nNo tests here.\n")
    assert proc.returncode != 0
    assert "README.md has no test command" in proc.stderr


def test_ci_run_fails_on_code_that_ruff_would_reformat(tmp_path):
    """The lint gate: with a [tool.ruff] table in pyproject.toml, unformatted code fails CI after the tests."""
    version = next(
        line.split("==")[1].strip('",')
        for line in (ROOT / "pyproject.toml").read_text().splitlines()
        if line.strip().startswith('"ruff==')
    )
    repo = tmp_path / "repo"
    (repo / ".ci").mkdir(parents=True)
    shutil.copy(ROOT / ".ci" / "run", repo / ".ci" / "run")
    (repo / "README.md").write_text(f"# x\n\nTests:\n\n    python3 -m pip install -q ruff=={version}\n")
    (repo / "pyproject.toml").write_text("[tool.ruff]\nline-length = 120\n")
    (repo / "bad.py").write_text("x=1\n")
    proc, _ = _run_ci_in(repo, tmp_path)
    assert proc.returncode != 0
    assert "1 file would be reformatted" in proc.stdout + proc.stderr
