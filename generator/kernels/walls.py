"""Running an untrusted kernel: a walled child process compiles and times it; this side keeps the answer.

`run_walled` hands the child (`walled_child.py`) the kernel source, its arguments and the
configurations to measure; it never hands over the reference answer. A wall-clock timeout kills the
child's whole process group (the PID namespace goes with its first process), the result pipe and
the captured output are capped, and the result is read as JSON + npz, never unpickled: the
process that ran the kernel is as untrusted as the kernel.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field, replace

import numpy as np

from generator.errors import TunesmithError
from generator.kernels.walled_child import frame, read_frame
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
    result_mb: int = 1024  # largest result the parent reads back
    data_mb: int = 32768  # CUDA kernels: RLIMIT_DATA instead of RLIMIT_AS
    output_kb: int = 64  # stdout+stderr kept


@dataclass
class WalledResult:
    """What came back from the walls: Kernel Tuner's cache text, outputs by 'config|arg', or an error."""

    cache: str | None = None
    outputs: dict = field(default_factory=dict)
    compile_error: str | None = None
    device: str = "CPU"  # the device the kernel ran on
    error: str | None = None  # the run failed (timeout, crash, a wall did not go up)
    protections: dict = field(default_factory=dict)
    log: str = ""
    uid: int | None = None  # the unprivileged uid the kernel ran as


def run_walled(source: str, kernel_name: str, problem_size, arguments: list, outputs: list[int],
               tune_params: dict, configs: list[tuple], defines: dict | None = None,
               compiler_options: list | None = None, iterations: int = 7,
               limits: KernelLimits = KernelLimits(), lang: str = "C", grid_div: dict | None = None,
               block_size_names: list | None = None, probe: np.ndarray | None = None) -> WalledResult:
    """Compile, capture the outputs of and time `configs` of a kernel (C, or CUDA through CuPy) inside the walls."""
    if lang == "cupy":  # CUDA reserves far more address space than it uses: RLIMIT_AS would stop it starting
        limits = replace(limits, memory_mb=max(limits.memory_mb, 1 << 20), nproc=max(limits.nproc, 64))
    job = {"source": source, "lang": lang, "grid_div": dict(grid_div or {}), "block_size_names": block_size_names, "kernel_name": kernel_name, "problem_size": list(problem_size),
           "n_args": len(arguments), "outputs": list(outputs), "tune_params": tune_params,
           "params": list(tune_params), "configs": [list(c) for c in configs], "defines": dict(defines or {}),
           "compiler_options": list(compiler_options or []), "iterations": iterations,
           "compile_timeout_s": max(5.0, limits.timeout_s / 2), "keep": interpreter_paths(),
           "cpu_s": limits.cpu_s, "memory_mb": limits.memory_mb, "nproc": limits.nproc, "file_mb": limits.file_mb,
           "scratch_mb": limits.scratch_mb, "data_mb": limits.data_mb if lang == "cupy" else None}
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
    proc = subprocess.Popen([sys.executable, "-m", "generator.kernels.walled_child", str(wr)], pass_fds=(wr,),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    os.close(wr)
    result, log = bytearray(), bytearray()
    readers = [threading.Thread(target=_drain, args=(rd, result, limits.result_mb << 20), daemon=True),
               threading.Thread(target=_drain, args=(proc.stdout.fileno(), log, limits.output_kb << 10), daemon=True)]
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
    if timed_out:
        return WalledResult(error=f"the kernel ran past the walls' time limit of {limits.timeout_s:.0f} s and was "
                                  "killed (an endless loop, or too many configurations)", log=text)
    return _parse(bytes(result), text)


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


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL whatever of the walled run is still around (its session = its process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait()


def _parse(raw: bytes, log: str) -> WalledResult:
    """The child's answer, checked as data: a JSON header and an npz of arrays, nothing executable."""
    if not raw:
        return WalledResult(error="the walled kernel run ended without a result (it crashed or was killed: "
                                  f"{log.strip().splitlines()[-1][:300] if log.strip() else 'no output'})", log=log)
    try:
        head, arrays = read_frame(io.BytesIO(raw))
    except Exception as exc:  # noqa: BLE001 - anything malformed is the kernel's fault
        return WalledResult(error=f"the walled kernel run sent back an unreadable result ({type(exc).__name__})",
                            log=log)
    if not isinstance(head, dict):
        return WalledResult(error="the walled kernel run sent back a malformed result", log=log)
    prot = head.get("protections") if isinstance(head.get("protections"), dict) else {}
    out = WalledResult(cache=_str(head.get("cache")), outputs=arrays, compile_error=_str(head.get("compile_error")),
                       error=_str(head.get("error")), protections=prot, log=log,
                       uid=head.get("uid") if isinstance(head.get("uid"), int) else None,
                       device=head["device"] if isinstance(head.get("device"), str) else "CPU")
    if out.error and "walls" in out.error or (out.error or "").startswith("RuntimeError: no mount namespace"):
        raise WallsUnavailable(f"untrusted kernels run only inside the sandbox's walls, and they did not go up here "
                               f"({out.error}); run as a user allowed to create namespaces (unprivileged user "
                               "namespaces, or root in a container)")
    return out


def _str(value) -> str | None:
    return value if isinstance(value, str) else None
