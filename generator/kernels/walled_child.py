"""The walled side: compile and run an untrusted kernel with Kernel Tuner, inside the sandbox's walls.

Started by `kernels.walls.run_walled` as `python -m generator.kernels.walled_child FD`. It reads one
job (JSON header + npz arrays, never a pickle) from stdin, imports everything it will need, then
puts up the sandbox's walls (`generator.sandbox`: new namespaces, an allowlist root that holds only
Python, the compiler and the system libraries, read-only; a private scratch /tmp; rlimits; an
unprivileged uid; a fresh keyring; the system-call filter) and only then writes the kernel source
and lets Kernel Tuner compile and run it. The reference answer never enters these walls: the
outputs of every configuration go back, and the parent compares them. Results go back on fd FD as
a stream of frames (a JSON header and an npz, read without unpickling): one per output of each
configuration as soon as it is captured, so that neither side ever holds more than one output (an
8192x8192 output is 256 MiB; six of them, packed at the end, once passed the parent's result limit),
then a last frame with Kernel Tuner's cache and the walls that held.
"""

from __future__ import annotations

import glob
import io
import json
import os
import signal
import struct
import subprocess
import sys

import numpy as np

# what g++ needs besides the Python installation and the system libraries the sandbox keeps
TOOLCHAIN = ("/usr/bin", "/usr/include", "/usr/libexec/gcc", "/usr/local/include", "/etc/alternatives")
# where CuPy finds the CUDA toolkit (kept read-only inside the walls for a CUDA kernel)
CUDA_ENV = ("CUDA_PATH", "CUDA_HOME")


def read_frame(stream) -> tuple[dict, dict]:
    """A JSON header and its npz arrays (length-prefixed)."""
    (n_head,) = struct.unpack("<q", stream.read(8))
    head = json.loads(stream.read(n_head))
    (n_arr,) = struct.unpack("<q", stream.read(8))
    arrays = dict(np.load(io.BytesIO(stream.read(n_arr)), allow_pickle=False)) if n_arr else {}
    return head, arrays


def send(fd: int, head: dict, arrays: dict | None = None) -> None:
    """Write one frame to `fd` whole (a pipe takes it in pieces), without copying the npz again."""
    for part in _frame_parts(head, arrays or {}):
        data = memoryview(part)
        while data:
            data = data[os.write(fd, data) :]


def frame(head: dict, arrays: dict) -> bytes:
    """The bytes of a JSON header and its npz arrays."""
    return b"".join(_frame_parts(head, arrays))


def _frame_parts(head: dict, arrays: dict) -> list:
    raw = json.dumps(head).encode()
    buf = io.BytesIO()
    if arrays:
        np.savez(buf, **arrays)
    body = buf.getbuffer()
    return [struct.pack("<q", len(raw)), raw, struct.pack("<q", body.nbytes), body]


class _Listed:
    """A Kernel Tuner strategy: the given configurations, one at a time, in order."""

    def __init__(self, configs, state: dict):
        self.configs = [tuple(c) for c in configs]
        self.state = state  # the configuration being run, for the output capture

    def tune(self, searchspace, runner, tuning_options):
        results = []
        for config in self.configs:
            if not searchspace.is_param_config_valid(config):
                continue
            self.state["key"] = ",".join(str(v) for v in config)
            try:
                results += runner.run([config], tuning_options)
            except Exception as exc:  # noqa: BLE001 - reported per configuration
                results.append({"__error__": f"{type(exc).__name__}: {exc}"})
        return results


def wall_clock_observer():
    """A Kernel Tuner observer: the shortest wall-clock time of a C kernel call, in ms (`wall_time`).

    Kernel Tuner's C backend takes the time the kernel returns; a template could return less than
    it ran, so the parent compares the two."""
    import time

    from kernel_tuner.observers.observer import BenchmarkObserver

    class WallClock(BenchmarkObserver):
        def __init__(self):
            self.times, self.start = [], 0.0

        def before_start(self):
            self.start = time.perf_counter()

        def after_start(self):  # the C backend's call is synchronous: it has returned here
            self.times.append(1e3 * (time.perf_counter() - self.start))

        def get_results(self):
            times, self.times = self.times, []
            # the least disturbed call: on a loaded machine a mean carries other processes' time
            return {"wall_time": float(np.min(times)) if times else float("nan")}

    return WallClock()


def _compile_error(job: dict, source_file: str) -> str | None:
    """g++'s own message for the first configuration (Kernel Tuner keeps only "compile failed")."""
    defines = [f"-D{k}={v}" for k, v in {**job["defines"], **dict(zip(job["params"], job["configs"][0]))}.items()]
    cmd = ["g++", "-fsyntax-only", *job["compiler_options"], *defines, source_file]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=job["compile_timeout_s"])
    return None if proc.returncode == 0 else (proc.stderr or proc.stdout)[-3000:]


