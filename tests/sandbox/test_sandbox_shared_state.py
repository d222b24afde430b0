"""Kernel state every run shares through its read-only files: the page cache and locks (issue 39 items 1, 2).

The hostile candidates (tests/hostile/page_cache_across_runs.py, locks_across_runs.py) try the
channels end to end; the direct checks below load the system-call filter in a forked child and try
each call that can observe or change that state (`generator/sandbox/shared_state.py` lists them).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import mmap
import os
import re
import struct
import sysconfig
import threading
import uuid

import pytest
from support.paths import HOSTILE_DIR

from generator.evaluation.evaluate import evaluate_source
from generator.sandbox.jobs import SandboxConfig

TOKEN = uuid.uuid4().hex[:10]
CONFIG = SandboxConfig(timeout_s=20.0, memory_mb=256, startup_s=120)
ALARMS = ("LEAKED", "REACHED", "ESCAPED", "MEMORY CARRIED OVER")
LIBRARY = os.path.join(sysconfig.get_config_var("LIBPL") or "", sysconfig.get_config_var("LIBRARY") or "")
SYS = {
    "mincore": 27,
    "cachestat": 451,
    "io_uring_setup": 425,
    "inotify_init1": 294,
    "futex": 202,
    "perf_event_open": 298,
}  # x86_64
on_x86_64 = pytest.mark.skipif(os.uname().machine != "x86_64", reason="system call numbers of x86_64")


def _evaluate(name: str, task, repeats: int = 1, **extra) -> str:
    text = (HOSTILE_DIR / f"{name}.py").read_text()
    for key, value in {"TOKEN": TOKEN, **extra}.items():
        text = text.replace(f"@@{key}@@", value)
    fit = evaluate_source(text, [task], repeats=repeats, seed=0, config=CONFIG)
    assert fit.metadata["protections"]["held"].get("syscall_filter"), fit.metadata["protections"]
    return fit.error.message if fit.error else ""


@pytest.mark.skipif(not os.path.isfile(LIBRARY), reason="no static library of the base Python")
def test_the_page_cache_carries_nothing_across_repeats_or_commands(conv_task):
    """39.1: a mark stored in cached pages of the base Python's static library is not read back."""
    message = _evaluate("page_cache_across_runs", conv_task, repeats=2)
    assert not any(a in message for a in ALARMS), message
    message = _evaluate("page_cache_across_runs", conv_task)  # a second command
    assert not any(a in message for a in ALARMS), message


def test_locks_of_a_concurrent_run_are_out_of_reach(conv_task):
    """39.2: flock, POSIX and OFD locks held on a standard-library file, as another run would hold them."""
    path = os.__file__
    fd, ofd = os.open(path, os.O_RDONLY), os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        fcntl.lockf(fd, fcntl.LOCK_SH)
        fcntl.fcntl(ofd, 37, struct.pack("hhqqi4x", fcntl.F_RDLCK, 0, 0, 0, 0))  # F_OFD_SETLK
        message = _evaluate("locks_across_runs", conv_task, LOCKED_FILE=path)
    finally:
        os.close(fd)
        os.close(ofd)
    assert not any(a in message for a in ALARMS), message


