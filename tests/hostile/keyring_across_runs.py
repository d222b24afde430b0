# expect: ok|exception
# cheat: yes
# Remembers the best configuration in the kernel keyring: a key in the session and user keyrings,
# made world-visible, carries it in its description; the next run (another uid) finds it in
# /proc/keys. Keys outlive the process that added them.
import ctypes
import json

TAG = "tunesmith-hostile-@@TOKEN@@"
SESSION, USER = -3, -4
KEYCTL_SETPERM, ALL = 5, 0x3F3F3F3F
libc = ctypes.CDLL(None, use_errno=True)
SYS_ADD_KEY, SYS_KEYCTL = 248, 250  # x86_64


def _lookup():
    try:
        with open("/proc/keys") as fh:
            return next((line for line in fh if TAG in line), None)
    except OSError:
        return None


class KeyringAcrossRuns:
    def __call__(self, func, searchspace):
        seen = _lookup()
        if seen:
            raise RuntimeError("MEMORY CARRIED OVER through the keyring: " + seen.strip())
        best = json.dumps(min(searchspace.get_random_sample(20), key=func)).replace(" ", "")
        desc = f"{TAG}:{best}".encode()
        added = [libc.syscall(SYS_ADD_KEY, b"user", desc, b"x", 1, ring) for ring in (SESSION, USER)]
        for key in added:
            if key > 0:
                libc.syscall(SYS_KEYCTL, KEYCTL_SETPERM, key, ALL)
        if max(added) < 0:
            raise RuntimeError("add_key refused: errno %d" % ctypes.get_errno())
