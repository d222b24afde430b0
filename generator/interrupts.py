"""SIGTERM is handled as Ctrl-C is: the work stops cleanly and can be resumed.

`kill PID`, a batch system's time limit or a container stop send SIGTERM, which by default ends
Python at once: a campaign's status would say "running" for a dead run. Here it raises
`Terminated`, a KeyboardInterrupt, so every clean-up written for Ctrl-C runs for it too. A second
SIGTERM during that clean-up ends the process at once (as a second Ctrl-C would be expected to).
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from contextlib import contextmanager


class Terminated(KeyboardInterrupt):
    """The process was asked to stop by SIGTERM."""

    signum = signal.SIGTERM
    reason = "terminated (SIGTERM)"


def _terminate(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process
    raise Terminated()


@contextmanager
def sigterm_as_interrupt():
    """Within the block, SIGTERM raises Terminated (only the main thread can take signals)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def reason(exc: KeyboardInterrupt) -> str:
    """'terminated (SIGTERM)' or 'interrupted (Ctrl-C)'."""
    return getattr(exc, "reason", "interrupted (Ctrl-C)")


def exit_code(exc: KeyboardInterrupt) -> int:
    """128 + the signal's number, as a shell reports a process that a signal stopped."""
    return 128 + int(getattr(exc, "signum", signal.SIGINT))


def resume_hint(exc: BaseException) -> str:
    """'; the run is saved, to continue: tunesmith resume RUN' from the interrupt, or from the one it
    interrupted (a second Ctrl-C during the clean-up of the first must not lose the line)."""
    seen = exc
    while seen is not None:
        command = getattr(seen, "resume_command", None)
        if command:
            return f"; {getattr(seen, 'saved', 'the run is saved')}, to continue: {command}"
        seen = seen.__context__
    return ""


@contextmanager
def says_how_to_continue(command: str, applies=lambda: True):
    """A stop within the block carries `command` (the resume line), unless it has one or `applies()` is false."""
    try:
        yield
    except KeyboardInterrupt as exc:
        if not getattr(exc, "resume_command", None) and applies():
            exc.resume_command = command
        raise


def exit_now(code: int) -> None:
    """End the process now, after the exit handlers (sandbox pool, local LLM server, Dask), without
    waiting for the threads still at work: an LLM request in flight, an evaluation whose sandbox runs
    go on for tens of seconds. A stopped campaign has recorded what counts; whatever those threads
    would still write is made again on resume. (Python's own exit joins every pool thread first, so a
    stop took as long as the slowest of them, or for ever when one waited on a cancelled job.)"""
    def at_once(signum, frame):  # another Ctrl-C or SIGTERM: not even the exit handlers
        os._exit(code)

    signal.signal(signal.SIGINT, at_once)
    signal.signal(signal.SIGTERM, at_once)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    try:
        atexit._run_exitfuncs()
    finally:
        os._exit(code)


def quiet_stdout() -> None:
    """Point stdout at /dev/null: its reader is gone (`| head`), so the flush at exit stays quiet."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
