"""Interrupted HPO trials are run again, so a killed `tunesmith hpo` loses no trial.

A trial is interrupted when its process dies (kill -9, the out-of-memory killer, a lost node) or is
stopped (Ctrl-C) before the trial ends. Optuna's heartbeat notices a dead trial only on RDB
storages and only after its grace period (minutes), so a study restarted at once would still count
the dead RUNNING trial toward --trials and never finish it. Hence each trial notes its owner (host,
PID and the process's start time, so a reused PID is not mistaken for it); a RUNNING trial whose
owner on this host is gone is failed at once, and the heartbeat covers owners on other hosts.

Every interrupted trial -- failed without an "error" (that is a real failure of the candidate) and
not a surplus trial -- is queued again once with the same values, marked as Optuna's
RetryHeartbeatStaleTrialCallback marks a retry ("failed_trial", "retry_history"), so the study reaches
--trials finished trials. A trial interrupted MAX_RETRY times is given up; reports count
interrupted trials apart from failed ones.
"""

from __future__ import annotations

import logging
import os
import socket
from contextlib import contextmanager

import optuna

OWNER = "tunesmith:owner"  # system attribute: "host pid start-time"
MAX_RETRY = 3
_State = optuna.trial.TrialState


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), None when there is no such process."""
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except FileNotFoundError:
        return None
    except OSError:
        return "?"
    return stat.rsplit(")", 1)[1].split()[19]


def _me() -> str:
    return f"{socket.gethostname()} {os.getpid()} {_start_time(os.getpid()) or '?'}"


def owner_words(owner: str) -> str:
    """'process 4242 on host-a' (or 'on this host') for a noted owner 'host pid start-time'."""
    try:
        host, pid, _start = owner.split(" ")
    except ValueError:
        return owner
    return f"process {pid} on {'this host' if host == socket.gethostname() else host}"


def claim(trial: optuna.Trial) -> None:
    """Note this process as the trial's owner (first thing in the objective)."""
    trial.storage.set_trial_system_attr(trial._trial_id, OWNER, _me())


def _owner_gone(owner: str) -> bool:
    """True when the noted owner ran on this host and no longer runs."""
    try:
        host, pid, start = owner.split(" ")
        pid = int(pid)
    except ValueError:
        return False
    if host != socket.gethostname():
        return False  # another machine: Optuna's heartbeat (RDB storages) decides
    now = _start_time(pid) if os.path.isdir("/proc") else _alive_without_proc(pid)
    return now is None or (now != start and "?" not in (now, start))


def _alive_without_proc(pid: int) -> str | None:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return "?"


def interrupted(trial) -> bool:
    """A trial that ended without a result of its own: its process died or was stopped."""
    return trial.state == _State.FAIL and "error" not in trial.user_attrs and "surplus" not in trial.user_attrs


def recover(study: optuna.Study) -> int:
    """Fail the RUNNING trials of dead owners on this host, queue every interrupted trial again once.

    Returns the number of trials queued again by this call.
    """
    storage = study._storage
    for t in study.get_trials(deepcopy=False, states=(_State.RUNNING,)):
        owner = t.system_attrs.get(OWNER)
        if owner and _owner_gone(owner):
            try:
                storage.set_trial_state_values(t._trial_id, state=_State.FAIL)
            except optuna.exceptions.UpdateFinishedTrialError:
                pass  # another process failed it first
    trials = study.get_trials(deepcopy=False)
    retried = {n for t in trials for n in t.system_attrs.get("retry_history", [])}
    queued = 0
    for t in trials:
        if not interrupted(t) or t.number in retried:
            continue
        history = [*t.system_attrs.get("retry_history", []), t.number]
        if len(history) > MAX_RETRY:
            continue
        attrs = {k: v for k, v in t.system_attrs.items() if k != OWNER}
        attrs.update(failed_trial=history[0], retry_history=history)
        study.add_trial(
            optuna.trial.create_trial(
                state=_State.WAITING, params=t.params, distributions=t.distributions, system_attrs=attrs
            )
        )
        queued += 1
    return queued


def same_retry(a, b) -> bool:
    """Two queued copies of one interrupted trial (two processes recovered it at once)."""
    history = a.system_attrs.get("retry_history")
    return bool(history) and history == b.system_attrs.get("retry_history")


class _QuietInterrupt(logging.Filter):
    """Drops Optuna's report of a trial that Ctrl-C (or SIGTERM) stopped, traceback and all, and
    everything it logs after: the process is stopping, and the command says so in one line."""

    stopping = False

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], KeyboardInterrupt):
            self.stopping = True
        return not self.stopping


@contextmanager
def quiet_interrupts():
    """Within the block, a trial interrupted by Ctrl-C is not logged as a failure with a traceback
    (it is an interrupted trial, run again on resume)."""
    logger = logging.getLogger("optuna.study._optimize")
    quiet = _QuietInterrupt()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)
