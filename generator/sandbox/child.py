"""The sandbox's side of the wall: a host process that forks one fresh, isolated process per run.

Process tree of one sandbox job (started by `generator.sandbox.run_job`):

    evaluating process (holds the answer key, the Oracle, the scorer)
      └─ host   (this module's `main`; imports numpy once, receives only public SpaceSpecs)
           └─ guard  (per run: new namespaces; reports the run's exit status to the host)
                └─ run (PID 1 of its namespace: hides paths, limits, drops privileges, then
                        executes the candidate; every func(cfg) is a round trip to the evaluator)

A fresh process per run (fork of a clean host, a few ms) means that nothing a candidate keeps in
memory, in class attributes or in files carries over from one repeat to the next.

Wire format (little endian). run -> evaluator, on the request pipe: 5-byte frames, a type byte
and an int32: b"E" row (evaluate a valid configuration by its row), b"D" n (run finished; n calls
were answered in the run process: revisits and configurations outside the space), b"J" n
followed by n bytes of JSON (start / error).
evaluator -> run, on the response pipe: 17-byte frames b"V"|b"S", float64 value, float64
budget_spent_fraction ("S" = stop: the budget is spent). host -> evaluator, on the control pipe:
b"J" n JSON frames only (ready / began run k with pids / run k exited with status).
"""

from __future__ import annotations

import builtins
import json
import linecache
import os
import pickle
import random
import signal
import struct
import sys
import traceback
import types

from generator.sandbox import refusals
from generator.sandbox.candidate_names import OptAlg as LocalOptAlg

FRAME = struct.Struct("<ci")
ANSWER = struct.Struct("<cdd")
CANDIDATE_FILE = "<candidate>"
UID_BASE = 2_000_000_000  # each run gets its own unused uid: runs cannot signal or read each other
MAX_JSON = 1 << 20


class StopCriterionReached(Exception):
    """Raised by `func` when the budget is spent (stands in for kernel_tuner.util's class)."""


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


