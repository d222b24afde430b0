"""Helpers of the fault tests (issue 15): a small campaign file, and `tunesmith` in its own process."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from support.paths import ROOT

FAKE_KEY = "sk-fake-faults-key-0123456789"


# A candidate whose only hyperparameter is its sample size; runs stop when the budget is spent (HPO tests).
SAMPLER_SOURCE = """
class Sampler:
    hyperparameters = {"batch": {"type": "int", "low": 1, "high": 64, "default": 8}}

    def __init__(self, budget=5000, batch=8):
        self.batch = batch

    def __call__(self, func, searchspace):
        while True:
            for cfg in searchspace.get_random_sample(self.batch):
                func(cfg)
"""


def reply_for(body: dict) -> str:
    """A deterministic reply that depends on the prompt: a random sampler of batch size n."""
    prompt = body["messages"][-1]["content"]
    n = int(hashlib.sha256(f"{prompt}{body.get('seed')}".encode()).hexdigest()[:6], 16) % 40 + 1
    op = re.search(r"operator: (\w+)", prompt).group(1)
    return (
        f"# Sampler{n}: {op} gives random batches of {n}\n```python\nclass Sampler{n}:\n"
        f"    hyperparameters = {{}}\n\n    def __init__(self, budget=5000):\n        self.budget = budget\n\n"
        f"    def __call__(self, func, searchspace):\n        while True:\n"
        f"            for c in searchspace.get_random_sample({n}):\n                func(c)\n```\n"
    )


def write_campaign(
    path: Path,
    api_base: str,
    run_dir: Path,
    budget: int = 6,
    llm: str = "",
    extra: str = "",
    retries: int = 1,
    timeout: float = 10,
) -> Path:
    """A campaign of `budget` candidates on one hub task, one repeat, asking the fake server."""
    path.write_text(f'''name = "{path.stem}"
[llm]
model = "openai/fake"
api_base = "{api_base}"
retries = {retries}
backoff = 0.01
seed = 11
timeout = {timeout}
max_consecutive_errors = 2
{llm}
[evolution]
n_parents = 2
n_offspring = 3
budget = {budget}
seed = 3
[tasks]
train = ["hub:convolution_milo/A100"]
[evaluation]
repeats = 1
timeout = 30
[output]
run_dir = "{run_dir}"
{extra}''')
    return path


def tunesmith(*args: str, env: dict | None = None, **popen) -> subprocess.Popen:
    """`tunesmith ARGS` in a new process (and session, so a test can signal it alone)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.Popen(
        [sys.executable, "-m", "generator.cli", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **popen,
    )


def wait_for_lines(path: Path, n: int, proc: subprocess.Popen | None = None, limit_s: float = 180) -> None:
    """Wait until `path` holds n complete lines (e.g. n candidates recorded)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().count("\n") >= n:
            return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the process ended first: {proc.communicate()}")
        time.sleep(0.05)
    raise AssertionError(f"{path}: fewer than {n} lines after {limit_s} s")


def crash_then_resume(make, evaluate, digest, expected, crash_at: int) -> None:
    """A campaign that dies at its `crash_at`-th evaluation keeps a prefix of the uninterrupted run's records
    (`digest` of a run directory, e.g. its candidates and generation states), and a resume ends exactly where
    that run did. `make(name, **overrides)` writes the campaign file of a run named `name`."""
    import pytest

    from generator.campaign.run import resume, run_campaign

    calls = []

    def crashing(code, *args):
        calls.append(code)
        if len(calls) == crash_at:
            raise RuntimeError("power cut during evaluation")
        return evaluate(code, *args)

    crashed = make("crashed", concurrency=3)
    with pytest.raises(RuntimeError, match="power cut"):
        run_campaign(crashed, progress=False, evaluate=crashing)
    run_dir = crashed.parent / "crashed"
    part = digest(run_dir)
    assert 0 < len(part[0]) < len(expected[0])  # the candidates: some, not all
    assert all(p == e[: len(p)] for p, e in zip(part, expected))
    assert resume(run_dir, progress=False, evaluate=evaluate).state == "finished"
    assert digest(run_dir) == expected
