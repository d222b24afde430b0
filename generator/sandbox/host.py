"""The evaluating side of a sandbox host process: spawn it, serve the oracle, enforce the limits.

A `Host` owns one `generator.sandbox.child` process and serves one `sandbox.Job` at a time: it
sends the public job, tells the host to start each run, answers every request for a new valid
configuration from an `Oracle` that lives here (its trace is the only thing the score comes
from), and kills a run that overstays its wall-clock limit with its whole process tree. Anything
a run sends is untrusted: malformed or out-of-turn messages end the candidate ("killed"). Each
run talks over its own pipes (`channel.RunChannel`), closed when it ends.

Hosts are pooled: the host process never runs candidate code itself (every run is a fresh fork
in fresh namespaces), so after a clean job it can take the next candidate and the Python +
numpy start-up is paid once per pooled host, not once per evaluation. A host that had to be
killed, or whose runs lacked a PID namespace, is not reused.
"""

from __future__ import annotations

import json
import os
import pickle
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

from generator.sandbox import isolation
from generator.sandbox.candidate_names import preimports
from generator.sandbox.candidate_run import render_traceback
from generator.sandbox.channel import ProtocolError, RunChannel
from generator.sandbox.jobs import (
    Job,
    JobOutcome,
    RunOutcome,
    SandboxError,
    child_env,
    default_hidden_paths,
    interpreter_paths,
)
from generator.sandbox.streams import ANSWER, FRAME, OutputTail, spec_key, write_all
from generator.scoring.fitness import ERROR_KINDS, CandidateError
from generator.scoring.oracle import Oracle, StopCriterionReached

_BOOT = "import sys; from generator.sandbox.child import main; main()"
MAX_IDLE_HOSTS = 8
# Once the oracle has said "stop", the run may take this long to return before it is ended for it:
# its trace is complete, so a candidate that swallows the stop is scored, not failed as a timeout.
STOP_GRACE_S = 2.0
# The serving loop wakes at least every TICK_S; a turn longer than that by STALL_S means this process was
# frozen (a stopped Dask worker), and the run's deadline moves by the time lost (Host._forgive_stall).
TICK_S = 0.5
STALL_S = 2.0


