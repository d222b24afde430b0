"""Inside one run's process: `func` (a round trip to the evaluator per new configuration), the
names a candidate may assume, running its class, and describing what went wrong in terms the fix
prompt can act on. Imported by the sandbox host before the walls go up.
"""

from __future__ import annotations

import builtins
import linecache
import os
import random
import sys
import threading
import traceback
import types

from generator import parsing
from generator.errors import printable
from generator.sandbox import refusals
from generator.sandbox.candidate_names import OptAlg as LocalOptAlg
from generator.sandbox.candidate_names import StopCriterionReached  # ours; fused with Kernel Tuner's when it is loaded
from generator.sandbox.streams import ANSWER, FRAME, read_exact, read_seeds, send_json
from generator.sandbox.wire import Answer, Request, RunEvent

CANDIDATE_FILE = "<candidate>"


_combined: dict = {}


def stop_class():
    """The class to raise: Kernel Tuner's own if the candidate imported it, fused with ours."""
    ku = sys.modules.get("kernel_tuner.util")
    real = getattr(ku, "StopCriterionReached", None) if ku is not None else None
    if real is None or real is StopCriterionReached:
        return StopCriterionReached
    if real not in _combined:
        _combined[real] = type("StopCriterionReached", (real, StopCriterionReached), {})
    return _combined[real]


class CostFunction:
    """The `func` a candidate receives: a new configuration is a round trip to the evaluator.

    Kernel Tuner's CostFunc semantics, as the Oracle implements them, decide what needs the
    evaluator: only the first evaluation of a valid configuration (it is charged and recorded).
    A revisit returns the value this run already received, and a configuration outside the space
    costs float max; both are free in the budget, so they are answered here and the evaluator is
    only told that a call happened (it counts the calls itself).

    Safe to call from any thread of the candidate (LLMs write ThreadPoolExecutor searches): one
    request is on the wire at a time, so every answer reaches the thread that asked. Once the
    evaluator has said "stop", every thread gets StopCriterionReached here, without a request; a
    thread that was told and calls again ends the run as finished.
    """

    def __init__(self, space, req_fd: int, resp_fd: int, rows: dict | None = None):
        self._space, self._req, self._resp = space, req_fd, resp_fd
        self._rows = rows if rows is not None else {}  # config tuple -> row, built once per host
        self._seen: dict[int, float] = {}  # values this run has been told already
        self._lock = threading.RLock()
        self._stopped = False
        self._told: set[int] = set()  # threads that have received StopCriterionReached
        self._pending = 0  # calls answered here that the evaluator has not been told of yet
        self.budget_spent_fraction = 0.0

    def __call__(self, config, check_restrictions=True):
        if self._stopped:
            self._raise_stop()
        config = tuple(config)
        row = self._rows.get(config)
        if row is None:
            row = self._space.row_of(config)
        with self._lock:
            if self._stopped:
                self._raise_stop()
            if row is None:  # outside the space: float max, free (Kernel Tuner's InvalidConfig)
                self._local_call()
                return sys.float_info.max
            value = self._seen.get(row)
            if value is not None:
                self._local_call()
                return value
            os.write(self._req, self._told_calls() + FRAME.pack(Request.EVALUATE, row))
            kind, value, fraction = ANSWER.unpack(read_exact(self._resp, ANSWER.size))
            self.budget_spent_fraction = fraction
            if kind == Answer.STOP:
                self._stopped = True
                self._raise_stop()
            self._seen[row] = value
            return value

    eval = __call__

    def eval_all(self, configs, check_restrictions=True):
        return [self(c) for c in configs]

    def _raise_stop(self):
        me = threading.get_ident()
        if me in self._told:
            # This thread caught StopCriterionReached and called again: the budget is spent and
            # nothing it does now can count, so the run ends here, as finished (a loop that
            # swallows the stop would otherwise spin until the wall-clock limit and fail as a timeout).
            self.finish()
        self._told.add(me)
        raise stop_class()("budget spent")

    def finish(self) -> None:
        """End the run as finished: no request of any thread can follow the "done" frame."""
        self.hold()
        _finish(self._req, self._told_calls())

    def _local_call(self) -> None:
        # The evaluator counts one frame per call answered here; they travel in batches (one
        # write per LOCAL_BATCH calls, or with the next request) so that a revisit stays cheap.
        self._pending += 1
        if self._pending >= LOCAL_BATCH:
            os.write(self._req, self._told_calls())

    def _told_calls(self) -> bytes:
        frames, self._pending = _LOCAL_CALL * self._pending, 0
        return frames

    def hold(self) -> None:
        """Take the channel for good (the run is ending): other threads' requests wait until the exit."""
        self._lock.acquire(timeout=2.0)  # a thread waiting for its answer gets it first


_LOCAL_CALL = FRAME.pack(Request.LOCAL, 0)
LOCAL_BATCH = 256


# ----------------------------------------------------------------------------------- errors


