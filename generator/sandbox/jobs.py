"""Runs untrusted optimizer code in isolated processes; the objective oracle stays on this side.

`run_job(job)` starts one sandbox host (`generator.sandbox.child`), hands it only the public
`SpaceSpec`s and the candidate's source, and then serves every `func(cfg)` of every run from
an `Oracle` that lives here, in the evaluating process: it looks the objective up, charges the
budget, records the trace and answers value or "stop". The child never holds objective values,
cache paths or the scorer, and the score is computed here from the recorded trace.

Walls (see README "Security model"): wall-clock timeout per run that kills the run's whole
process tree, RLIMIT_CPU/AS/NPROC/FSIZE/NOFILE, capped output, whitelisted environment, fresh
working directory per run; where the OS allows, new mount/PID/network/IPC namespaces, an
allowlist root (only the Python installation, read-only; `root_fs.py`), a fresh keyring, a
system-call filter (`syscall_filter.py`), an unprivileged uid per run and no capabilities.
"""

from __future__ import annotations

import os
import site
import sys
from dataclasses import dataclass, field
from pathlib import Path

from generator.config.defaults import RUN_TIMEOUT_S
from generator.errors import TunesmithError
from generator.scoring.fitness import CandidateError
from generator.scoring.score import Budget, Trace
from generator.tasks.cache import Task

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # the generator package
# What a run must never see of Tunesmith: a candidate may import the standard library, numpy, scipy and
# Kernel Tuner (the host's view of the installation holds no other package: view.py), nothing of Tunesmith itself; not its code
# and shipped caches, and not the exported winners in generated_algorithms (a candidate that imports the
# shipped best optimizer is scored for that optimizer, not for its own code). From a checkout (an
# editable install, PYTHONPATH) that is the whole checkout. From an installed wheel (`pip install .`) the
# packages sit in site-packages beside numpy and scipy, which a run must keep seeing: there it is each of
# the distribution's top-level packages (pyproject.toml's `packages.find`), covered inside the kept
# site-packages.
INSTALLED = PACKAGE_DIR.parent.name in ("site-packages", "dist-packages")
PROJECT_ROOT = PACKAGE_DIR if INSTALLED else PACKAGE_DIR.parent
PROJECT_PACKAGES = ("generator", "generated_algorithms")
PROJECT_PATHS = tuple(PACKAGE_DIR.parent / name for name in PROJECT_PACKAGES) if INSTALLED else (PROJECT_ROOT,)


class SandboxError(TunesmithError):
    """The sandbox itself could not run (not the candidate's fault)."""


@dataclass(frozen=True)
class SandboxConfig:
    """Limits and walls of a sandbox job; times in seconds, sizes in MiB/KiB."""

    timeout_s: float = RUN_TIMEOUT_S  # wall clock of one run (one repeat on one task)
    startup_s: float = 60.0  # allowance for the host's imports (slow on a loaded machine)
    memory_mb: int = 1024  # address space a run may add to the interpreter's
    nproc: int = 32  # processes + threads a run may have
    file_mb: int = 64  # largest file a run may write
    scratch_mb: int = 64  # size of its private /tmp
    output_kb: int = 64  # captured stdout+stderr kept (head and tail)
    isolate: bool = True  # namespaces, hidden paths, unprivileged uid (where the OS allows)
    # A run that reaches timeout_s after evaluating something ends there and is scored on what it
    # found, as Kernel Tuner's real-time budget ends a strategy whose own code is slow (README:
    # "What a candidate may assume"); False: it fails as a timeout. No evaluation: always a timeout.
    cut_slow_runs: bool = True
    hidden_paths: tuple[str, ...] = ()  # extra paths to hide from candidates


@dataclass
class Job:
    """One sandbox host process: a candidate and the runs (task index, repeat, seed) it executes."""

    source: str
    class_name: str
    init_kwargs: dict
    tasks: list[Task]
    budgets: list[Budget]
    runs: list[tuple[int, int, int]]
    config: SandboxConfig = field(default_factory=SandboxConfig)
    # Builds each run's oracle as (task, budget, space) -> Oracle-like (call_row, budget_spent_fraction,
    # calls, trace()); None = generator.scoring.oracle.Oracle. Live tasks pass their measuring oracle here.
    oracle_factory: object = None
    # LLM seeding (generator.scoring.seeding): (task index, repeat) -> SeedRun, evaluated before the candidate
    # starts; charged to the run's oracle first, and the candidate's random samples start with them.
    seeds: dict = field(default_factory=dict)


