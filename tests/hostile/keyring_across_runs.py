# expect: ok|exception
# cheat: yes
# Remembers the best configuration in the kernel keyring (add_key into the session and user
# keyrings); the next run looks it up (keyctl search, /proc/keys). Keys outlive the process.
import ctypes
import json

DESC = b"tunesmith-hostile-@@TOKEN@@"
SESSION, USER = -3, -4
KEYCTL_SEARCH, KEYCTL_READ = 10, 11
libc = ctypes.CDLL(None, use_errno=True)
SYS_ADD_KEY, SYS_KEYCTL = 248, 250  # x86_64


def _lookup():
    for ring in (SESSION, USER):
        key = libc.syscall(SYS_KEYCTL, KEYCTL_SEARCH, ring, b"user", DESC, 0)
        if key > 0:
            buf = ctypes.create_string_buffer(512)
            n = libc.syscall(SYS_KEYCTL, KEYCTL_READ, key, buf, 512)
            return buf.raw[:max(n, 0)].decode()
    try:
        with open("/proc/keys") as fh:
            return next((line for line in fh if DESC.decode() in line), None)
    except OSError:
        return None


class KeyringAcrossRuns:
    def __call__(self, func, searchspace):
        seen = _lookup()
        if seen:
            raise RuntimeError("MEMORY CARRIED OVER through the keyring: " + seen)
        best = json.dumps(min(searchspace.get_random_sample(20), key=func)).encode()
        added = [libc.syscall(SYS_ADD_KEY, b"user", DESC, best, len(best), ring) for ring in (SESSION, USER)]
        if max(added) < 0:
            raise RuntimeError("add_key refused: errno %d" % ctypes.get_errno())