class Host:
    """The evaluating side of one sandbox host process (see the module docstring)."""

    def __init__(self):
        self.workdir = tempfile.mkdtemp(prefix="tunesmith-sbx-")
        os.chmod(self.workdir, 0o755)
        self.owner = os.getpid()
        self.reusable = False
        self.ctl_buf = b""
        self.channel: RunChannel | None = None  # the run in progress's own pipes
        self.pids: dict = {}
        self._spawn()

    # ---------------------------------------------------------------- process management
    def _spawn(self) -> None:
        # Commands go down a unix socket: each run's own pipes travel with its "R" (SCM_RIGHTS).
        self.ctl_sock, ctl_down_r = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.ctl_down = self.ctl_sock.fileno()
        self.ctl_up, ctl_up_w = os.pipe()
        self.out, out_w = os.pipe()
        child_fds = [ctl_down_r.fileno(), ctl_up_w]
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, *map(str, child_fds)],
                stdin=subprocess.DEVNULL,
                stdout=out_w,
                stderr=out_w,
                pass_fds=child_fds,
                cwd=self.workdir,
                env=child_env(self.workdir),
                start_new_session=True,
            )
        finally:
            ctl_down_r.close()
            for fd in (ctl_up_w, out_w):
                os.close(fd)
        os.set_blocking(self.out, False)

    def alive(self) -> bool:
        return self.proc.poll() is None and self.owner == os.getpid()

    def kill(self) -> None:
        """SIGKILL the run (PID 1 of its namespace: its whole tree dies), its guard, the host."""
        self.reusable = False
        for pid, group in ((self.pids.get("run"), False), (self.pids.get("guard"), True), (self.proc.pid, True)):
            if pid:
                try:
                    (os.killpg if group else os.kill)(pid, signal.SIGKILL)
                except OSError:
                    pass
        self._await_run_exit()

    def _await_run_exit(self, limit_s: float = 5.0) -> None:
        """Wait until the killed run is gone: PID 1 of a namespace exits only after all its processes."""
        fd = self.pids.pop("pidfd", None)
        if fd is None:
            return
        try:
            sel = selectors.DefaultSelector()
            sel.register(fd, selectors.EVENT_READ)
            sel.select(limit_s)
            sel.close()
        finally:
            os.close(fd)

    def close(self) -> None:
        """Kill the host process and free everything (closing its pipe also makes it exit)."""
        if self.owner == os.getpid():
            self.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self._close_channel()
        self.ctl_sock.close()
        for fd in (self.ctl_up, self.out):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.owner == os.getpid():
            shutil.rmtree(self.workdir, ignore_errors=True)

    # ---------------------------------------------------------------- one job
    def serve(self, job: Job) -> JobOutcome:
        """Run the job's runs; returns their traces (from our Oracle) or the first error."""
        from generator.tasks.space import SearchSpace

        self.job, self.cfg = job, job.config
        self.reusable = False  # until this job ends cleanly: an exception out of here never pools the host
        self.spaces = [SearchSpace(t.space) for t in job.tasks]
        self.t0 = time.monotonic()
        self.output = OutputTail(self.cfg.output_kb * 512)
        self.runs: list[RunOutcome] = []
        self.k = 0  # the run in progress (index into job.runs)
        self.oracle, self.run_state, self.pids = None, {}, {}
        self.ready = self.idle = self.host_gone = self.running = False
        self.deadline = self.t0 + self.cfg.startup_s
        self._send(self._payload())
        self.sel = sel = selectors.DefaultSelector()
        for fd in (self.ctl_up, self.out):
            sel.register(fd, selectors.EVENT_READ)
        error = None
        try:
            error = self._loop(sel)
        except ProtocolError as exc:
            error = self._error(
                "killed",
                f"the candidate broke the sandbox protocol ({exc}); only call func(config) and return from __call__",
            )
        except SandboxError:
            self.kill()
            raise
        finally:
            self._close_channel()
            sel.close()
        if not self.idle:
            self.kill()
        self.reusable = (
            self.idle and self.alive() and all(r.protections.get("held", {}).get("namespaces") for r in self.runs)
        )
        self.output.drain(self.out)
        return JobOutcome(self.runs, error, self.output.text(), time.monotonic() - self.t0)

    def _loop(self, sel) -> CandidateError | None:
        error = None
        turn = time.monotonic()
        while not self.idle:
            turn = self._forgive_stall(turn)
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                if self._end_spent_run():
                    continue
                return error or self._timeout_error()
            for key, _ in sel.select(min(remaining, TICK_S)):
                if self.channel is not None and key.fd == self.channel.req:
                    self._on_request()
                elif key.fd == self.out:
                    self.output.read(self.out, sel)
                elif key.fd == self.ctl_up:
                    self._on_control()
                # else: a run's request pipe that an earlier event of this batch closed (its run ended);
                # reading the control pipe for it would block with nothing to read

            if error is None and self.runs and self.runs[-1].error is not None:
                error = self.runs[-1].error  # the host is told to stop; wait for it to say idle
            if self.host_gone and not self.idle:
                return error or self._error("killed", "the sandbox host process was killed")
        return error

    def _forgive_stall(self, last_turn: float) -> float:
        """Time this process stood still (frozen: SIGSTOP, a suspended VM or a stalled Dask worker) is not
        the run's: the candidate waited for its evaluator's answer, so its deadline moves by that much."""
        now = time.monotonic()
        stalled = now - last_turn - TICK_S  # a loop turn lasts at most TICK_S plus the answers it sends
        if stalled > STALL_S:
            self.deadline += stalled
        return now

    def _payload(self) -> dict:
        job, cfg = self.job, self.cfg
        limits = isolation.Limits(
            cpu_s=int(cfg.timeout_s) + 5, memory_mb=cfg.memory_mb, nproc=cfg.nproc, file_mb=cfg.file_mb
        )
        used = sorted({r[0] for r in job.runs})
        return {
            "source": job.source,
            "class_name": job.class_name,
            "init_kwargs": job.init_kwargs,
            "specs": {i: (spec_key(job.tasks[i].space), job.tasks[i].space) for i in used},
            "runs": list(job.runs),
            "limits": limits,
            "isolate": cfg.isolate,
            "hidden": default_hidden_paths(job.tasks, cfg.hidden_paths),
            "keep": interpreter_paths(),
            "workdir": self.workdir,
            "scratch_mb": cfg.scratch_mb,
            "preimport_kernel_tuner": "kernel_tuner" in job.source,
            "preimport": preimports(job.source),
            # whether runs are seeded (the host imports the seeding module before the walls); the seeds
            # themselves go to each run alone, down its own response pipe (RunChannel), never to the host
            "seeded": bool(job.seeds),
        }

    def _send(self, payload: dict) -> None:
        data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            write_all(self.ctl_down, struct.pack("<i", len(data)) + data)
        except BrokenPipeError:
            pass  # the host died; the loop reports it

    def _command(self, cmd: bytes) -> None:
        try:
            os.write(self.ctl_down, cmd)
        except BrokenPipeError:
            pass

    # ---------------------------------------------------------------- messages from the host
    def _on_control(self) -> None:
        data = os.read(self.ctl_up, 65536)
        if not data:
            if not self.ready:
                raise SandboxError(f"the sandbox host died while starting: {self.output.text()[-800:]!s}")
            self.host_gone = True
            if self.running:
                self._pump_requests()
                self._finish_run(None)  # host gone mid-run: the run cannot have ended cleanly
            return
        self.ctl_buf += data
        while len(self.ctl_buf) >= FRAME.size:
            _, n = FRAME.unpack_from(self.ctl_buf)
            if len(self.ctl_buf) < FRAME.size + n:
                break
            msg = json.loads(self.ctl_buf[FRAME.size : FRAME.size + n])
            self.ctl_buf = self.ctl_buf[FRAME.size + n :]
            self._on_host_message(msg)

    def _on_host_message(self, msg: dict) -> None:
        kind = msg["t"]
        if kind == "ready":
            self.ready = True
            self._next_run()
        elif kind == "began" and msg["k"] == self.k:
            self.pids = {"guard": msg["guard"], "run": msg["run"]}
            try:  # a handle on the run process that cannot be confused with a reused pid
                self.pids["pidfd"] = os.pidfd_open(msg["run"])
            except (OSError, AttributeError):
                pass
        elif kind == "exited" and msg["k"] == self.k:
            self._pump_requests()  # the run's last frames ("done", an error) are still in the pipe
            self._finish_run(msg["status"])
            if self.k < len(self.job.runs):
                if self.runs[-1].error is None:
                    self._next_run()
                else:
                    self._command(b"A")  # skip the remaining runs: the candidate has failed
            self.deadline = time.monotonic() + self.cfg.timeout_s
        elif kind == "idle":
            self.idle = True

    def _next_run(self) -> None:
        self.running = True
        self._close_channel()
        seeds = self.job.seeds.get(tuple(self.job.runs[self.k][:2]))
        # its own pipes: nothing of an earlier run is in them; its seeds (evaluation order) are the first answer
        self.channel = RunChannel(self.sel, seeds.rows if seeds is not None else ())
        self.channel.hand_over(self.ctl_sock)
        self.deadline = time.monotonic() + self.cfg.timeout_s

    # ---------------------------------------------------------------- requests from the run
    def _pump_requests(self) -> None:
        while self._on_request():
            pass

    def _on_request(self) -> bool:
        frames = self.channel.frames() if self.channel is not None else None
        if frames is None:
            return False
        for kind, arg, payload in frames:
            if kind == b"E":
                self._answer_row(arg)
            elif kind == b"L":
                self._require_run()
                self.oracle.calls += 1  # a revisit or invalid configuration, answered in the run: free, counted
            elif kind == b"J":
                self._on_json(payload)
            elif kind == b"D":
                self._require_run().update(done=True)  # its number is the run's claim: not a figure we record
            else:
                raise ProtocolError(f"unknown message type {kind!r}")
        return True

    def _close_channel(self) -> None:
        if self.channel is not None:
            self.channel.close()
            self.channel = None

    def _require_run(self) -> dict:
        st = self.run_state
        if not st.get("started") or st.get("done") or st.get("error"):
            raise ProtocolError("a request outside a running optimizer call")
        return st

    def _answer_row(self, row: int) -> None:
        if self.oracle is None or self.run_state.get("done") or self.run_state.get("error"):
            raise ProtocolError("a request outside a running optimizer call")
        if not 0 <= row < self.n_rows:
            raise ProtocolError(f"row {row} out of range")
        self.run_state["answered"] = self.run_state.get("answered", 0) + 1
        try:
            value = self.oracle.call_row(row)
            frame = ANSWER.pack(b"V", value, self.oracle.budget_spent_fraction)
        except StopCriterionReached:
            frame = ANSWER.pack(b"S", 0.0, self.oracle.budget_spent_fraction)
            if not self.run_state.get("stopped"):
                self.run_state["stopped"] = True
                self.deadline = min(self.deadline, time.monotonic() + STOP_GRACE_S)
        self.channel.answer(frame)

    def _on_json(self, raw: bytes) -> None:
        try:
            msg = json.loads(raw)
            kind = msg["t"]
        except (ValueError, TypeError, KeyError, RecursionError):  # RecursionError: JSON nested thousands deep
            raise ProtocolError("malformed message") from None
        if kind == "start":
            if self.run_state or msg.get("k") != self.k:
                raise ProtocolError("unexpected run start")
            ti = self.job.runs[self.k][0]
            make_oracle = self.job.oracle_factory or Oracle
            self.oracle = make_oracle(self.job.tasks[ti], self.job.budgets[ti], self.spaces[ti])
            seeds = self.job.seeds.get(tuple(self.job.runs[self.k][:2]))
            if seeds is not None:  # the LLM's proposals were evaluated first (generator.scoring.seeding)
                seeds.charge(self.oracle)
            self.n_rows = self.spaces[ti].size
            self.run_state = {"started": True, "t": time.monotonic(), "protections": msg.get("protections", {})}
        elif kind == "error":
            self._require_run()["error"] = self._error_from_child(msg)
        elif kind == "setup-error":
            if self.run_state:  # after "start" only the candidate can have written it
                raise ProtocolError("forged set-up message")
            raise SandboxError(
                f"the sandbox could not set up run {self.k}: {str(msg.get('message'))[:300]}; "
                "try SandboxConfig(isolate=False) and report the message"
            )
        else:
            raise ProtocolError(f"unknown message {kind!r}")

    def _finish_run(self, status) -> None:
        st = self.run_state
        ti, repeat, _ = self.job.runs[self.k]
        error = st.get("error")
        if error is None and not st.get("done") and not st.get("ended"):
            error = self._error(*self._status_error(status))
        trace = self.oracle.trace() if (self.oracle is not None and error is None) else None
        wall = time.monotonic() - st.get("t", time.monotonic())
        self.runs.append(RunOutcome(ti, repeat, trace, error, wall, st.get("protections", {}), bool(st.get("cut"))))
        self.k += 1
        self.running = False
        if "pidfd" in self.pids:
            os.close(self.pids["pidfd"])
        self.run_state, self.oracle, self.pids = {}, None, {}
        self._close_channel()

    def _end_spent_run(self) -> bool:
        """At the deadline: end a run whose budget is spent but which has not returned, or (cut_slow_runs)
        one that has evaluated something; it is scored on its trace. True if one was ended."""
        st = self.run_state
        cut = not st.get("stopped") and self.cfg.cut_slow_runs and st.get("answered", 0) > 0
        if not (st.get("stopped") or cut) or st.get("ended") or st.get("error") or not self.pids.get("run"):
            return False
        st["ended"], st["cut"] = True, cut  # by us: finished, not killed
        try:
            os.kill(self.pids["run"], signal.SIGKILL)  # PID 1 of its namespace: its whole tree goes
        except OSError:
            pass
        self.deadline = time.monotonic() + self.cfg.timeout_s  # for the host's "exited" report
        return True

    # ---------------------------------------------------------------- errors
    def _error(self, kind: str, message: str, **kw) -> CandidateError:
        ti, repeat, _ = self.job.runs[min(self.k, len(self.job.runs) - 1)]
        return CandidateError(kind, message, task=self.job.tasks[ti].name, repeat=repeat, **kw)

    def _error_from_child(self, msg: dict) -> CandidateError:
        kind = msg.get("kind") if msg.get("kind") in ERROR_KINDS else "exception"
        lineno = msg.get("lineno") if isinstance(msg.get("lineno"), int) else None
        line = msg.get("line") if isinstance(msg.get("line"), str) else None
        tb = render_traceback(msg.get("frames"), self.job.source, msg.get("last"))
        return self._error(kind, str(msg.get("message", ""))[:600], traceback=tb, line=line, lineno=lineno)

    def _timeout_error(self) -> CandidateError:
        if not self.ready:
            self.kill()
            raise SandboxError(
                f"the sandbox host did not start within {self.cfg.startup_s:g} s "
                f"(machine overloaded?); raise SandboxConfig.startup_s. Output: {self.output.text()[-400:]}"
            )
        if not self.run_state.get("answered"):
            return self._error(
                "timeout",
                f"the run did not evaluate anything within {self.cfg.timeout_s:g} s of "
                "wall-clock time; call func early, and keep the work per evaluation small",
            )
        return self._error(
            "timeout",
            f"the run did not finish within {self.cfg.timeout_s:g} s of wall-clock time; "
            "stop when func raises StopCriterionReached or budget_spent_fraction reaches 1, "
            "and keep the work per evaluation small",
        )

    def _status_error(self, status) -> tuple[str, str]:
        if status is None or status < 0:
            return "killed", "the candidate's process tree was killed before the run ended"
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
            if sig == signal.SIGXCPU:
                return "timeout", f"the run used more than its CPU-time limit ({int(self.cfg.timeout_s) + 5} s)"
            if sig == signal.SIGXFSZ:
                return "killed", f"the run wrote a file larger than {self.cfg.file_mb} MiB"
            if sig == signal.SIGKILL:
                return "killed", "the run was killed by SIGKILL (the kernel's out-of-memory killer, or a kill signal)"
            return "killed", f"the run crashed with {name} (a native crash, e.g. through ctypes or a C extension)"
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
        return "killed", (
            f"the candidate's process exited (status {code}) before its __call__ returned "
            "(os._exit, or sys.exit in a thread); return from __call__ instead"
        )