@dataclass
class RunOutcome:
    """One run: its trace (from the Oracle, never from the child) or why it failed."""

    task: int
    repeat: int
    trace: Trace | None
    error: CandidateError | None
    wall_s: float
    protections: dict
    cut: bool = False  # ended at its wall-clock limit before its budget was spent (SandboxConfig.cut_slow_runs)


@dataclass
class JobOutcome:
    runs: list[RunOutcome]
    error: CandidateError | None
    output: str
    wall_s: float


def default_hidden_paths(tasks: list[Task], extra=()) -> list[str]:
    """Where answers could be read from: the project (from a wheel: its packages), ../shared, the tasks'
    folders, home dirs."""
    paths = [*PROJECT_PATHS, PROJECT_ROOT.parent / "shared", Path.home(), Path("/root"), Path("/home")]
    if os.environ.get("TUNESMITH_BENCHMARK_HUB"):
        paths.append(Path(os.environ["TUNESMITH_BENCHMARK_HUB"]))
    for t in tasks:
        if t.source is not None:
            src = Path(t.source).resolve()
            paths += [src.parent, src.parent.parent]  # e.g. cachefiles/<app> and cachefiles
    paths += [Path(p) for p in extra]
    out = []
    for p in paths:
        s = str(p)
        if s not in out and s != "/":
            out.append(s)
    return out


def interpreter_paths() -> list[str]:
    """What the child's interpreter must keep seeing (read-only): Python and its installed packages.

    The prefixes (a venv's and the Python it was made from), the interpreter's directory, the site
    directories and every `sys.path` entry that holds installed packages: lazily imported modules
    (numpy.ma) are read after the walls go up, wherever the venv lives (~/.venv, /tmp, conda).
    Never kept: the project (the host imports what a run needs of it before the walls go up, so a
    candidate's `import generator.scoring.oracle` finds nothing), nor anything that would contain a home
    directory, the project or a scratch directory (keeping it would expose all of it).
    """
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, getattr(sys, "base_exec_prefix", sys.exec_prefix)}
    keep = set(prefixes) | {os.path.dirname(os.path.realpath(sys.executable))}
    keep.update(p for p in site.getsitepackages() if os.path.isdir(p))
    user_site = site.getusersitepackages()
    if isinstance(user_site, str) and os.path.isdir(user_site):
        keep.add(user_site)
    keep.update(p for p in sys.path if _holds_installed_packages(p, prefixes))
    keep = {os.path.realpath(k) for k in keep if k}
    # an installed package's directory lies inside the kept site-packages: it is covered there (it is
    # among the hidden paths), so keeping its site-packages does not expose it
    project = () if INSTALLED else (PROJECT_ROOT,)
    never = [
        os.path.realpath(p)
        for p in ("/", "/root", "/home", Path.home(), *project, "/tmp", "/var/tmp", "/dev/shm", "/run/lock")
    ]
    return sorted(k for k in keep if not any(_within(n, k) for n in never))


def _within(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _holds_installed_packages(entry: str, prefixes) -> bool:
    """A sys.path directory of the installation: under a prefix, a site directory, or with *.dist-info."""
    if not entry or not os.path.isdir(entry):
        return False  # '' (the current directory), zip files, path hooks
    real = os.path.realpath(entry)
    if any(_within(real, os.path.realpath(p)) for p in prefixes):
        return True
    if _within(real, str(PROJECT_ROOT)):
        return False  # the project's own source (PYTHONPATH, an editable install) stays hidden
    if os.path.basename(real) in ("site-packages", "dist-packages"):
        return True
    try:  # `pip install --target DIR`, PYTHONUSERBASE, ...: installed packages leave metadata
        return any(n.endswith((".dist-info", ".egg-info")) for n in os.listdir(real))
    except OSError:
        return False


def child_env(workdir: str) -> dict:
    """A whitelisted environment: nothing of the caller's (API keys, tokens) gets through."""
    py_path = [p for p in sys.path if p and os.path.isdir(p) and not p.endswith(".zip")]
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": workdir,
        "TMPDIR": workdir,
        "PYTHONPATH": os.pathsep.join(py_path),
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "NUMEXPR_NUM_THREADS": "1",
        "TUNESMITH_SANDBOX": "1",
        "MALLOC_ARENA_MAX": "2",  # each thread of a run would otherwise reserve a 64 MiB arena of its address space
    }
