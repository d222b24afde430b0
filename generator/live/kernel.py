"""Live tuning: a real kernel, compiled, verified and timed by Kernel Tuner, one configuration at a time.

A `LiveSession` keeps Kernel Tuner's `tune_kernel` running in a background thread with a strategy
object of ours that waits for configurations to measure, so the device, the kernel arguments and
the reference answer are set up once. A `LiveOracle` has the interface of the cached `Oracle` but
measures each new configuration through the session (one evaluation at a time per device, also
across processes). A `LiveTask` is a Task whose answer key is the problem's measured cache for that
device when there is one (scores are then computed against the brute-force optimum), else empty
(scores are then computed against a random search of the same budget, run live too).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import queue
import re
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from generator.errors import TunesmithError
from generator.tasks.problems import Problem, load_problem

VERIFY_FAILED = "Kernel result verification failed"


class LiveUnavailable(TunesmithError):
    """The device a live problem needs is not here (no GPU, no compiler)."""


def cuda_device_count() -> tuple[int, str]:
    """CUDA devices CuPy can use here, and why there are none when there are none."""
    try:
        import cupy

        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # ImportError, or CUDARuntimeError when there is no driver
        return 0, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return count, "CuPy sees 0 devices"


def require_device(problem: Problem) -> None:
    """Fail fast, with the fix, when this machine cannot run the problem's kernel."""
    if problem.lang == "C":
        if shutil.which("g++") is None:
            raise LiveUnavailable(f"{problem.path}: the C problem needs g++ on PATH; install g++ (apt-get install g++)")
        return
    count, why = cuda_device_count()
    if count == 0:  # cached tasks are the way out only where a space was measured (not for a kernel brought new)
        cached = Path(problem.caches_dir).is_dir() and any(Path(problem.caches_dir).glob("*.json*"))
        instead = (
            f", or use its cached tasks in {problem.caches_dir}"
            if cached
            else " (it has no measured space to use instead: `tunesmith cache build` makes one there)"
        )
        raise LiveUnavailable(
            f"{problem.path}: problem {problem.name!r} needs a CUDA GPU and none is usable here "
            f"({why}); run it on a machine with an NVIDIA GPU and CuPy{instead}"
        )


def patch_cupy_uuid() -> None:
    """Some GPUs report an empty uuid, which makes Kernel Tuner's CuPy backend fail at start."""
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties
    if getattr(props, "_tunesmith_patched", False):
        return

    def patched(device):
        p = props(device)
        return {**p, "uuid": p.get("uuid") or bytes(16)}

    patched._tunesmith_patched = True
    cupy.cuda.runtime.getDeviceProperties = patched


def cpu_name() -> str:
    """This machine's processor as "CPU <model>" (/proc/cpuinfo's model name), or "CPU" when it says none."""
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            model = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), "")
    except OSError:
        model = ""
    return f"CPU {model or platform.processor()}".strip()


def device_name(problem: Problem, device: int = 0) -> str:
    """The full name of the device the problem runs on ("NVIDIA H200", or "CPU <model>")."""
    if problem.lang == "C":
        return cpu_name()
    import cupy

    name = cupy.cuda.runtime.getDeviceProperties(device)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def device_label(name: str) -> str:
    """A short file-name label for a device: "NVIDIA H100 80GB HBM3" -> "H100"; a processor keeps its model,
    "CPU Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz" -> "CPU_Intel_Xeon_Gold_6248", so that two machines' caches
    of one C problem do not both land in CPU.json.gz."""
    if name == "CPU" or name.startswith("CPU "):
        model = re.sub(r"\((R|TM|tm)\)|\bCPU\b|@.*$|\b\d+-Core Processor\b", " ", name[3:])
        words = re.sub(r"[^A-Za-z0-9-]+", "_", model.strip()).strip("_")
        return f"CPU_{words}" if words else "CPU"
    match = re.search(r"\b([A-Z]{1,3}\d{2,4}[A-Za-z]?)\b", name)
    if match:
        return match.group(1)
    return re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_") or "device"