def send_json(fd: int, obj) -> None:
    data = json.dumps(obj, default=repr).encode()
    _write_all(fd, FRAME.pack(b"J", len(data)) + data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_exact(fd: int, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            raise EOFError("pipe closed")
        buf += chunk
    return buf


class CostFunction:
    """The `func` a candidate receives: a new configuration is a round trip to the evaluator.

    Kernel Tuner's CostFunc semantics, as the Oracle implements them, decide what needs the
    evaluator: only the first evaluation of a valid configuration (it is charged and recorded).
    A revisit returns the value this run already received, and a configuration outside the space
    costs float max; both are free in the budget, so they are answered here without a round trip
    (counted, and the count is reported when the run ends). Once the evaluator has said "stop",
    every call raises at once.
    """

    def __init__(self, space, req_fd: int, resp_fd: int, rows: dict | None = None):
        self._space, self._req, self._resp = space, req_fd, resp_fd
        self._rows = rows if rows is not None else {}  # config tuple -> row, built once per host
        self._seen: dict[int, float] = {}  # values this run has been told already
        self._stopped = False
        self.local_calls = 0
        self.budget_spent_fraction = 0.0

    def __call__(self, config, check_restrictions=True):
        if self._stopped:
            # It caught StopCriterionReached and called again: the budget is spent and nothing it
            # does now can count, so the run ends here, as finished (a loop that swallows the stop
            # would otherwise spin until the wall-clock limit and fail as a timeout).
            _finish(self._req, self.local_calls)
        config = tuple(config)
        row = self._rows.get(config)
        if row is None:
            row = self._space.row_of(config)
        if row is None:  # outside the space: float max, free (Kernel Tuner's InvalidConfig)
            self.local_calls += 1
            return sys.float_info.max
        value = self._seen.get(row)
        if value is not None:
            self.local_calls += 1
            return value
        os.write(self._req, FRAME.pack(b"E", row))
        kind, value, fraction = ANSWER.unpack(read_exact(self._resp, ANSWER.size))
        self.budget_spent_fraction = fraction
        if kind == b"S":
            self._stopped = True
            raise stop_class()("budget spent")
        self._seen[row] = value
        return value

    eval = __call__

    def eval_all(self, configs, check_restrictions=True):
        return [self(c) for c in configs]


# ----------------------------------------------------------------------------------- errors


def describe_error(exc: BaseException, stage: str, source_lines: list[str], memory_mb: int = 0) -> dict:
    """A structured error fit for an LLM: kind, message, trimmed traceback, offending line."""
    kind = "memory" if isinstance(exc, MemoryError) else "interface" if stage == "construct" else "exception"
    if isinstance(exc, MemoryError):
        message = (f"MemoryError: the run needed more than its memory limit ({memory_mb} MiB on top of the "
                   "interpreter); keep fewer or smaller data structures")
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
    tb = "".join(traceback.format_list(frames[-8:])) + f"{type(exc).__name__}: {exc}"
    return {"t": "error", "kind": kind, "message": message[:600], "traceback": tb[-2500:],
            "line": line, "lineno": lineno}


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
    func = CostFunction(space, req_fd, resp_fd, job["rows"][job["runs"][k][0]])
    if job.get("seeds", {}).get(k):  # a hybrid run: the LLM's proposals come first from get_random_sample
        space = sys.modules["generator.scoring.seeding"].SeededSpace(space, job["seeds"][k])
    stage = "load"
    try:
        module = types.ModuleType("candidate")
        module.__dict__.update({"__builtins__": builtins, **candidate_names()})
        sys.modules["candidate"] = module
        refusals.refuse_processes_and_network()
        exec(compile(source, CANDIDATE_FILE, "exec"), module.__dict__)
        stage = "construct"
        optimizer = getattr(module, job["class_name"])(**job["init_kwargs"])
        stage = "call"
        optimizer(func, space)
    except BaseException as exc:  # noqa: BLE001 - everything the candidate does wrong is reported
        if _is_stop(exc):
            _finish(req_fd, func.local_calls)  # the budget ended the run, as in Kernel Tuner's OptAlgWrapper
        _flush()
        try:
            send_json(req_fd, describe_error(exc, stage, lines, job["limits"].memory_mb))
        except BaseException:
            pass
        os._exit(0)
    _finish(req_fd, func.local_calls)


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


def _finish(req_fd: int, local_calls: int) -> None:
    _flush()
    try:
        os.write(req_fd, FRAME.pack(b"D", min(int(local_calls), 2**31 - 1)))
    except BaseException:
        pass
    os._exit(0)  # do not wait for threads the candidate left running


def _run_process(job: dict, k: int, space, fds: dict, uid: int, nproc_base: int, prot) -> None:
    """PID 1 of the run's namespaces: put up the walls, then hand over to the candidate."""
    from generator.sandbox import isolation as iso

    iso.die_with_parent()
    workdir = os.path.join(job["workdir"], f"run{k}")
    if prot.held.get("namespaces") and iso.mount_private_root(prot):
        keep = job.pop("keep")  # the candidate needs neither list
        n = iso.hide_paths(job.pop("hidden"), keep, prot)
        prot.mark("hidden_paths", n > 0, f"{n} paths covered")
        workdir = iso.private_scratch(prot, job["scratch_mb"], keep) or workdir
        iso.mount_proc(prot)
        prot.mark("mount_namespace", True)
    os.makedirs(workdir, exist_ok=True)
    if uid is not None:
        os.chown(workdir, uid, iso.NOGROUP)
    os.chdir(workdir)
    os.environ["HOME"] = os.environ["TMPDIR"] = workdir
    iso.set_rlimits(job["limits"], prot, nproc_base, _mapped_bytes())
    iso.drop_privileges(uid, prot)
    iso.die_with_parent()  # changing credentials cleared it
    _close_fds_except({0, 1, 2, fds["req"], fds["resp"]})
    send_json(fds["req"], {"t": "start", "k": k, "protections": prot.to_dict()})
    run_candidate(job, k, space, fds["req"], fds["resp"])


def _mapped_bytes() -> int:
    """Address space the interpreter maps already (the candidate's allowance comes on top)."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _close_fds_except(keep: set[int]) -> None:
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def setup_failed(req_fd: int, exc: BaseException) -> None:
    """Trusted set-up code failed before the candidate ran: tell the evaluator (not the candidate's fault)."""
    try:
        send_json(req_fd, {"t": "setup-error", "message": f"{type(exc).__name__}: {exc}"[:600]})
    finally:
        os._exit(70)


def _count_user_tasks(uid: int) -> int:
    """Threads the user already runs (RLIMIT_NPROC counts them all) when we cannot change uid."""
    n = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/status") as fh:
                    st = dict(line.split(":", 1) for line in fh if ":" in line)
                if int(st["Uid"].split()[0]) == uid:
                    n += int(st["Threads"])
            except (OSError, KeyError, ValueError):
                continue
    return n


def _guard(job: dict, k: int, space, fds: dict, report_fd: int) -> None:
    """Per-run parent of the run process: namespaces, then relays the run's exit status."""
    from generator.sandbox import isolation as iso

    os.setpgid(0, 0)
    iso.die_with_parent()
    prot = iso.Protections()
    root = os.geteuid() == 0
    uid = UID_BASE + os.getpid() if root else None  # None: cannot change user
    nproc_base = 0 if root else _count_user_tasks(os.getuid())
    if job["isolate"]:
        iso.set_dumpable(True)  # the host is not; a process may only write its own uid_map if it is
        iso.unshare_namespaces(prot)
    else:
        prot.mark("namespaces", False, "isolation switched off")
    pid = os.fork()
    if pid == 0:
        os.close(report_fd)
        try:
            _run_process(job, k, space, fds, uid, nproc_base, prot)
        except BaseException as exc:  # a wall failed to go up in trusted code: report, never run
            setup_failed(fds["req"], exc)
    for fd in (fds["req"], fds["resp"]):
        os.close(fd)
    os.write(report_fd, struct.pack("<i", pid))
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except ChildProcessError:
            status = -1
            break
        except InterruptedError:
            continue
    os.write(report_fd, struct.pack("<i", status))
    os._exit(0)


def main() -> None:
    """Entry point of the host process: take jobs one after another, fork one guarded run at a time.

    Between jobs and during runs the host watches its command pipe: end of file means the
    evaluating process is gone, and the host kills the run in progress and exits.
    """
    ctl_in, ctl_out, req, resp = (int(a) for a in sys.argv[1:5])
    from generator.sandbox import isolation as iso

    iso.set_dumpable(False)
    import numpy  # noqa: F401 - paid once per host instead of once per run

    spaces: dict = {}  # spec key -> (SearchSpace, config -> row), kept across jobs
    while True:
        header = _read_or_exit(ctl_in, 4)
        job = pickle.loads(read_exact(ctl_in, struct.unpack("<i", header)[0]))  # trusted: from the evaluator
        if job.get("preimport_kernel_tuner"):
            try:
                import kernel_tuner.strategies.wrapper  # noqa: F401
                import kernel_tuner.util  # noqa: F401
            except Exception:
                pass
        for name in job.get("preimport", ()):  # heavy libraries the source imports: once per host, not per run
            try:
                __import__(name)
            except Exception:
                pass
        if job.get("seeds"):
            import generator.scoring.seeding  # noqa: F401 - before the walls: runs cannot import the project
        mine = {i: _prepared(spaces, key, spec) for i, (key, spec) in job["specs"].items()}
        job["rows"] = {i: rows for i, (_, rows) in mine.items()}
        send_json(ctl_out, {"t": "ready"})
        for k, (ti, _repeat, _seed) in enumerate(job["runs"]):
            if _read_or_exit(ctl_in, 1) != b"R":
                break  # "A": the candidate failed, skip its other runs
            status, guard = _run_guarded(job, k, mine[ti][0], {"req": req, "resp": resp}, ctl_in, ctl_out)
            send_json(ctl_out, {"t": "exited", "k": k, "status": status})
        send_json(ctl_out, {"t": "idle"})


def _read_or_exit(fd: int, n: int) -> bytes:
    try:
        return read_exact(fd, n)
    except (EOFError, OSError):
        os._exit(0)  # the evaluating process is gone


def _prepared(spaces: dict, key: str, spec):
    """The search space of a spec, built once per host: rows lookup and neighbour indexes included."""
    from generator.tasks.space import SearchSpace

    if key not in spaces:
        if len(spaces) >= 16:
            spaces.pop(next(iter(spaces)))
        sp = SearchSpace(spec)
        rows = {cfg: row for row, cfg in enumerate(sp.configs)}
        for method in ("Hamming", "adjacent", "strictly-adjacent"):  # every forked run inherits them
            try:
                sp.get_neighbors(sp.config_of(0), neighbor_method=method)
            except Exception:
                pass
        spaces[key] = (sp, rows)
    return spaces[key]


def _run_guarded(job: dict, k: int, space, fds: dict, ctl_in: int, ctl_out: int) -> tuple[int | None, int]:
    """Fork the guard of run k, report its pids, wait for the run's exit status, clean up."""
    import select

    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rd)
        try:
            for fd in (ctl_in, ctl_out):
                os.close(fd)
            _guard(job, k, space, fds, wr)
        except BaseException as exc:
            setup_failed(fds["req"], exc)
        finally:
            os._exit(70)  # a forked guard never returns into the host's loop
    os.close(wr)
    status = None
    try:
        (run_pid,) = struct.unpack("<i", read_exact(rd, 4))
        send_json(ctl_out, {"t": "began", "k": k, "guard": pid, "run": run_pid})
        while True:
            ready, _, _ = select.select([rd, ctl_in], [], [])
            if ctl_in in ready:  # nothing is sent during a run: this is end of file
                for kill, target in ((os.kill, run_pid), (os.killpg, pid)):  # the run may have left the group
                    try:
                        kill(target, signal.SIGKILL)
                    except OSError:
                        pass
                os._exit(0)
            if rd in ready:
                (status,) = struct.unpack("<i", read_exact(rd, 4))
                break
    except EOFError:
        pass
    os.close(rd)
    try:
        os.killpg(pid, signal.SIGKILL)  # whatever of the run is still around
    except OSError:
        pass
    os.waitpid(pid, 0)
    _remove_tree(os.path.join(job["workdir"], f"run{k}"))
    return status, pid


def _remove_tree(path: str) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
