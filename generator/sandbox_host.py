"""The evaluating side of one sandbox host process: spawn it, serve the oracle, enforce the limits.

One `Host` per `sandbox.Job`. It starts `generator.sandbox_child` with pipes, sends the public
job, and then serves every run: each request for a new valid configuration is answered by an
`Oracle` that lives here, the trace it records is the only thing the score is computed from, and
a run that overstays its wall-clock limit is killed with its whole process tree. Anything the
child sends is untrusted: malformed or out-of-turn messages end the candidate ("killed").
"""

from __future__ import annotations

import json
import os
import pickle
import selectors
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

from generator import isolation
from generator.fitness import ERROR_KINDS, CandidateError
from generator.oracle import Oracle, StopCriterionReached
from generator.sandbox import Job, JobOutcome, RunOutcome, SandboxError, child_env, default_hidden_paths, interpreter_paths
from generator.sandbox_child import ANSWER, FRAME, MAX_JSON

_BOOT = "import sys; from generator.sandbox_child import main; main()"


class _Violation(Exception):
    """The child broke the protocol: it is killed and the candidate fails."""


class Host:
    """The evaluating side of one sandbox host process (see the module docstring)."""

    def __init__(self, job: Job):
        from generator.space import SearchSpace

        self.job, self.cfg = job, job.config
        self._Oracle = Oracle
        self.spaces = [SearchSpace(t.space) for t in job.tasks]
        self.workdir = tempfile.mkdtemp(prefix="tunesmith-sbx-")
        os.chmod(self.workdir, 0o755)
        self.t0 = time.monotonic()
        self.out_head, self.out_tail, self.out_total = bytearray(), bytearray(), 0
        self.runs: list[RunOutcome] = []
        self.k = 0  # the run in progress (index into job.runs)
        self.oracle = None
        self.run_state: dict = {}
        self.pids: dict = {}
        self.req_buf = b""
        self._spawn()

    # ---------------------------------------------------------------- process management
    def _spawn(self) -> None:
        ctl_down_r, self.ctl_down = os.pipe()
        self.ctl_up, ctl_up_w = os.pipe()
        self.req, req_w = os.pipe()
        resp_r, self.resp = os.pipe()
        self.out, out_w = os.pipe()
        child_fds = [ctl_down_r, ctl_up_w, req_w, resp_r]
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, *map(str, child_fds)], stdin=subprocess.DEVNULL,
                stdout=out_w, stderr=out_w, pass_fds=child_fds, cwd=self.workdir,
                env=child_env(self.workdir), start_new_session=True)
        finally:
            for fd in child_fds + [out_w]:
                os.close(fd)
        os.set_blocking(self.resp, False)  # a child that never reads answers must not block us
        os.set_blocking(self.req, False)
        payload = pickle.dumps(self._payload(), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            _write_all(self.ctl_down, struct.pack("<i", len(payload)) + payload)
        except BrokenPipeError:
            pass  # the host died at once; serve() reports it

    def _payload(self) -> dict:
        job, cfg = self.job, self.cfg
        limits = isolation.Limits(cpu_s=int(cfg.timeout_s) + 5, memory_mb=cfg.memory_mb, nproc=cfg.nproc,
                                  file_mb=cfg.file_mb)
        return {
            "source": job.source, "class_name": job.class_name, "init_kwargs": job.init_kwargs,
            "specs": {i: job.tasks[i].space for i in sorted({r[0] for r in job.runs})},
            "runs": list(job.runs), "limits": limits, "isolate": cfg.isolate,
            "hidden": default_hidden_paths(job.tasks, cfg.hidden_paths), "keep": interpreter_paths(),
            "workdir": self.workdir, "scratch_mb": cfg.scratch_mb,
            "preimport_kernel_tuner": "kernel_tuner" in job.source,
        }

    def kill(self) -> None:
        """SIGKILL the run (PID 1 of its namespace: its whole tree dies), its guard, the host."""
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
        self.kill()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for fd in (self.ctl_down, self.ctl_up, self.req, self.resp, self.out):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.workdir, ignore_errors=True)

    # ---------------------------------------------------------------- the serving loop
    def serve(self) -> JobOutcome:
        sel = selectors.DefaultSelector()
        for fd in (self.ctl_up, self.req, self.out):
            sel.register(fd, selectors.EVENT_READ)
        self.ready = self.host_gone = False
        self.deadline = self.t0 + self.cfg.startup_s
        self.ctl_buf = b""
        error = None
        try:
            while self.k < len(self.job.runs):
                remaining = self.deadline - time.monotonic()
                if remaining <= 0:
                    error = self._timeout_error()
                    break
                for key, _ in sel.select(remaining):
                    if key.fd == self.req:
                        self._on_request()
                    elif key.fd == self.out:
                        self._on_output(sel)
                    else:
                        self._on_control(sel)
                if self.runs and self.runs[-1].error is not None:
                    error = self.runs[-1].error
                    break
                if self.host_gone and self.k < len(self.job.runs):
                    error = self._error("killed", "the sandbox host process was killed")
                    break
        except _Violation as exc:
            error = self._error("killed", f"the candidate broke the sandbox protocol ({exc}); "
                                          "only call func(config) and return from __call__")
        finally:
            sel.close()
        if error is not None:
            self.kill()
        self._drain_output()
        return JobOutcome(self.runs, error, self._output_text(), time.monotonic() - self.t0)

    def _on_control(self, sel) -> None:
        data = os.read(self.ctl_up, 65536)
        if not data:
            sel.unregister(self.ctl_up)
            if not self.ready:
                raise SandboxError(f"the sandbox host died while starting: {self._output_text()[-800:]!s}")
            self.host_gone = True
            if self.k < len(self.job.runs):
                self._pump_requests()
                self._finish_run(None)  # host gone mid-run: the run cannot have ended cleanly
            return
        self.ctl_buf += data
        while len(self.ctl_buf) >= FRAME.size:
            _, n = FRAME.unpack_from(self.ctl_buf)
            if len(self.ctl_buf) < FRAME.size + n:
                break
            msg = json.loads(self.ctl_buf[FRAME.size:FRAME.size + n])
            self.ctl_buf = self.ctl_buf[FRAME.size + n:]
            if msg["t"] == "ready":
                self.ready = True
                self.deadline = time.monotonic() + self.cfg.timeout_s
            elif msg["t"] == "began" and msg["k"] == self.k:
                self.pids = {"guard": msg["guard"], "run": msg["run"]}
                try:  # a handle on the run process that cannot be confused with a reused pid
                    self.pids["pidfd"] = os.pidfd_open(msg["run"])
                except (OSError, AttributeError):
                    pass
            elif msg["t"] == "exited" and msg["k"] == self.k:
                self._pump_requests()  # the run's last frames ("done", an error) are still in the pipe
                self._finish_run(msg["status"])

    def _pump_requests(self) -> None:
        while self._on_request():
            pass

    def _on_request(self) -> bool:
        try:
            data = os.read(self.req, 65536)
        except BlockingIOError:
            return False
        if not data:
            return False  # the host holds the write end until it exits; EOF means it is gone
        buf = self.req_buf + data
        pos = 0
        if len(buf) == FRAME.size and buf[0] == 69:  # b"E": the hot path, one request per read
            self.req_buf = b""
            self._answer_row(FRAME.unpack(buf)[1])
            return True
        while len(buf) - pos >= FRAME.size:
            kind, arg = FRAME.unpack_from(buf, pos)
            if kind == b"E":
                self._answer_row(arg)
                pos += FRAME.size
            elif kind == b"J":
                if not 0 <= arg <= MAX_JSON:
                    raise _Violation("oversized message")
                if len(buf) - pos < FRAME.size + arg:
                    break
                self._on_json(buf[pos + FRAME.size:pos + FRAME.size + arg])
                pos += FRAME.size + arg
            elif kind == b"D":
                self._require_run().update(done=True)
                self.oracle.calls += max(0, arg)  # revisits/invalid answered in the child: free, counted
                pos += FRAME.size
            else:
                raise _Violation(f"unknown message type {kind!r}")
        self.req_buf = buf[pos:]
        return True

    def _require_run(self) -> dict:
        st = self.run_state
        if not st.get("started") or st.get("done") or st.get("error"):
            raise _Violation("a request outside a running optimizer call")
        return st

    def _answer_row(self, row: int) -> None:
        if self.oracle is None or self.run_state.get("done") or self.run_state.get("error"):
            raise _Violation("a request outside a running optimizer call")
        if not 0 <= row < self.n_rows:
            raise _Violation(f"row {row} out of range")
        self._answer(row)

    def _answer(self, row: int) -> None:
        """Ask the Oracle for a valid row and send value or stop back."""
        try:
            value = self.oracle.call_row(row)
            frame = ANSWER.pack(b"V", value, self.oracle.budget_spent_fraction)
        except StopCriterionReached:
            frame = ANSWER.pack(b"S", 0.0, self.oracle.budget_spent_fraction)
        try:
            os.write(self.resp, frame)
        except BlockingIOError:
            raise _Violation("requests sent without reading the answers") from None
        except BrokenPipeError:
            pass

    def _on_json(self, raw: bytes) -> None:
        try:
            msg = json.loads(raw)
            kind = msg["t"]
        except (ValueError, TypeError, KeyError):
            raise _Violation("malformed message") from None
        if kind == "start":
            if self.run_state or msg.get("k") != self.k:
                raise _Violation("unexpected run start")
            ti = self.job.runs[self.k][0]
            self.oracle = self._Oracle(self.job.tasks[ti], self.job.budgets[ti], self.spaces[ti])
            self.n_rows = self.spaces[ti].size
            self.run_state = {"started": True, "t": time.monotonic(), "protections": msg.get("protections", {})}
        elif kind == "error":
            self._require_run()["error"] = self._error_from_child(msg)
        elif kind == "setup-error":
            if self.run_state:  # after "start" only the candidate can have written it
                raise _Violation("forged set-up message")
            raise SandboxError(f"the sandbox could not set up run {self.k}: {str(msg.get('message'))[:300]}; "
                               "try SandboxConfig(isolate=False) and report the message")
        else:
            raise _Violation(f"unknown message {kind!r}")

    def _finish_run(self, status) -> None:
        st = self.run_state
        ti, repeat, _ = self.job.runs[self.k]
        error = st.get("error")
        if error is None and not st.get("done"):
            error = self._error(*self._status_error(status))
        trace = self.oracle.trace() if (self.oracle is not None and error is None) else None
        wall = time.monotonic() - st.get("t", time.monotonic())
        self.runs.append(RunOutcome(ti, repeat, trace, error, wall, st.get("protections", {})))
        self.k += 1
        if "pidfd" in self.pids:
            os.close(self.pids["pidfd"])
        self.run_state, self.oracle, self.pids = {}, None, {}
        self.deadline = time.monotonic() + self.cfg.timeout_s

    # ---------------------------------------------------------------- errors
    def _where(self) -> tuple[str, int]:
        ti, repeat, _ = self.job.runs[min(self.k, len(self.job.runs) - 1)]
        return self.job.tasks[ti].name, repeat

    def _error(self, kind: str, message: str, **kw) -> CandidateError:
        task, repeat = self._where()
        return CandidateError(kind, message, task=task, repeat=repeat, **kw)

    def _error_from_child(self, msg: dict) -> CandidateError:
        kind = msg.get("kind") if msg.get("kind") in ERROR_KINDS else "exception"
        lineno = msg.get("lineno") if isinstance(msg.get("lineno"), int) else None
        line = msg.get("line") if isinstance(msg.get("line"), str) else None
        return self._error(kind, str(msg.get("message", ""))[:600], traceback=str(msg.get("traceback", ""))[-2500:],
                           line=line, lineno=lineno)

    def _timeout_error(self) -> CandidateError:
        if not self.ready:
            self.kill()
            raise SandboxError(f"the sandbox host did not start within {self.cfg.startup_s:g} s "
                               f"(machine overloaded?); raise SandboxConfig.startup_s. Output: {self._output_text()[-400:]}")
        return self._error("timeout", f"the run did not finish within {self.cfg.timeout_s:g} s of wall-clock time; "
                                      "stop when func raises StopCriterionReached or budget_spent_fraction reaches 1, "
                                      "and keep the work per evaluation small")

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
        return "killed", (f"the candidate's process exited (status {code}) before its __call__ returned "
                          "(os._exit, or sys.exit in a thread); return from __call__ instead")

    # ---------------------------------------------------------------- output capture
    def _on_output(self, sel) -> None:
        data = os.read(self.out, 65536)
        if not data:
            sel.unregister(self.out)
            self.out_closed = True
            return
        self._keep_output(data)

    def _keep_output(self, data: bytes) -> None:
        half = self.cfg.output_kb * 512
        self.out_total += len(data)
        if len(self.out_head) < half:
            take = half - len(self.out_head)
            self.out_head += data[:take]
            data = data[take:]
        self.out_tail = (self.out_tail + data)[-half:]

    def _drain_output(self) -> None:
        if getattr(self, "out_closed", False):
            return
        os.set_blocking(self.out, False)
        try:
            while True:
                data = os.read(self.out, 65536)
                if not data:
                    break
                self._keep_output(data)
        except (BlockingIOError, OSError):
            pass

    def _output_text(self) -> str:
        head = self.out_head.decode(errors="replace")
        cut = self.out_total - len(self.out_head) - len(self.out_tail)
        tail = self.out_tail.decode(errors="replace")
        return head + (f"\n... [{cut} bytes cut] ...\n" if cut > 0 else "") + tail


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