_KT_TMP: list[str] = []


def patch_temp_files() -> None:
    """Kernel Tuner writes (and on errors leaves) its temporary sources in the working directory;
    a session puts them in a private temporary folder instead (chdir is process-wide, not per thread)."""
    import kernel_tuner.backends.compiler as compiler
    import kernel_tuner.util as util

    if _KT_TMP:
        return
    _KT_TMP.append(tempfile.mkdtemp(prefix="tunesmith-kt-"))
    atexit.register(shutil.rmtree, _KT_TMP[0], True)

    def get_temp_filename(suffix=None):
        fd, name = tempfile.mkstemp(suffix=suffix, prefix="temp_", dir=_KT_TMP[0])
        os.close(fd)
        return name

    util.get_temp_filename = compiler.get_temp_filename = get_temp_filename


@contextlib.contextmanager
def scratch_dir():
    """Run Kernel Tuner in a throwaway working directory."""
    # Kernel Tuner writes temporary sources into the working directory (and leaves them on errors).
    with tempfile.TemporaryDirectory(prefix="tunesmith-kt-") as tmp, contextlib.chdir(tmp):
        yield Path(tmp)


def config_key(config) -> str:
    """Kernel Tuner's cache key of a configuration."""
    return ",".join(str(v) for v in config)


def device_key(problem: Problem, device: int = 0) -> str:
    """What identifies the physical device across processes: "CPU", or the GPU's PCI bus id."""
    if problem.lang == "C":
        return "CPU"
    try:
        import cupy

        bus = cupy.cuda.runtime.deviceGetPCIBusId(device)
    except Exception:  # noqa: BLE001 - no usable GPU: require_device says so elsewhere
        bus = f"cuda{device}"
    # (not the name + index: Dask's GPU workers each see their own GPU as device 0)
    return "gpu-" + re.sub(r"[^A-Za-z0-9]+", "_", str(bus))


_HELD = threading.local()  # device keys this thread holds: the lock is re-entrant per thread


@contextlib.contextmanager
def device_lock(key: str):
    """One evaluation at a time per device, across threads and processes (an advisory file lock).

    Re-entrant in one thread: a sandbox job with live tasks holds its device for the whole job
    (`run_live_job`), and each measurement in it takes the lock again.
    """
    held = _HELD.__dict__.setdefault("keys", set())
    if key in held:
        yield
        return
    path = Path(tempfile.gettempdir()) / f"tunesmith-device-{key}.lock"
    with open(path, "a") as fh:  # a fresh open file description: flock excludes other threads too
        fcntl.flock(fh, fcntl.LOCK_EX)
        held.add(key)
        try:
            yield
        finally:
            held.discard(key)
            fcntl.flock(fh, fcntl.LOCK_UN)


@dataclass(frozen=True)
class Measurement:
    """One live evaluation: the objective (NaN when it failed), its cost in seconds, what failed."""

    value: float
    seconds: float  # compile + verification + benchmark, as Kernel Tuner timed them
    error: str | None = None


def _measurement(result: dict | None, objective: str) -> Measurement:
    if result is None:
        return Measurement(float("nan"), 0.0, "NotEvaluated")
    seconds = sum(float(result.get(k) or 0.0) for k in ("compile_time", "verification_time", "benchmark_time")) / 1e3
    if "__error__" in result:
        return Measurement(float("nan"), seconds, str(result["__error__"]))
    value = result.get(objective)
    if not isinstance(value, (int, float)) or not np.isfinite(value):
        return Measurement(float("nan"), seconds, f"no {objective!r} in the result")
    return Measurement(float(value), seconds)