def describe_error(exc: BaseException, stage: str, source_lines: list[str], memory_mb: int = 0) -> dict:
    """A structured error fit for an LLM: kind, message, trimmed traceback, offending line."""
    kind = "memory" if isinstance(exc, MemoryError) else "interface" if stage == "construct" else "exception"
    if isinstance(exc, MemoryError):
        message = (
            f"MemoryError: the run needed more than its memory limit ({memory_mb} MiB on top of the "
            "interpreter); keep fewer or smaller data structures"
        )
    elif isinstance(exc, SystemExit):
        message = f"the candidate called sys.exit({exc.code!r}); return from __call__ instead"
    else:
        message = f"{type(exc).__name__}: {exc}"
        hint = refusals.hint_for(exc)
        if hint:  # what to change, for refused things and names that do not exist (the fix prompt shows it)
            message = f"{message[:350]} ({hint})"
        if stage == "construct":
            message = f"constructing the optimizer failed: {message}"
        elif stage == "load":
            message = f"running the module's top level failed: {message}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == CANDIDATE_FILE]
    lineno = frames[-1].lineno if frames else None
    line = source_lines[lineno - 1].strip() if lineno and 0 < lineno <= len(source_lines) else None
    # the frames as (line number, function name): the evaluator renders the traceback from them and its
    # own copy of the source (render_traceback), so no text of the candidate's can start a line there
    return {
        "t": RunEvent.ERROR,
        "kind": kind,
        "message": message[:600],
        "line": line,
        "lineno": lineno,
        "frames": [[f.lineno, f.name] for f in frames[-8:]],
        "last": f"{type(exc).__name__}: {exc}"[:600],
    }


def render_traceback(frames, source: str, last) -> str:
    """A run's traceback as the evaluator shows it: Python's layout, rebuilt from (line number, function
    name) pairs and the candidate's source, ending with the exception's text on one line.

    Everything the run sends is untrusted (it can write any frame on its channel): a line number
    only picks a line of the source the evaluator holds, a name that is not an identifier is shown
    as "?", and newlines in the exception's text are escaped, so a forged line cannot print on a
    line of its own (issue 39)."""
    lines = source.splitlines()
    out = []
    for frame in (frames if isinstance(frames, list) else [])[-8:]:
        lineno, name = (frame + [None, None])[:2] if isinstance(frame, list) else (None, None)
        if not (isinstance(lineno, int) and 0 < lineno <= len(lines)):
            continue
        if not (isinstance(name, str) and (name.isidentifier() or name in _SPECIAL_NAMES)):
            name = "?"
        out.append(f'  File "{CANDIDATE_FILE}", line {lineno}, in {name}\n    {lines[lineno - 1].strip()}\n')
    return "".join(out) + printable(str(last or ""), newlines=False)[:600]


_SPECIAL_NAMES = {"<module>", "<lambda>", "<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>"}


# -------------------------------------------------------------------------------- the run


def run_candidate(job: dict, k: int, space, req_fd: int, resp_fd: int) -> None:
    """Execute the candidate for run k and report how it ended (never returns)."""
    source = job["source"]
    lines = source.splitlines()
    linecache.cache[CANDIDATE_FILE] = (len(source), None, [ln + "\n" for ln in lines], CANDIDATE_FILE)
    seed = job["runs"][k][2]
    random.seed(seed)
    import numpy as np

    np.random.seed(seed % 2**32)
    space.seed(seed)
    seeds = read_seeds(resp_fd)  # this run's own seeds, before any answer (streams.seed_message)
    func = CostFunction(space, req_fd, resp_fd, job["rows"][job["runs"][k][0]])
    if seeds:  # a hybrid run: the LLM's proposals come first from get_random_sample, ranked by func
        space = sys.modules["generator.scoring.seeding"].SeededSpace(space, seeds, cost=func)
    del seeds
    stage = "load"
    try:
        module = types.ModuleType("candidate")
        module.__dict__.update({"__builtins__": builtins, **candidate_names()})
        sys.modules["candidate"] = module
        refusals.refuse_processes_and_network()
        exec(parsing.compile_code(source, CANDIDATE_FILE, "exec"), module.__dict__)
        stage = "construct"
        optimizer = getattr(module, job["class_name"])(**job["init_kwargs"])
        stage = "call"
        optimizer(func, space)
    except BaseException as exc:  # noqa: BLE001 - everything the candidate does wrong is reported
        if _is_stop(exc):
            func.finish()  # the budget ended the run, as in Kernel Tuner's OptAlgWrapper
        _flush()
        func.hold()  # the error frame must not interleave with another thread's request
        try:
            send_json(req_fd, describe_error(exc, stage, lines, job["limits"].memory_mb))
        except BaseException:
            pass
        os._exit(0)
    func.finish()


def candidate_names() -> dict:
    """OptAlg and StopCriterionReached, predefined for the candidate (generator.sandbox.candidate_names):
    Kernel Tuner's OptAlg where the host imported Kernel Tuner for this source, else the local one."""
    wrapper = sys.modules.get("kernel_tuner.strategies.wrapper")
    return {"OptAlg": getattr(wrapper, "OptAlg", LocalOptAlg), "StopCriterionReached": StopCriterionReached}


def _is_stop(exc: BaseException) -> bool:
    ku = sys.modules.get("kernel_tuner.util")
    real = getattr(ku, "StopCriterionReached", StopCriterionReached) if ku is not None else StopCriterionReached
    return isinstance(exc, (StopCriterionReached, real))


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


def _finish(req_fd: int, told_calls: bytes = b"") -> None:
    _flush()
    try:
        os.write(req_fd, told_calls + FRAME.pack(Request.DONE, 0))
    except BaseException:
        pass
    os._exit(0)  # do not wait for threads the candidate left running
