"""The pool of idle sandbox hosts, and `run_job`: one job in one host (spawned or reused)."""

from __future__ import annotations

import atexit
import os
import threading

from generator.sandbox.host import MAX_IDLE_HOSTS, Host
from generator.sandbox.jobs import Job, JobOutcome

_POOL: list[Host] = []
_POOL_LOCK = threading.Lock()


def acquire_host() -> Host:
    """An idle pooled host, or a new one."""
    with _POOL_LOCK:
        while _POOL:
            host = _POOL.pop()
            if host.alive():
                return host
            host.close()
    return Host()


def release_host(host: Host) -> None:
    """Back to the pool if it ended cleanly, else killed."""
    if host.reusable and host.alive():
        with _POOL_LOCK:
            if len(_POOL) < MAX_IDLE_HOSTS:
                _POOL.append(host)
                return
    host.close()


def close_pool() -> None:
    """Kill every idle host (at exit; tests use it to start from nothing)."""
    with _POOL_LOCK:
        hosts, _POOL[:] = list(_POOL), []
    for host in hosts:
        host.close()


def _forget_pool_in_child() -> None:
    # A forked copy of the evaluating process must not talk to (or keep alive) its parent's hosts.
    for host in _POOL:
        host.ctl_sock.close()
        for fd in (host.ctl_up, host.out):
            try:
                os.close(fd)
            except OSError:
                pass
    _POOL.clear()


atexit.register(close_pool)
os.register_at_fork(after_in_child=_forget_pool_in_child)


def run_job(job: Job) -> JobOutcome:
    """Run a job's runs in one sandbox host; serve the oracle; return traces or the first error."""
    host = acquire_host()
    try:
        return host.serve(job)
    finally:
        release_host(host)
