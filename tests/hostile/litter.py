# expect: ok|exception
# Leaves everything it can behind: a SysV segment, semaphore set and message queue, a POSIX
# message queue, a world-visible key, files in /tmp and /dev/shm, and a daemon in its own session.
import ctypes
import os
import sys
import zlib

TAG = "tunesmith-hostile-@@TOKEN@@"
KEY = zlib.crc32(TAG.encode()) & 0x7FFFFFFF
IPC_CREAT = 0o1000
libc = ctypes.CDLL(None, use_errno=True)


class Litter:
    def __call__(self, func, searchspace):
        libc.shmget(KEY, 4096, IPC_CREAT | 0o666)
        libc.semget(KEY, 1, IPC_CREAT | 0o666)
        libc.msgget(KEY, IPC_CREAT | 0o666)
        libc.mq_open(("/" + TAG).encode(), os.O_RDWR | os.O_CREAT, 0o666, None)
        key = libc.syscall(248, b"user", TAG.encode(), b"x", 1, -4)  # add_key into the user keyring
        if key > 0:
            libc.syscall(250, 5, key, 0x3F3F3F3F)  # KEYCTL_SETPERM: visible to everyone
        for where in ("/tmp", "/dev/shm", "/var/tmp"):
            try:
                open(f"{where}/{TAG}", "w").write("left behind")
            except OSError:
                pass
        if libc.fork() == 0:
            libc.setsid()
            argv = (ctypes.c_char_p * 4)(sys.executable.encode(), b"-c", f"import time; time.sleep(600)  # {TAG}".encode(), None)
            libc.execv(argv[0], argv)
            libc._exit(0)
        func(searchspace.get_random_sample(1)[0])
