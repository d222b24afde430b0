"""SIGTERM is handled as Ctrl-C is: the work stops cleanly and can be resumed.

`kill PID`, a batch system's time limit or a container stop send SIGTERM, which by default ends
Python at once: a campaign's status would say "running" for a dead run. Here it raises
`Terminated`, a KeyboardInterrupt, so every clean-up written for Ctrl-C runs for it too. A second
SIGTERM during that clean-up ends the process at once (as a second Ctrl-C would be expected to).
"""

from __future__ import annotations

import signal
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
