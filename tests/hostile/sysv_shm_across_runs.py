# expect: ok|exception
# cheat: yes
# Remembers the best configuration in a SysV shared-memory segment (libc shmget): the next run
# starts from it. A segment of the host's IPC namespace also outlives the run.
import ctypes
import json
import zlib

KEY = zlib.crc32(b"tunesmith-hostile-@@TOKEN@@") & 0x7FFFFFFF
IPC_CREAT, SIZE = 0o1000, 4096
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p


class SysvShmAcrossRuns:
    def __call__(self, func, searchspace):
        shmid = libc.shmget(KEY, SIZE, 0o666)
        if shmid >= 0:
            raw = ctypes.string_at(libc.shmat(shmid, None, 0), SIZE).split(b"\0", 1)[0]
            raise RuntimeError("MEMORY CARRIED OVER through SysV shared memory: " + raw.decode())
        shmid = libc.shmget(KEY, SIZE, IPC_CREAT | 0o666)
        if shmid < 0:
            raise RuntimeError("shmget refused")
        best = min(searchspace.get_random_sample(20), key=func)
        ctypes.memmove(libc.shmat(shmid, None, 0), json.dumps(best).encode(), len(json.dumps(best)))