def _cuda_compile_error(job: dict) -> str | None:
    """NVRTC's own message for the first configuration, through CuPy (Kernel Tuner keeps only "compile failed")."""
    import cupy

    values = {**job["defines"], **dict(zip(job["params"], job["configs"][0]))}
    code = "".join(f"#define {k} {v}\n" for k, v in values.items()) + job["source"]
    try:
        cupy.RawModule(code=code, options=tuple(job["compiler_options"])).get_function(job["kernel_name"])
    except Exception as exc:  # noqa: BLE001 - CompileException, or a missing function
        return f"{type(exc).__name__}: {exc}"[-3000:]
    return None


def measure(job: dict, arrays: dict, out_fd: int) -> dict:
    """Compile, run and time each configuration, sending each one's outputs on `out_fd` as they come."""
    import kernel_tuner

    cuda = job["lang"] == "cupy"
    source = os.path.abspath("kernel.cu" if cuda else "kernel.cpp")
    with open(source, "w") as fh:
        fh.write(job["source"])
    error = _cuda_compile_error(job) if cuda else _compile_error(job, source)
    if error is not None:
        return {"compile_error": error}
    device = "CPU"
    extra = {k: v for k, v in job["grid_div"].items() if v}
    if job.get("block_size_names"):
        extra["block_size_names"] = job["block_size_names"]
    if not cuda:
        extra["observers"] = [wall_clock_observer()]
    if cuda:
        import cupy

        from generator.live.kernel import patch_cupy_uuid

        patch_cupy_uuid()
        name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
        device = name.decode() if isinstance(name, bytes) else str(name)
    args = [arrays[f"arg{i}"] for i in range(job["n_args"])]
    state = {"key": None}
    probe = arrays.get("probe")

    def capture(answer, result_host, atol=None):
        # the outputs go back to the parent, which holds the reference and judges them, one at a time
        for i in job["outputs"]:
            got = np.asarray(result_host[i])
            # a probe: only these elements go back (a space of large outputs is judged on a sample of each)
            got = got.reshape(-1)[probe] if probe is not None else got
            send(out_fd, {"config": state["key"], "arg": i}, {"out": got})
        return True

    answer = [a.copy() if i in job["outputs"] else None for i, a in enumerate(args)]
    cache = os.path.abspath("cache.json")
    kernel_tuner.tune_kernel(
        job["kernel_name"],
        source,
        job["problem_size"],
        args,
        job["tune_params"],
        lang=job["lang"],
        **extra,
        strategy=_Listed(job["configs"], state),
        answer=answer,
        verify=capture,
        iterations=job["iterations"],
        cache=cache,
        quiet=True,
        compiler_options=job["compiler_options"] + [f"-D{k}={v}" for k, v in job["defines"].items()],
    )
    with open(cache) as fh:
        text = fh.read()
    return {"cache": text, "device": device}


def _walls(job: dict, prot) -> str:
    """Put up the sandbox's walls in this process (PID 1 of new namespaces); returns the working directory."""
    from generator.sandbox import isolation as iso
    from generator.sandbox.root_fs import enter_allowlist_root
    from generator.sandbox.syscall_filter import cap_ipc, install_filter, join_fresh_keyring

    iso.die_with_parent()
    workdir = "/tmp/work"
    if prot.held.get("namespaces") and iso.mount_private_root(prot):
        keep = job["keep"] + [p for p in TOOLCHAIN if os.path.exists(p)]
        devices = ()
        if job["lang"] == "cupy":  # the GPU's device nodes, the CUDA toolkit, and what the driver reads in /sys
            devices = tuple(n for n in os.listdir("/dev") if n.startswith("nvidia") and not os.path.isdir("/dev/" + n))
            libs = os.environ.get("LD_LIBRARY_PATH", "").split(":") + [os.environ.get(k, "") for k in CUDA_ENV]
            keep += [
                p
                for p in (*glob.glob("/usr/local/cuda*"), "/sys", *libs)
                if p and os.path.isabs(p) and os.path.exists(p)
            ]
        workdir = enter_allowlist_root(keep, [], job["scratch_mb"], prot, devices)
        if workdir is None:
            raise RuntimeError("the allowlist root could not be built; kernels are not run without walls")
        prot.mark("mount_namespace", True)
    else:
        raise RuntimeError("no mount namespace: kernels are not run without walls")
    if prot.held.get("ipc_namespace"):
        cap_ipc(job["scratch_mb"], prot)
    os.makedirs(workdir, exist_ok=True)
    uid = job["uid"]
    os.makedirs(workdir + "/.cupy", exist_ok=True)  # CuPy's kernel cache (walls.py points it here): CuPy
    # writes a temporary file into it without creating it first
    if uid is not None:
        for path in (workdir, workdir + "/.cupy"):
            os.chown(path, uid, iso.NOGROUP)
    os.chdir(workdir)
    os.environ.update(HOME=workdir, TMPDIR=workdir, PATH="/usr/bin:/bin", CUPY_CACHE_DIR=workdir + "/.cupy")
    limits = iso.Limits(cpu_s=job["cpu_s"], memory_mb=job["memory_mb"], nproc=job["nproc"], file_mb=job["file_mb"])
    with open("/proc/self/statm") as fh:
        mapped = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    iso.set_rlimits(limits, prot, 0, mapped)
    if job.get("data_mb"):  # CUDA: no RLIMIT_AS (its address-space reservations), so cap private writable memory
        _limit_data(job["data_mb"], prot)
    iso.drop_privileges(uid, prot)
    iso.die_with_parent()
    join_fresh_keyring(prot)
    install_filter(prot)
    return workdir


