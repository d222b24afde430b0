"""The host's serving loop dispatches each ready descriptor by what it is.

One select batch can hold the control pipe (whose message ends the run and closes the run's request
pipe) and that run's request pipe. The stale pipe must be skipped: reading the control pipe in its
place blocks on an empty pipe, and the evaluation hangs (seen once in a full CI run).
"""

import os
import threading
import time
from types import SimpleNamespace

from generator.sandbox.host import Host


def test_a_run_pipe_closed_earlier_in_the_same_batch_is_not_read_as_control():
    ctl_r, ctl_w = os.pipe()
    stale_r, stale_w = os.pipe()
    os.write(ctl_w, b"x")  # one control message: the run ended
    host = Host.__new__(Host)  # no host process: only the serving loop is under test
    host.ctl_up, host.out, host.channel = ctl_r, -1, None
    host.idle, host.runs, host.host_gone = False, [], False
    host.deadline = time.monotonic() + 30

    def on_control():
        os.read(ctl_r, 1)  # blocks if called with nothing to read, as the real one does
        host.idle = True

    host._on_control = on_control
    batch = SimpleNamespace(select=lambda timeout: [(SimpleNamespace(fd=ctl_r), 1), (SimpleNamespace(fd=stale_r), 1)])
    finished = threading.Event()
    threading.Thread(target=lambda: (host._loop(batch), finished.set()), daemon=True).start()
    try:
        assert finished.wait(5), "the loop read the control pipe for a stale run pipe and blocked"
    finally:
        for fd in (ctl_w, stale_w, stale_r):
            os.close(fd)  # closing the write end also frees a loop blocked in read
