# expect: ok|exception|memory
# Holds memory that the address-space limit does not count: unmapped memfds, SysV shared memory
# (detached), files in /dev/shm and /tmp, and a fresh tmpfs in a nested user namespace.
import ctypes
import os

CHUNK, GOAL = 32 << 20, 384 << 20  # chunks under the file-size limit; the goal above memory_mb + scratch
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
BLOCK = b"\1" * (1 << 20)


def fill(fd, size):
    for _ in range(size >> 20):
        os.write(fd, BLOCK)


def memfds(held):
    fds = []
    try:
        while held[0] < GOAL:
            fds.append(os.memfd_create("hoard"))
            fill(fds[-1], CHUNK)
            held[0] += CHUNK
    finally:
        for fd in fds:  # each way is measured alone: let go before the next
            os.close(fd)


def sysv(held):
    ids = []
    try:
        while held[0] < GOAL:
            ids.append(libc.shmget(0, CHUNK, 0o1000 | 0o600))
            if ids[-1] < 0:
                raise OSError(ctypes.get_errno(), "shmget")
            addr = libc.shmat(ids[-1], None, 0)
            if addr in (None, ctypes.c_void_p(-1).value):
                raise OSError(ctypes.get_errno(), "shmat")
            ctypes.memset(addr, 1, CHUNK)
            libc.shmdt(ctypes.c_void_p(addr))
            held[0] += CHUNK
    finally:
        for i in ids:
            libc.shmctl(i, 0, None)  # IPC_RMID


def files(held, where):
    names = []
    try:
        while held[0] < GOAL:
            names.append(f"{where}/hoard{len(names)}")
            fd = os.open(names[-1], os.O_CREAT | os.O_WRONLY, 0o600)
            try:
                fill(fd, CHUNK)
            finally:
                os.close(fd)
            held[0] += CHUNK
    finally:
        for name in names:
            if os.path.exists(name):
                os.unlink(name)


def nested_tmpfs(held):
    uid, gid = os.getuid(), os.getgid()
    libc.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: /proc/self/uid_map becomes ours to write
    if libc.unshare(0x10000000 | 0x00020000) != 0:  # CLONE_NEWUSER | CLONE_NEWNS
        raise OSError(ctypes.get_errno(), "unshare")
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        with open(f"/proc/self/{name}", "w") as fh:  # mapped: the new tmpfs takes files
            fh.write(text)
    os.makedirs("hoard_mnt", exist_ok=True)
    if libc.mount(b"tmpfs", b"hoard_mnt", b"tmpfs", 0, None) != 0:
        raise OSError(ctypes.get_errno(), "mount")
    files(held, "hoard_mnt")


class MemoryOutsideLimit:
    def __call__(self, func, searchspace):
        escaped = []
        for name, way in (("memfd", memfds), ("sysv-shm", sysv), ("dev-shm", lambda h: files(h, "/dev/shm")),
                          ("tmp", lambda h: files(h, "/tmp")), ("nested-tmpfs", nested_tmpfs)):
            held = [0]
            try:
                way(held)
            except (OSError, MemoryError):
                pass
            if held[0] >= GOAL:
                escaped.append(f"{name} {held[0] >> 20} MiB")
        func(searchspace.get_random_sample(1)[0])
        if escaped:
            raise RuntimeError("ESCAPED the memory limit: " + ", ".join(escaped))
