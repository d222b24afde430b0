"""Running an untrusted kernel: a walled child process compiles and times it; this side keeps the answer.

`run_walled` hands the child (`walled_child.py`) the kernel source, its arguments and the
configurations to measure; it never hands over the reference answer. A wall-clock timeout kills the
child's whole process group (the PID namespace goes with its first process), and the result is
read as JSON + npz frames, never unpickled: the process that ran the kernel is as untrusted as the
kernel. The outputs come one frame per configuration and argument, each capped at the size that
output has (a larger one is refused, naming the limit); a `judge` turns each into a verdict as it
arrives, so the parent holds one output at a time, however many configurations run.
"""

from __future__ import annotations

import io
import json
import os
import signal
import struct
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from generator.errors import TunesmithError
from generator.kernels.walled_child import DEATH, frame
from generator.sandbox.jobs import interpreter_paths


class WallsUnavailable(TunesmithError):
    """This machine cannot put up the walls an untrusted kernel needs."""


@dataclass(frozen=True)
class KernelLimits:
    """Limits of one walled kernel run (seconds, MiB, processes)."""

    timeout_s: float = 120.0  # wall clock of the whole run (every configuration)
    cpu_s: int = 120
    memory_mb: int = 2048
    nproc: int = 32  # g++ runs cc1plus, as and ld
    file_mb: int = 64
    scratch_mb: int = 256
    result_mb: int = 1024  # the most the parent reads back: the last frame, or the outputs it keeps (no judge)
    data_mb: int = 32768  # CUDA kernels: RLIMIT_DATA instead of RLIMIT_AS
    output_kb: int = 64  # stdout+stderr kept


@dataclass
class WalledResult:
    """What came back from the walls: Kernel Tuner's cache text, outputs by 'config|arg', or an error."""

    cache: str | None = None
    outputs: dict = field(default_factory=dict)  # kept when run without a judge
    verdicts: dict = field(default_factory=dict)  # 'config|arg' -> None (matches) or why not, with a judge
    compile_error: str | None = None
    device: str = "CPU"  # the device the kernel ran on
    error: str | None = None  # the run failed (timeout, crash, a wall did not go up)
    protections: dict = field(default_factory=dict)
    log: str = ""
    uid: int | None = None  # the unprivileged uid the kernel ran as


