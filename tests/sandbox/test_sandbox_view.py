"""The host's view of the installation in RAM (generator/sandbox/view.py; issue 39 item 1).

A run reads the standard library, numpy, scipy, Kernel Tuner and their shared libraries from a
tmpfs copy that its host made when it started: every page is always cached, so what one run reads
cannot tell a later run anything. These tests attack it with a bit kept in the page cache (read to
set it, the major-fault counter to test it) and check what the view holds and lets honest code do.
"""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path

import pytest
from support.paths import HOSTILE_DIR

from generator.evaluation.evaluate import evaluate_source
from generator.sandbox.jobs import SandboxConfig
from generator.sandbox.pool import close_pool

CONFIG = SandboxConfig(timeout_s=20.0, memory_mb=512, startup_s=120)
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the view is made in the host's own mount namespace: root")

HONEST = """
import itertools, math, random, threading
import numpy as np
import scipy.optimize
import kernel_tuner.util


class HonestImports:
    def __call__(self, func, searchspace):
        seen = []
        worker = threading.Thread(target=lambda: seen.append(math.sqrt(np.float64(4.0))))
        worker.start()
        worker.join()
        for cfg in itertools.islice(searchspace.get_random_sample(40), 20):
            func(cfg)
        assert seen == [2.0] and random.random() < 1
"""

PROBE = """
import os, sys


class Probe:
    def __call__(self, func, searchspace):
        import pandas  # installed beside Tunesmith, but not a package a candidate may import
"""


def _evict(path: str) -> None:
    """Drop the file's pages from the host's page cache, so that the first run finds it cold."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def test_a_page_one_run_reads_tells_the_next_run_nothing(conv_task):
    source = (HOSTILE_DIR / "page_cache_fault_counter.py").read_text().replace("@@REPORT@@", "1")
    _evict(os.path.join(sysconfig.get_paths()["stdlib"], "pydoc_data", "topics.py"))
    seen, held = [], []
    for _ in range(2):  # two commands: a fresh host each time
        close_pool()
        fit = evaluate_source(source, [conv_task], repeats=1, config=CONFIG)
        assert fit.error is not None and "PAGE WAS" in fit.error.message, fit.error
        seen.append(fit.error.message.split(" (line")[0])
        held.append(fit.metadata["protections"]["held"].get("shared_files_in_ram"))
    assert seen[0] == seen[1], f"the first run's read was seen by the second: {seen}"
    assert held == [True, True]
    assert not any(".view" in line for line in Path("/proc/self/mounts").read_text().splitlines())


def test_honest_code_runs_from_the_view_and_other_packages_are_absent(conv_task):
    fit = evaluate_source(HONEST, [conv_task], repeats=1, config=CONFIG)
    assert fit.error is None and fit.score is not None, fit.error
    note = next(n for n in fit.metadata["protections"]["notes"] if n.startswith("shared_files_in_ram"))
    assert "held" in note and "MB" in note
    fit = evaluate_source(PROBE, [conv_task], repeats=1, config=CONFIG)
    assert fit.error is not None and "No module named 'pandas'" in fit.error.message, fit.error


def test_the_view_holds_the_interpreter_and_its_libraries_not_the_static_library():
    from generator.sandbox.view import plan

    files, links = plan()
    names = {os.path.basename(f) for f in files}
    assert any(n.startswith("libc.so") for n in names) and "_multiarray_umath" in " ".join(names)
    assert os.path.realpath(os.sys.executable) in files
    assert not any(n.startswith("libpython") and n.endswith(".a") for n in names), "issue 39 kept bits in it"
    assert not any("/pandas/" in f or "/test/" in f.split("python3.")[-1][:8] for f in files)


def _shmem_mb() -> int:
    with open("/proc/meminfo") as fh:
        return int(next(line for line in fh if line.startswith("Shmem:")).split()[1]) // 1024


def test_a_killed_host_leaves_no_copy_in_memory(conv_task):
    """The view lives in the host's own mount namespace: the kernel frees it however the host ends."""
    import signal

    from generator.sandbox import pool

    close_pool()
    fit = evaluate_source(HONEST, [conv_task], repeats=1, config=CONFIG)
    assert fit.error is None, fit.error
    host = pool._POOL[0]
    # measured across the kill only, and as a drop: other processes on the machine (another test run's
    # sandboxes, say) may add shared memory meanwhile, which an absolute bound would count against the host
    during = _shmem_mb()
    os.kill(host.proc.pid, signal.SIGKILL)
    host.proc.wait(timeout=30)
    close_pool()
    assert during - _shmem_mb() > 200, "the view (over 300 MB) outlived its host"
