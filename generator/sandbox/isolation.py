"""Operating-system walls around one sandboxed run: namespaces, hidden paths, limits, lower privileges.

Everything here is called by trusted sandbox code in the run process *before* the candidate's
code is loaded. Each step is tried and recorded; a step the OS refuses is skipped, and the
record (`Protections`) says so, because a user's machine may allow less than a root container.

The run's file system is built by `root_fs.py` (an allowlist root; the covering of paths here is
its fallback), its system-call filter and keyring by `syscall_filter.py`.

Linux only (Python 3.11 has no `os.unshare`, so libc is called through ctypes).
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
from dataclasses import dataclass, field

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 1, 4, 38, 24
NOGROUP = 65534
# Each run (as root) gets its own unused uid, so runs cannot signal or read each other. Drawn at random:
# one derived from the run's host PID told the next run how many processes the machine had started since
# the last one, a counter a run moves by starting threads (issue 39: a channel across repeats).
UID_BASE, UID_SPAN = 2_000_000_000, 1 << 27  # below 2**31: some tools read uids as signed


def fresh_uid() -> int:
    """An unused uid for one run, independent of anything a run can observe or influence."""
    return UID_BASE + int.from_bytes(os.urandom(4), "little") % UID_SPAN


# Directories anyone may write to: each gets a private, size-capped tmpfs so that nothing a
# candidate writes there survives the run or is seen by another run.
SCRATCH_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")

_libc = None


def libc():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def check_call(ret: int, what: str) -> None:
    """Raise OSError (with errno) when a libc call returned non-zero."""
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


@dataclass
class Protections:
    """Which walls held for a run (True/False per wall, plus notes where one was partial)."""

    held: dict[str, bool] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def mark(self, name: str, ok: bool, note: str = "") -> None:
        self.held[name] = bool(ok)
        if note:
            self.notes.append(f"{name}: {note}")

    def to_dict(self) -> dict:
        return {"held": dict(self.held), "notes": list(self.notes)}


def unshare_namespaces(prot: Protections) -> None:
    """New mount, network, IPC and PID namespaces (and a user namespace when not root).

    The IPC namespace takes SysV shared memory, semaphores and POSIX message queues with it when
    the run ends: nothing of one run reaches the next or stays on the host."""
    root = os.geteuid() == 0
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC
    host_net = _namespace_id("net")
    if not root:
        flags |= CLONE_NEWUSER
    uid, gid = os.getuid(), os.getgid()
    try:
        check_call(libc().unshare(flags), "unshare")
    except OSError as exc:
        # Some kernels refuse the PID or user namespace alone; try the network one by itself.
        prot.mark("namespaces", False, str(exc))
        try:
            check_call(libc().unshare(CLONE_NEWNET), "unshare(net)")
            prot.mark("network_namespace", True)
        except OSError:
            prot.mark("network_namespace", False)
        return
    # Abstract unix sockets belong to the network namespace: check that this one really is new.
    prot.mark("network_namespace", _namespace_id("net") != host_net)
    prot.mark("ipc_namespace", True)
    if not root:
        try:
            _map_user_ns(uid, gid)
        except OSError as exc:  # unmapped: no mounts possible, but the network namespace still holds
            prot.mark("namespaces", False, f"user namespace mapping refused: {exc}")
            return
    prot.mark("namespaces", True)


def _namespace_id(kind: str) -> int | None:
    try:
        return os.stat(f"/proc/self/ns/{kind}").st_ino
    except OSError:
        return None


def _map_user_ns(uid: int, gid: int) -> None:
    """Keep the caller's own uid and gid inside its new user namespace (not root there: setuid(0)
    fails); the capabilities the namespace grants for mounting are dropped before the candidate runs."""

    def write(path, text):
        with open(path, "w") as fh:
            fh.write(text)

    try:
        write("/proc/self/setgroups", "deny")
    except OSError:
        pass
    write("/proc/self/uid_map", f"{uid} {uid} 1")
    write("/proc/self/gid_map", f"{gid} {gid} 1")


def mount(src, target, fstype, flags, data=None) -> None:
    """mount(2) through libc; raises OSError naming the target."""

    def enc(s):
        return None if s is None else s.encode()

    check_call(libc().mount(enc(src), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {target}")


def _is_within(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _cover_file(path: str, prot: Protections) -> int:
    try:
        mount("/dev/null", path, None, MS_BIND)
        return 1
    except OSError as exc:
        prot.notes.append(f"could not hide {path}: {exc.strerror}")
        return 0


def _cover_dir(path: str, inner_keep: list[str], prot: Protections) -> int:
    """An empty tmpfs over `path`; kept subtrees inside it are bound back read-only at their place."""
    handles = open_paths(inner_keep)
    try:
        mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755")
        _bind_back(handles)
        mount("tmpfs", path, "tmpfs", MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, "size=64k,mode=0755")
        return 1
    except OSError as exc:
        prot.notes.append(f"could not hide {path}: {exc.strerror}")
        return 0
    finally:
        for _, fd in handles:
            os.close(fd)


def open_paths(paths: list[str]) -> list[tuple[str, int]]:
    """O_PATH handles: the kept subtrees stay reachable after a mount covers their parent."""
    handles = []
    for k in paths:
        try:
            handles.append((k, os.open(k, os.O_PATH)))
        except OSError:
            continue
    return handles


def _bind_back(handles: list[tuple[str, int]]) -> None:
    """Bind each kept subtree back, read-only, at its own path (inside a freshly mounted tmpfs)."""
    for k, fd in handles:
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.makedirs(k, mode=0o755, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(k), mode=0o755, exist_ok=True)
            open(k, "a").close()
        mount(f"/proc/self/fd/{fd}", k, None, MS_BIND | MS_REC)
        mount("none", k, None, MS_REMOUNT | MS_BIND | MS_RDONLY)


def hide_paths(hidden, keep, prot: Protections) -> int:
    """Cover each hidden path with an empty read-only tmpfs (a file with /dev/null).

    What the interpreter needs (`keep`: Python's prefix, site-packages) stays visible even when it
    lies inside a hidden directory (a virtual environment in the project, Python under /root):
    it is bound back, read-only, at the same path. A hidden path inside a kept one (task data in
    an installed package) is still covered. Returns how many paths were covered.
    """
    keep = sorted({os.path.realpath(k) for k in keep})
    count = 0
    for raw in sorted({os.path.realpath(h) for h in hidden}, key=len):  # outermost first
        if raw == "/" or not os.path.lexists(raw) or raw in keep:
            continue  # gone (inside an outer hidden path that kept nothing there), or itself kept
        if os.path.isdir(raw):
            count += _cover_dir(raw, [k for k in keep if _is_within(k, raw)], prot)
        else:
            count += _cover_file(raw, prot)
    return count


def private_scratch(prot: Protections, size_mb: int, keep=()) -> str | None:
    """Private tmpfs over the world-writable directories; returns the new working directory.

    What the interpreter needs (`keep`: a venv under /tmp) is bound back read-only at its place.
    """
    keep = sorted({os.path.realpath(k) for k in keep})
    workdir = None
    for d in SCRATCH_DIRS:
        if not os.path.isdir(d) or os.path.islink(d):
            continue
        handles = open_paths([k for k in keep if _is_within(k, d) and k != d])
        try:
            mount("tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size_mb}m,mode=1777")
            _bind_back(handles)
            if d == "/tmp":
                workdir = "/tmp/work"
        except OSError as exc:
            prot.notes.append(f"private {d}: {exc.strerror}")
        finally:
            for _, fd in handles:
                os.close(fd)
    prot.mark("private_tmp", workdir is not None)
    return workdir


def mount_private_root(prot: Protections) -> bool:
    """Stop mounts made here from propagating back to the host (must come before any other mount)."""
    try:
        mount("none", "/", None, MS_REC | MS_PRIVATE)
        return True
    except OSError as exc:
        prot.mark("mount_namespace", False, str(exc))
        return False


def mount_proc(prot: Protections) -> None:
    """A /proc that shows only this PID namespace (the evaluating process becomes invisible)."""
    try:
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        prot.mark("private_proc", True)
    except OSError as exc:
        prot.mark("private_proc", False, exc.strerror)


@dataclass(frozen=True)
class Limits:
    """Resource limits of one run process (seconds, MiB, processes/threads, MiB per file)."""

    cpu_s: int = 60
    memory_mb: int = 2048
    nproc: int = 32
    file_mb: int = 64
    open_files: int = 256


def set_rlimits(limits: Limits, prot: Protections, count_nproc_from: int = 0, mapped_bytes: int = 0) -> None:
    """RLIMIT_CPU/AS/NPROC/FSIZE/NOFILE/CORE; each one that fails is recorded, the rest still apply.

    The address-space limit is `memory_mb` on top of what the process maps already; the process
    limit counts from the threads the user already runs (they all count against RLIMIT_NPROC).
    """
    mib = 1024 * 1024
    wanted = {
        "rlimit_cpu": (resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1)),
        "rlimit_as": (resource.RLIMIT_AS, (mapped_bytes + limits.memory_mb * mib,) * 2),
        "rlimit_nproc": (resource.RLIMIT_NPROC, (count_nproc_from + limits.nproc,) * 2),
        "rlimit_fsize": (resource.RLIMIT_FSIZE, (limits.file_mb * mib,) * 2),
        "rlimit_nofile": (resource.RLIMIT_NOFILE, (limits.open_files,) * 2),
        "rlimit_core": (resource.RLIMIT_CORE, (0, 0)),
        "rlimit_msgqueue": (resource.RLIMIT_MSGQUEUE, (1 * mib,) * 2),  # POSIX queues live outside RLIMIT_AS
    }
    for name, (res, value) in wanted.items():
        try:
            soft, hard = resource.getrlimit(res)
            if hard != resource.RLIM_INFINITY:
                value = (min(value[0], hard), min(value[1], hard))
            resource.setrlimit(res, value)
            prot.held[name] = True
        except (ValueError, OSError) as exc:
            prot.mark(name, False, str(exc))


def drop_privileges(uid: int | None, prot: Protections) -> None:
    """Become `uid` (unprivileged, no groups) when given; in any case drop every capability."""
    if uid is not None:
        try:
            os.setgroups([])
            os.setresgid(NOGROUP, NOGROUP, NOGROUP)
            os.setresuid(uid, uid, uid)
            prot.mark("unprivileged_user", True)
        except OSError as exc:
            prot.mark("unprivileged_user", False, str(exc))
    else:
        prot.mark("unprivileged_user", False, "not root: runs as the invoking user")
    _drop_capabilities(prot)
    no_new = libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
    prot.mark("no_new_privs", no_new)


def _drop_capabilities(prot: Protections) -> None:
    """Empty the capability sets (matters inside a user namespace, where we are 'root')."""

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    for cap in range(64):  # the bounding set, so that exec cannot regain any
        libc().prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    header = Header(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (Data * 2)()
    ok = libc().capset(ctypes.byref(header), ctypes.byref(data)) == 0
    prot.mark("capabilities_dropped", ok)


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent dies."""
    libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def set_dumpable(on: bool) -> None:
    """Off: other processes of the same user may not ptrace this one or read its memory."""
    libc().prctl(PR_SET_DUMPABLE, int(on), 0, 0, 0)