def run_walled(
    source: str,
    kernel_name: str,
    problem_size,
    arguments: list,
    outputs: list[int],
    tune_params: dict,
    configs: list[tuple],
    defines: dict | None = None,
    compiler_options: list | None = None,
    iterations: int = 7,
    limits: KernelLimits = KernelLimits(),
    lang: str = "C",
    grid_div: dict | None = None,
    block_size_names: list | None = None,
    probe: np.ndarray | None = None,
    judge: Callable[[int, np.ndarray], str | None] | None = None,
) -> WalledResult:
    """Compile, capture the outputs of and time `configs` of a kernel (C, or CUDA through CuPy) inside the walls.

    With `judge(arg_index, output)`, each output is judged as it arrives and only the verdict is kept."""
    if lang == "cupy":  # CUDA reserves far more address space than it uses: RLIMIT_AS would stop it starting
        limits = replace(limits, memory_mb=max(limits.memory_mb, 1 << 20), nproc=max(limits.nproc, 64))
    job = {
        "source": source,
        "lang": lang,
        "grid_div": dict(grid_div or {}),
        "block_size_names": block_size_names,
        "kernel_name": kernel_name,
        "problem_size": list(problem_size),
        "n_args": len(arguments),
        "outputs": list(outputs),
        "tune_params": tune_params,
        "params": list(tune_params),
        "configs": [list(c) for c in configs],
        "defines": dict(defines or {}),
        "compiler_options": list(compiler_options or []),
        "iterations": iterations,
        "compile_timeout_s": max(5.0, limits.timeout_s / 2),
        "keep": interpreter_paths(),
        "cpu_s": limits.cpu_s,
        "memory_mb": limits.memory_mb,
        "nproc": limits.nproc,
        "file_mb": limits.file_mb,
        "scratch_mb": limits.scratch_mb,
        "data_mb": limits.data_mb if lang == "cupy" else None,
    }
    arrays = {f"arg{i}": np.asarray(a) for i, a in enumerate(arguments)}
    if probe is not None:  # flat indices: only these output elements come back, per configuration
        arrays["probe"] = np.asarray(probe, dtype=np.int64)
    rd, wr = os.pipe()
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "LANG": "C.UTF-8"}
    if lang == "cupy":  # where CuPy finds the CUDA toolkit and its libraries (kept read-only in the walls)
        env.update({k: os.environ[k] for k in ("CUDA_PATH", "CUDA_HOME", "LD_LIBRARY_PATH") if k in os.environ})
        # CuPy settles its kernel cache folder at import, before the walls: point it into the scratch
        # working directory that the walls make (/tmp/work), not at the host's home
        env.update(HOME="/tmp/work", CUPY_CACHE_DIR="/tmp/work/.cupy")
    proc = subprocess.Popen(
        [sys.executable, "-m", "generator.kernels.walled_child", str(wr)],
        pass_fds=(wr,),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    os.close(wr)
    # the size each output frame may have: that output's (or the probe's) bytes, plus the npz's few headers
    sizes = [
        (
            np.asarray(probe).size * np.asarray(arguments[i]).itemsize
            if probe is not None
            else np.asarray(arguments[i]).nbytes
        )
        for i in outputs
    ]
    stream = _ResultStream(
        set(outputs), max(sizes, default=0) + (1 << 20), limits.result_mb, judge, lambda: _kill_group(proc, wait=False)
    )
    log = bytearray()
    readers = [
        threading.Thread(target=stream.read, args=(rd,), daemon=True),
        threading.Thread(target=_drain, args=(proc.stdout.fileno(), log, limits.output_kb << 10), daemon=True),
    ]
    for t in readers:
        t.start()
    try:
        proc.stdin.write(frame(job, arrays))
        proc.stdin.close()
    except BrokenPipeError:
        pass
    try:
        proc.wait(timeout=limits.timeout_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
    _kill_group(proc)
    for t in readers:
        t.join(timeout=10)
    os.close(rd)
    text = log.decode(errors="replace")
    if stream.failure is not None:  # the judge's own error (ours, not the kernel's)
        raise stream.failure
    if stream.error:  # a limit hit or a malformed frame: said before a time-out, which it may have caused
        died = _death(text)
        return WalledResult(
            error=stream.error + (f"; {died}" if died and "truncated" in stream.error else ""), log=text
        )
    if timed_out:
        return WalledResult(
            error=f"the kernel ran past the walls' time limit of {limits.timeout_s:.0f} s and was "
            "killed (an endless loop, or too many configurations)",
            log=text,
        )
    return _parse(stream, text)


class _FrameError(Exception):
    """A frame that breaks the protocol or a limit; its message is the run's error."""


class _ResultStream:
    """The walled child's frames, read as they come: outputs judged (or kept), then the last frame's header."""

    def __init__(self, outputs: set, output_bytes: int, result_mb: int, judge, kill):
        self.outputs, self.output_bytes, self.result_mb = outputs, output_bytes, result_mb
        self.judge, self.kill = judge, kill
        self.head: dict | None = None
        self.arrays: dict = {}
        self.verdicts: dict = {}
        self.kept = 0  # bytes of outputs kept (no judge)
        self.error: str | None = None
        self.failure: BaseException | None = None

    def read(self, fd: int) -> None:
        """Read frames until the last one; on a broken limit, say which and stop the run."""
        with os.fdopen(fd, "rb", buffering=1 << 16, closefd=False) as pipe:
            try:
                while self.head is None and self._frame(pipe):
                    pass
            except _FrameError as exc:
                self.error = str(exc)
                self.kill()
            except Exception as exc:  # noqa: BLE001 - the judge's failure, raised in the caller's thread
                self.failure = exc
                self.kill()
            while pipe.read(1 << 16):  # whatever follows is dropped (the child must not block on a full pipe)
                pass

    def _frame(self, pipe) -> bool:
        """One frame; False at the end of the stream."""
        size = pipe.read(8)
        if not size:
            return False
        result_cap = (self.result_mb << 20, "KernelLimits.result_mb")
        head = _json(_exactly(pipe, _length(size, *result_cap, "a result header")))
        if "config" not in head:  # the last frame: the cache, the device, the walls that held
            _exactly(pipe, _length(pipe.read(8), *result_cap, "a result"))  # it carries no arrays
            self.head = head
            return True
        key, arg = head.get("config"), head.get("arg")
        if not isinstance(key, str) or not isinstance(arg, int) or isinstance(arg, bool) or arg not in self.outputs:
            raise _FrameError("the walled kernel run sent back a malformed result (an output of no argument)")
        n = _length(
            pipe.read(8),
            self.output_bytes,
            "the size of that argument",
            f"an output (configuration {key[:60]}, argument {arg})",
        )
        got = _npz_array(_exactly(pipe, n))
        if self.judge is not None:
            self.verdicts[f"{key}|{arg}"] = self.judge(arg, got)
            return True
        self.kept += got.nbytes
        if self.kept > self.result_mb << 20:
            raise _FrameError(
                f"the outputs the walled kernel run sent back pass the walls' result limit of "
                f"{self.result_mb} MiB (KernelLimits.result_mb); judge them as they come "
                "(run_walled's judge) or raise the limit"
            )
        self.arrays[f"{key}|{arg}"] = got
        return True


def _length(raw: bytes, cap: int, limit: str, what: str) -> int:
    """A frame part's declared length, refused past `cap` bytes, naming the `limit`."""
    if len(raw) != 8:
        raise _FrameError("the walled kernel run sent back a truncated result (it crashed or was killed mid-frame)")
    (n,) = struct.unpack("<q", raw)
    if n < 0 or n > cap:
        raise _FrameError(
            f"the walled kernel run sent back {what} of {n:,} bytes, over the walls' limit of "
            f"{cap:,} bytes for it ({limit})"
        )
    return n


def _json(raw: bytes) -> dict:
    try:
        head = json.loads(raw)
    except Exception:  # noqa: BLE001 - bad UTF-8, bad JSON, nesting past the recursion limit
        head = None
    if not isinstance(head, dict):
        raise _FrameError("the walled kernel run sent back a malformed result")
    return head


def _exactly(pipe, n: int) -> bytes:
    data = pipe.read(n)
    if len(data) != n:
        raise _FrameError("the walled kernel run sent back a truncated result (it crashed or was killed mid-frame)")
    return data


def _npz_array(raw: bytes) -> np.ndarray:
    """The one array of an output frame's npz (no pickles: object arrays are refused)."""
    try:
        with np.load(io.BytesIO(raw), allow_pickle=False) as npz:
            return npz["out"]
    except Exception as exc:  # noqa: BLE001 - anything malformed is the kernel's fault
        raise _FrameError(f"the walled kernel run sent back an unreadable output ({type(exc).__name__})") from None


def _drain(fd: int, into: bytearray, cap: int) -> None:
    """Read a pipe to its end, keeping at most `cap` bytes (the rest is read and dropped)."""
    while chunk := _read(fd):
        if len(into) < cap:
            into += chunk[: cap - len(into)]


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 1 << 16)
    except OSError:
        return b""


def _kill_group(proc: subprocess.Popen, wait: bool = True) -> None:
    """SIGKILL whatever of the walled run is still around (its session = its process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    if wait:
        proc.wait()


def _parse(stream: _ResultStream, log: str) -> WalledResult:
    """The child's last frame, checked as data (a JSON header, nothing executable), with the outputs before it."""
    head = stream.head
    if head is None:
        why = _death(log) or (log.strip().splitlines()[-1][:300] if log.strip() else "no output")
        return WalledResult(
            error=f"the walled kernel run ended without a result (it crashed or was killed: {why})", log=log
        )
    prot = head.get("protections") if isinstance(head.get("protections"), dict) else {}
    out = WalledResult(
        cache=_str(head.get("cache")),
        outputs=stream.arrays,
        verdicts=stream.verdicts,
        compile_error=_str(head.get("compile_error")),
        error=_str(head.get("error")),
        protections=prot,
        log=log,
        uid=head.get("uid") if isinstance(head.get("uid"), int) else None,
        device=head["device"] if isinstance(head.get("device"), str) else "CPU",
    )
    if out.error and "walls" in out.error or (out.error or "").startswith("RuntimeError: no mount namespace"):
        raise WallsUnavailable(
            f"untrusted kernels run only inside the sandbox's walls, and they did not go up here "
            f"({out.error}); run as a user allowed to create namespaces (unprivileged user "
            "namespaces, or root in a container)"
        )
    return out


def _death(log: str) -> str | None:
    """How the walled process died, from the last line its outer process printed (None: it was not killed)."""
    last = log.strip().splitlines()[-1] if log.strip() else ""
    return last[len(DEATH) :][:300] if last.startswith(DEATH) else None


def _str(value) -> str | None:
    return value if isinstance(value, str) else None