def _in_filtered_child(body) -> dict:
    """Fork, load the run's filter (after no_new_privs, as a run does), run `body`; its dict comes back."""
    from generator.sandbox import isolation, syscall_filter

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            ctypes.CDLL(None).prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
            prot = isolation.Protections()
            prot.mark("ipc_limits", True)
            syscall_filter.install_filter(prot)
            out = {"held": prot.held["syscall_filter"], **body()}
            os.write(w, json.dumps(out).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as fh:
        report = json.loads(fh.read() or "{}")
    os.waitpid(pid, 0)
    return report


def _errno_of(call) -> int | str:
    try:
        result = call()
    except OSError as exc:
        return exc.errno
    if isinstance(result, int) and result < 0:
        return ctypes.get_errno()
    return "ok"


def _page_cache_calls() -> dict:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(os.__file__, os.O_RDONLY)
    libc.mmap.restype = ctypes.c_void_p
    addr = libc.mmap(None, 4096, mmap.PROT_READ, mmap.MAP_SHARED, fd, ctypes.c_long(0))
    vec = ctypes.create_string_buffer(1)
    return {
        "fadvise": _errno_of(lambda: os.posix_fadvise(fd, 0, 4096, os.POSIX_FADV_DONTNEED)),
        "nowait_read": _errno_of(lambda: os.preadv(fd, [bytearray(1)], 0, os.RWF_NOWAIT)),
        "pread": _errno_of(lambda: os.pread(fd, 1, 0)),
        "mincore": _errno_of(lambda: libc.syscall(SYS["mincore"], ctypes.c_void_p(addr), 4096, vec)),
        "pageout": _errno_of(lambda: libc.madvise(ctypes.c_void_p(addr), 4096, 21)),
        "cold": _errno_of(lambda: libc.madvise(ctypes.c_void_p(addr), 4096, 20)),
        "dontneed": _errno_of(lambda: libc.madvise(ctypes.c_void_p(addr), 4096, 4)),
        "cachestat": _errno_of(lambda: libc.syscall(SYS["cachestat"], fd, None, None, 0)),
        "io_uring": _errno_of(lambda: libc.syscall(SYS["io_uring_setup"], 1, None)),
        "readahead": _errno_of(lambda: libc.readahead(fd, ctypes.c_long(0), ctypes.c_size_t(4096))),
    }


@on_x86_64
def test_the_filter_refuses_every_call_that_probes_or_evicts_cached_pages():
    """39.1 for the class: no residency test without loading the page, no eviction; reading still works."""
    report = _in_filtered_child(_page_cache_calls)
    assert report.pop("held"), report
    assert report == {
        "fadvise": errno.EPERM,
        "nowait_read": errno.EPERM,
        "pread": "ok",
        "mincore": errno.EPERM,
        "pageout": errno.EPERM,
        "cold": errno.EPERM,
        "dontneed": "ok",
        "cachestat": errno.ENOSYS,
        "io_uring": errno.ENOSYS,
        "readahead": errno.EPERM,
    }, report


def _lock_calls() -> dict:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(os.__file__, os.O_RDONLY)
    query = struct.pack("hhqqi4x", fcntl.F_RDLCK, 0, 0, 0, 0)
    word = ctypes.c_int(0)
    out = {
        "flock": _errno_of(lambda: fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)),
        "posix_lock": _errno_of(lambda: fcntl.fcntl(fd, fcntl.F_SETLK, query)),
        "posix_query": _errno_of(lambda: fcntl.fcntl(fd, fcntl.F_GETLK, query)),
        "ofd_lock": _errno_of(lambda: fcntl.fcntl(fd, 37, query)),
        "lease": _errno_of(lambda: fcntl.fcntl(fd, 1024, fcntl.F_RDLCK)),
        "dnotify": _errno_of(lambda: fcntl.fcntl(os.open("/", os.O_RDONLY), 1026, 1)),
        "rw_hint": _errno_of(lambda: fcntl.fcntl(fd, 1036, struct.pack("Q", 2))),  # F_SET_RW_HINT, as root
        "getfd": _errno_of(lambda: fcntl.fcntl(fd, fcntl.F_GETFD)),
        "inotify": _errno_of(lambda: libc.syscall(SYS["inotify_init1"], 0)),
        # FUTEX_WAKE (1) without the private flag, and with it (129)
        "shared_wake": _errno_of(lambda: libc.syscall(SYS["futex"], ctypes.byref(word), 1, 1, None, None, 0)),
        "private_wake": _errno_of(lambda: libc.syscall(SYS["futex"], ctypes.byref(word), 129, 1, None, None, 0)),
        "perf": _errno_of(lambda: libc.syscall(SYS["perf_event_open"], None, 0, -1, -1, 0)),
    }
    done = threading.Event()
    cond = threading.Condition()
    threads = [
        threading.Thread(target=lambda: (cond.acquire(), cond.notify_all(), cond.release(), done.set()))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    out["threads_joined"] = done.is_set() and not any(t.is_alive() for t in threads)
    return out


@on_x86_64
def test_the_filter_refuses_locks_leases_notifications_and_shared_futex_wakes():
    """39.2 for the class: nothing keyed by a shared file's inode; threads still start, wait and join."""
    report = _in_filtered_child(_lock_calls)
    assert report.pop("held"), report
    assert report == {
        "flock": errno.ENOLCK,
        "posix_lock": errno.ENOLCK,
        "posix_query": errno.ENOLCK,
        "ofd_lock": errno.ENOLCK,
        "lease": errno.ENOLCK,
        "dnotify": errno.ENOLCK,
        "rw_hint": errno.ENOLCK,
        "getfd": "ok",
        "inotify": errno.EPERM,
        "shared_wake": errno.EPERM,
        "private_wake": "ok",
        "perf": errno.EPERM,
        "threads_joined": True,
    }, report


def test_the_shipped_winners_cannot_be_imported_and_the_error_says_why(conv_task):
    """39.6 under the editable install these tests run in (tests/project/test_wheel.py: under a wheel)."""
    text = (HOSTILE_DIR / "import_shipped_winner.py").read_text()
    fit = evaluate_source(text, [conv_task], repeats=1, seed=0, config=CONFIG)
    assert fit.error is not None and fit.error.kind == "exception", fit.error
    assert "ModuleNotFoundError" in fit.error.message and "scored for its own search" in fit.error.message, fit.error


UID_PROBE = """
import os
import re


class UidProbe:
    def __call__(self, func, searchspace):
        raise RuntimeError(f"uid {os.getuid()}")
"""


def _a_new_pid() -> int:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


@pytest.mark.skipif(os.geteuid() != 0, reason="runs get their own uid only as root")
def test_a_runs_uid_tells_nothing_of_the_hosts_pid_counter(conv_task):
    """A uid of 2e9 + the guard's host pid told each run how many processes started since the previous
    run, a counter a run moves by starting threads: a channel across repeats. Now it is drawn at random."""
    from generator.sandbox.isolation import UID_BASE

    before = _a_new_pid()
    fit = evaluate_source(UID_PROBE, [conv_task], repeats=1, seed=0, config=CONFIG)
    after = _a_new_pid()
    uid = int(re.search(r"uid (\d+)", fit.error.message).group(1))
    assert uid >= UID_BASE and not before < uid - UID_BASE < after, (before, uid - UID_BASE, after)


HONEST = """
class RandomSearch:
    def __call__(self, func, searchspace):
        while True:
            for cfg in searchspace.get_random_sample(10):
                func(cfg)
"""


@pytest.mark.skipif(not os.path.isfile(LIBRARY), reason="no static library of the base Python")
def test_a_best_row_kept_in_the_page_cache_scores_like_honest_random_search(conv_task):
    """39.1 end to end: each repeat evaluates the row an earlier one stored first (P 0.985 against random
    search's -0.078 over 40 repeats before the fix); now nothing is stored and it samples as random search does."""
    text = (HOSTILE_DIR / "page_cache_best_row.py").read_text().replace("@@TOKEN@@", TOKEN)
    honest = evaluate_source(HONEST, [conv_task], repeats=6, seed=0, config=CONFIG)
    cheat = evaluate_source(text, [conv_task], repeats=6, seed=0, config=CONFIG)
    assert honest.ok and cheat.ok, (honest.error, cheat.error)
    assert cheat.score <= honest.score + 0.02, (cheat.score, honest.score)
