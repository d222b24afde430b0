"""Dask preload of `dask-local`'s worker processes: a stop is the campaign's to make.

Ctrl-C at a terminal sends SIGINT to the whole foreground process group, the worker processes that
`dask-local` starts included. Left to themselves they each die of a KeyboardInterrupt and print its
traceback (about a hundred lines in all) around the campaign's one line saying how to continue. The
campaign process catches the stop and closes the cluster (within seconds, `CLOSE_TIMEOUT_S`), and a
worker ends with it anyway: Dask's worker process exits when its nanny's process is gone.
"""

from __future__ import annotations

import signal
import threading


def dask_setup(worker) -> None:  # noqa: ARG001 - Dask's preload hook; the worker itself is not needed
    if threading.current_thread() is threading.main_thread():  # signal handlers belong to the main thread
        signal.signal(signal.SIGINT, signal.SIG_IGN)
