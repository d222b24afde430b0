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
from generator.sandbox.run_errors import error_from_child, run_error, status_error, timeout_message
from generator.sandbox.state import JobState, RunState
from generator.sandbox.streams import ANSWER, FRAME, OutputTail, spec_key, write_all
from generator.sandbox.wire import Answer, Command, HostEvent, Request, RunEvent
from generator.scoring.fitness import CandidateError
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
        self.pids: dict = {}  # the run in progress's processes: "guard", "run", and "pidfd" where there is one
        self.state: JobState | None = None  # the job being served (made fresh by each serve())
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

        self.reusable = False  # until this job ends cleanly: an exception out of here never pools the host
        t0 = time.monotonic()
        spaces = [SearchSpace(t.space) for t in job.tasks]
        self.state = js = JobState(job, job.config, spaces, OutputTail(job.config.output_kb * 512), t0, t0)
        js.deadline = js.t0 + js.cfg.startup_s
        self.pids = {}
        self._send(self._payload())
        js.sel = sel = selectors.DefaultSelector()
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
        if not js.idle:
            self.kill()
        self.reusable = (
            js.idle and self.alive() and all(r.protections.get("held", {}).get("namespaces") for r in js.runs)
        )
        js.output.drain(self.out)
        return JobOutcome(js.runs, error, js.output.text(), time.monotonic() - js.t0)

    def _loop(self, sel) -> CandidateError | None:
        js, error = self.state, None
        turn = time.monotonic()
        while not js.idle:
            turn = self._forgive_stall(turn)
            remaining = js.deadline - time.monotonic()
            if remaining <= 0:
                if self._end_spent_run():
                    continue
                return error or self._timeout_error()
            for key, _ in sel.select(min(remaining, TICK_S)):
                if self.channel is not None and key.fd == self.channel.req:
                    self._on_request()
                elif key.fd == self.out:
                    js.output.read(self.out, sel)
                elif key.fd == self.ctl_up:
                    self._on_control()
                # else: a run's request pipe that an earlier event of this batch closed (its run ended);
                # reading the control pipe for it would block with nothing to read

            if error is None and js.runs and js.runs[-1].error is not None:
                error = js.runs[-1].error  # the host is told to stop; wait for it to say idle
            if js.host_gone and not js.idle:
                return error or self._error("killed", "the sandbox host process was killed")
        return error

    def _forgive_stall(self, last_turn: float) -> float:
        """Time this process stood still (frozen: SIGSTOP, a suspended VM or a stalled Dask worker) is not
        the run's: the candidate waited for its evaluator's answer, so its deadline moves by that much."""
        now = time.monotonic()
        stalled = now - last_turn - TICK_S  # a loop turn lasts at most TICK_S plus the answers it sends
        if stalled > STALL_S:
            self.state.deadline += stalled
        return now

    def _payload(self) -> dict:
        job, cfg = self.state.job, self.state.cfg
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

    def _command(self, cmd: Command) -> None:
        try:
            os.write(self.ctl_down, cmd)
        except BrokenPipeError:
            pass

    # ---------------------------------------------------------------- messages from the host
    def _on_control(self) -> None:
        js, data = self.state, os.read(self.ctl_up, 65536)
        if not data:
            if not js.ready:
                raise SandboxError(f"the sandbox host died while starting: {js.output.text()[-800:]!s}")
            js.host_gone = True
            if js.running:
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
        js, kind = self.state, msg["t"]
        if kind == HostEvent.READY:
            js.ready = True
            self._next_run()
        elif kind == HostEvent.BEGAN and msg["k"] == js.k:
            self.pids = {"guard": msg["guard"], "run": msg["run"]}
            try:  # a handle on the run process that cannot be confused with a reused pid
                self.pids["pidfd"] = os.pidfd_open(msg["run"])
            except (OSError, AttributeError):
                pass
        elif kind == HostEvent.EXITED and msg["k"] == js.k:
            self._pump_requests()  # the run's last frames ("done", an error) are still in the pipe
            self._finish_run(msg["status"])
            if js.k < len(js.job.runs):
                if js.runs[-1].error is None:
                    self._next_run()
                else:
                    self._command(Command.ABORT)  # skip the remaining runs: the candidate has failed
            js.deadline = time.monotonic() + js.cfg.timeout_s
        elif kind == HostEvent.IDLE:
            js.idle = True

    def _next_run(self) -> None:
        js = self.state
        js.running = True
        self._close_channel()
        seeds = js.job.seeds.get(tuple(js.job.runs[js.k][:2]))
        # its own pipes: nothing of an earlier run is in them; its seeds (evaluation order) are the first answer
        self.channel = RunChannel(js.sel, seeds.rows if seeds is not None else ())
        self.channel.hand_over(self.ctl_sock)
        js.deadline = time.monotonic() + js.cfg.timeout_s

    # ---------------------------------------------------------------- requests from the run
    def _pump_requests(self) -> None:
        while self._on_request():
            pass

    def _on_request(self) -> bool:
        frames = self.channel.frames() if self.channel is not None else None
        if frames is None:
            return False
        for kind, arg, payload in frames:
            if kind == Request.EVALUATE:
                self._answer_row(arg)
            elif kind == Request.LOCAL:
                self._require_run()
                self.state.oracle.calls += 1  # a revisit or invalid configuration, answered in the run: free, counted
            elif kind == Request.JSON:
                self._on_json(payload)
            elif kind == Request.DONE:
                self._require_run().done = True  # its number is the run's claim: not a figure we record
            else:
                raise ProtocolError(f"unknown message type {kind!r}")
        return True

    def _close_channel(self) -> None:
        if self.channel is not None:
            self.channel.close()
            self.channel = None

    def _require_run(self) -> RunState:
        st = self.state.run
        if not st.started or st.done or st.error:
            raise ProtocolError("a request outside a running optimizer call")
        return st

    def _answer_row(self, row: int) -> None:
        js = self.state
        st, oracle = js.run, js.oracle
        if oracle is None or st.done or st.error:
            raise ProtocolError("a request outside a running optimizer call")
        if not 0 <= row < js.n_rows:
            raise ProtocolError(f"row {row} out of range")
        st.answered += 1
        try:
            value = oracle.call_row(row)
            frame = ANSWER.pack(Answer.VALUE, value, oracle.budget_spent_fraction)
        except StopCriterionReached:
            frame = ANSWER.pack(Answer.STOP, 0.0, oracle.budget_spent_fraction)
            if not st.stopped:
                st.stopped = True
                js.deadline = min(js.deadline, time.monotonic() + STOP_GRACE_S)
        self.channel.answer(frame)

    def _on_json(self, raw: bytes) -> None:
        try:
            msg = json.loads(raw)
            kind = msg["t"]
        except (ValueError, TypeError, KeyError, RecursionError):  # RecursionError: JSON nested thousands deep
            raise ProtocolError("malformed message") from None
        js = self.state
        if kind == RunEvent.START:
            if js.run.started or msg.get("k") != js.k:
                raise ProtocolError("unexpected run start")
            ti = js.job.runs[js.k][0]
            make_oracle = js.job.oracle_factory or Oracle
            js.oracle = make_oracle(js.job.tasks[ti], js.job.budgets[ti], js.spaces[ti])
            seeds = js.job.seeds.get(tuple(js.job.runs[js.k][:2]))
            if seeds is not None:  # the LLM's proposals were evaluated first (generator.scoring.seeding)
                seeds.charge(js.oracle)
            js.n_rows = js.spaces[ti].size
            js.run = RunState(started=True, t=time.monotonic(), protections=msg.get("protections", {}))
        elif kind == RunEvent.ERROR:
            self._require_run().error = error_from_child(js.job, js.k, msg)
        elif kind == RunEvent.SETUP_ERROR:
            if js.run.started:  # after "start" only the candidate can have written it
                raise ProtocolError("forged set-up message")
            raise SandboxError(
                f"the sandbox could not set up run {js.k}: {str(msg.get('message'))[:300]}; "
                "try SandboxConfig(isolate=False) and report the message"
            )
        else:
            raise ProtocolError(f"unknown message {kind!r}")

    def _finish_run(self, status) -> None:
        js = self.state
        st = js.run
        ti, repeat, _ = js.job.runs[js.k]
        error = st.error
        if error is None and not st.done and not st.ended:
            error = self._error(*status_error(status, js.cfg))
        trace = js.oracle.trace() if (js.oracle is not None and error is None) else None
        wall = time.monotonic() - st.t if st.started else 0.0
        js.runs.append(RunOutcome(ti, repeat, trace, error, wall, st.protections, st.cut))
        js.k += 1
        js.running = False
        if "pidfd" in self.pids:
            os.close(self.pids["pidfd"])
        js.run, js.oracle, self.pids = RunState(), None, {}
        self._close_channel()

    def _end_spent_run(self) -> bool:
        """At the deadline: end a run whose budget is spent but which has not returned, or (cut_slow_runs)
        one that has evaluated something; it is scored on its trace. True if one was ended."""
        js = self.state
        st = js.run
        cut = not st.stopped and js.cfg.cut_slow_runs and st.answered > 0
        if not (st.stopped or cut) or st.ended or st.error or not self.pids.get("run"):
            return False
        st.ended, st.cut = True, cut  # by us: finished, not killed
        try:
            os.kill(self.pids["run"], signal.SIGKILL)  # PID 1 of its namespace: its whole tree goes
        except OSError:
            pass
        js.deadline = time.monotonic() + js.cfg.timeout_s  # for the host's "exited" report
        return True

    # ---------------------------------------------------------------- errors (wording: sandbox.run_errors)
    def _error(self, kind: str, message: str, **kw) -> CandidateError:
        return run_error(self.state.job, self.state.k, kind, message, **kw)

    def _timeout_error(self) -> CandidateError:
        js = self.state
        if not js.ready:
            self.kill()
            raise SandboxError(
                f"the sandbox host did not start within {js.cfg.startup_s:g} s "
                f"(machine overloaded?); raise SandboxConfig.startup_s. Output: {js.output.text()[-400:]}"
            )
        return self._error("timeout", timeout_message(js.cfg, js.run.answered))
