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
    host.state = SimpleNamespace(idle=False, runs=[], host_gone=False, deadline=time.monotonic() + 30)

    def on_control():
        os.read(ctl_r, 1)  # blocks if called with nothing to read, as the real one does
        host.state.idle = True

    host._on_control = on_control
    batch = SimpleNamespace(select=lambda timeout: [(SimpleNamespace(fd=ctl_r), 1), (SimpleNamespace(fd=stale_r), 1)])
    finished = threading.Event()
    threading.Thread(target=lambda: (host._loop(batch), finished.set()), daemon=True).start()
    try:
        assert finished.wait(5), "the loop read the control pipe for a stale run pipe and blocked"
    finally:
        for fd in (ctl_w, stale_w, stale_r):
            os.close(fd)  # closing the write end also frees a loop blocked in read


def _assigned_attributes(func) -> set[str]:
    import ast

    return {
        node.attr
        for node in ast.walk(func)
        if isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Store)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    }


def test_a_host_sets_its_attributes_when_made_and_keeps_a_job_in_one_state_object():
    """Everything a job or a run changes lives in a JobState / RunState made fresh for it; the Host itself
    only sets what its __init__ (and _spawn, which __init__ calls) set first."""
    import ast
    import inspect
    import textwrap

    from generator.sandbox import host as host_module

    tree = ast.parse(textwrap.dedent(inspect.getsource(Host)))
    methods = {f.name: f for f in tree.body[0].body if isinstance(f, ast.FunctionDef)}
    made = _assigned_attributes(methods["__init__"]) | _assigned_attributes(methods["_spawn"])
    later = set().union(*(_assigned_attributes(f) for n, f in methods.items() if n not in ("__init__", "_spawn")))
    assert later <= made, sorted(later - made)
    assert "state" in made and len(made) <= 12, sorted(made)
    assert "JobState(" in inspect.getsource(Host.serve) and "RunState(" in inspect.getsource(Host._finish_run)
    assert host_module.RunState().answered == 0 and not host_module.RunState().started