def _limit_data(data_mb: int, prot) -> None:
    """RLIMIT_DATA: private writable memory (Linux >= 4.7 counts anonymous mappings too, not PROT_NONE ones)."""
    import resource

    try:
        resource.setrlimit(resource.RLIMIT_DATA, (data_mb << 20, data_mb << 20))
        prot.mark("rlimit_data", True)
    except (ValueError, OSError) as exc:
        prot.mark("rlimit_data", False, str(exc))


DEATH = "walled run died: "  # how the outer process's last line of output starts when its walled child was killed


def death_note(sig: int, cpu_s: float, job: dict) -> str:
    """How the walled process died, naming the wall that killed it where the signal says which."""
    name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else f"signal {sig}"
    # PID 1 of a namespace ignores SIGXCPU, so the hard CPU limit (one second later) kills it with SIGKILL;
    # the CPU time counts the compiler's too
    if sig in (signal.SIGXCPU, signal.SIGKILL) and cpu_s >= 0.9 * job["cpu_s"]:
        return (
            f"{DEATH}killed ({name}) at the walls' CPU-time limit of {job['cpu_s']} s (KernelLimits.cpu_s), "
            f"after {cpu_s:.1f} s of CPU time"
        )
    if sig in (signal.SIGSEGV, signal.SIGBUS):
        return (
            f"{DEATH}crashed ({name}): a bad memory access in the kernel, or an allocation refused by the "
            f"walls' memory limit ({_memory_limit(job)})"
        )
    return f"{DEATH}killed ({name}) after {cpu_s:.1f} s of CPU time"


def _memory_limit(job: dict) -> str:
    if job.get("data_mb"):
        return f"RLIMIT_DATA {job['data_mb']} MiB, KernelLimits.data_mb"
    return f"RLIMIT_AS {job['memory_mb']} MiB, KernelLimits.memory_mb"


def main() -> None:
    """Read the job, fork PID 1 of new namespaces, put up the walls there, measure, send the result."""
    out_fd = int(sys.argv[1])
    job, arrays = read_frame(sys.stdin.buffer)
    # imported before the walls go up: the project's code is not inside them
    import kernel_tuner
    import kernel_tuner.backends.compiler
    import kernel_tuner.interface

    if job["lang"] == "cupy":  # imported, not initialised: a CUDA context does not survive the fork below
        import cupy  # noqa: F401 - warm-up before the walls
        import kernel_tuner.backends.cupy  # noqa: F401 - warm-up before the walls

        import generator.live.kernel  # noqa: F401 - warm-up before the walls

    from generator.sandbox import isolation as iso

    prot = iso.Protections()
    # its own unprivileged uid per run, drawn at random (one derived from this pid showed the host's pid counter)
    job["uid"] = iso.fresh_uid() if os.geteuid() == 0 else None
    iso.set_dumpable(True)
    iso.unshare_namespaces(prot)
    pid = os.fork()
    if pid == 0:
        try:
            _walls(job, prot)
            head = measure(job, arrays, out_fd)
        except MemoryError:  # name the wall that stopped it: the bare MemoryError says nothing
            head = {"error": f"MemoryError: the run needed more memory than the walls allow ({_memory_limit(job)})"}
        except BaseException as exc:  # noqa: BLE001 - reported to the parent, which decides
            head = {"error": f"{type(exc).__name__}: {exc}"[:3000]}
        head["protections"] = prot.to_dict()
        head["uid"] = job["uid"]
        try:
            send(out_fd, head)
        finally:
            os._exit(0)
    _, status, usage = os.wait4(pid, 0)
    if os.WIFSIGNALED(status):  # it never sent its last frame: the parent's log ends with how it died
        print(death_note(os.WTERMSIG(status), usage.ru_utime + usage.ru_stime, job), flush=True)
    os._exit(0 if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else 1)


if __name__ == "__main__":
    main()