class _Server:
    """A Kernel Tuner strategy that measures configurations as a LiveSession hands them over."""

    def __init__(self, session: LiveSession):
        self.session = session

    def tune(self, searchspace, runner, tuning_options):
        from kernel_tuner.util import TuningBudget

        # Every request is a fresh measurement: no budget, no in-memory cache of earlier results.
        tuning_options.budget, tuning_options.cache, tuning_options.cachefile = TuningBudget(), None, None
        inbox, outbox = self.session._requests, self.session._replies
        outbox.put(("ready", None))
        while (config := inbox.get()) is not None:
            try:
                outbox.put(("ok", runner.run([tuple(config)], tuning_options)[0]))
            except RuntimeError as exc:
                if VERIFY_FAILED not in str(exc):
                    outbox.put(("error", exc))
                    continue
                outbox.put(("ok", {"__error__": "VerificationFailed", "compile_time": 0.0}))
            except Exception as exc:  # noqa: BLE001 - handed to the caller, who raises it
                outbox.put(("error", exc))
        return []


class LiveSession:
    """Kernel Tuner set up once for a problem on one device; `measure(config)` runs one configuration."""

    def __init__(self, problem: Problem | str | Path, device: int = 0, verify: bool = True):
        self.problem = problem if isinstance(problem, Problem) else load_problem(problem)
        require_device(self.problem)
        if self.problem.lang == "cupy":
            patch_cupy_uuid()
        patch_temp_files()
        self.device = device
        self.device_name = device_name(self.problem, device)
        self.label = device_label(self.device_name)
        self.key = device_key(self.problem, device)
        self._requests: queue.Queue = queue.Queue()
        self._replies: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        arguments = self.problem.make_arguments()
        answer = self.problem.answer(arguments) if verify else None
        self._thread = threading.Thread(
            target=self._run, args=(arguments, answer), daemon=True, name=f"tunesmith-live-{self.problem.name}"
        )
        self._thread.start()
        kind, value = self._replies.get()
        if kind != "ready":
            raise LiveUnavailable(
                f"{self.problem.path}: Kernel Tuner could not start on {self.device_name} "
                f"({type(value).__name__}: {value}); check the problem spec and the device"
            )

    def _run(self, arguments, answer) -> None:
        import warnings

        import kernel_tuner

        # a C kernel has no thread blocks; Kernel Tuner warns about it on every start (a global filter:
        # warnings.catch_warnings is not thread-safe)
        warnings.filterwarnings("ignore", message="None of the tunable parameters specify thread block")

        try:
            kernel_tuner.tune_kernel(
                arguments=arguments,
                answer=answer,
                strategy=_Server(self),
                quiet=True,
                device=self.device,
                **self.problem.tune_kwargs(),
            )
        except BaseException as exc:  # noqa: BLE001 - reported to whoever waits
            self._replies.put(("error", exc))

    def measure(self, config) -> Measurement:
        """Compile, verify and benchmark one configuration (one at a time on this device)."""
        # the device first, then this session: a job holding the device must never wait on a thread
        # that holds the session and waits for the device
        with device_lock(self.key), self._lock:
            if not self._thread.is_alive():
                raise LiveUnavailable(f"{self.problem.path}: the Kernel Tuner session has ended; start a new one")
            self._requests.put(tuple(config))
            kind, value = self._replies.get()
        if kind == "error":
            raise LiveUnavailable(
                f"{self.problem.path}: measuring {config_key(config)} failed on {self.device_name} "
                f"({type(value).__name__}: {value})"
            ) from value
        return _measurement(value, self.problem.objective.name)

    def close(self) -> None:
        """Let Kernel Tuner finish and release the device."""
        if self._thread.is_alive():
            self._requests.put(None)
            self._thread.join(timeout=60)


_SESSIONS: dict[tuple[str, int], LiveSession] = {}


def session_for(problem: Problem, device: int = 0) -> LiveSession:
    """The process's session for a problem and device (set up on first use: arguments, reference answer)."""
    key = (str(problem.path.resolve()), device)
    if key not in _SESSIONS or not _SESSIONS[key]._thread.is_alive():
        _SESSIONS[key] = LiveSession(problem, device)
    return _SESSIONS[key]
