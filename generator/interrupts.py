"""SIGTERM is handled as Ctrl-C is: the work stops cleanly and can be resumed.

`kill PID`, a batch system's time limit or a container stop send SIGTERM, which by default ends
Python at once: a campaign's status would say "running" for a dead run. Here it raises
`Terminated`, a KeyboardInterrupt, so every clean-up written for Ctrl-C runs for it too. A second
SIGTERM during that clean-up ends the process at once (as a second Ctrl-C would be expected to).

The exception a signal raises lands wherever the main thread is, and some code there loses it: an
extension that turns it into its own error (pydantic while litellm is imported) or C code that
clears errors. So the `tunesmith` command also gives every stop a deadline (`stop_within_seconds`):
if the process has not ended GRACE_S after the signal, a watchdog prints the line that says how to
continue and ends it. Records are crash-safe (kill -9 loses nothing), so ending there is safe.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager


class Terminated(KeyboardInterrupt):
    """The process was asked to stop by SIGTERM."""

    signum = signal.SIGTERM
    reason = "terminated (SIGTERM)"


GRACE_S = 5.0  # a stop ends the command within this long, even where its exception was lost
_HINTS: list = []  # (command, applies) of the says_how_to_continue blocks the main thread is in
_DEADLINE = {"enabled": False, "armed": False, "reported": False, "signum": None}


def _terminate(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process
    _arm_deadline(signum, Terminated.reason)
    raise Terminated()


def _interrupt(signum, frame):
    _arm_deadline(signum, "interrupted (Ctrl-C)")
    signal.default_int_handler(signum, frame)


def stop_within_seconds() -> None:
    """For the command's own process only (it may end the process): Ctrl-C and SIGTERM end it within
    GRACE_S, with the resume line, even if the KeyboardInterrupt they raise is lost on its way."""
    if threading.current_thread() is threading.main_thread():
        _DEADLINE["enabled"] = True
        signal.signal(signal.SIGINT, _interrupt)


def stop_reported() -> None:
    """The command has printed its line about the stop: the watchdog need not print it again."""
    _DEADLINE["reported"] = True


def stop_signalled() -> KeyboardInterrupt | None:
    """The stop (Terminated or KeyboardInterrupt) a signal asked for, once one did; else None. An error that
    escapes after it is most likely that stop's exception, turned into its own by a library (pydantic)."""
    if not _DEADLINE["armed"]:
        return None
    return Terminated() if _DEADLINE["signum"] == signal.SIGTERM else KeyboardInterrupt()


def _arm_deadline(signum: int, why: str) -> None:
    if _DEADLINE["enabled"] and not _DEADLINE["armed"]:
        _DEADLINE["armed"], _DEADLINE["signum"] = True, signum
        threading.Thread(target=_deadline, args=(signum, why), name="tunesmith-stop-deadline", daemon=True).start()


def _deadline(signum: int, why: str) -> None:
    time.sleep(GRACE_S)
    if not _DEADLINE["reported"]:
        hint = next((f"; the run is saved, to continue: {cmd}" for cmd, applies in reversed(_HINTS) if applies()), "")
        print(f"tunesmith: {why}{hint}", file=sys.stderr, flush=True)
    exit_now(128 + signum)


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
    _HINTS.append((command, applies))  # the stop deadline's watchdog says it too
    try:
        yield
    except BaseException as exc:  # a stop, or an error that may be a stop's in disguise (stop_signalled)
        if (
            (isinstance(exc, KeyboardInterrupt) or _DEADLINE["armed"])
            and not getattr(exc, "resume_command", None)
            and applies()
        ):
            exc.resume_command = command
        raise
    finally:
        _HINTS.remove((command, applies))


def exit_now(code: int) -> None:
    """End the process now, after the exit handlers (sandbox pool, local LLM server, Dask), without
    waiting for the threads still at work: an LLM request in flight, an evaluation whose sandbox runs
    go on for tens of seconds. A stopped campaign has recorded what counts; whatever those threads
    would still write is made again on resume. (Python's own exit joins every pool thread first, so a
    stop took as long as the slowest of them, or for ever when one waited on a cancelled job.)"""

    def at_once(signum=None, frame=None):  # another Ctrl-C or SIGTERM: not even the exit handlers
        os._exit(code)

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, at_once)
        signal.signal(signal.SIGTERM, at_once)
    # exit handlers that hang must not keep the process, on any thread: Dask's own clean-up waits up to 10 s
    # for a cluster whose close a second Ctrl-C cut short; a temporary folder left behind is the lesser harm
    timer = threading.Timer(GRACE_S, at_once)
    timer.daemon = True
    timer.start()
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
