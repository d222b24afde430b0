# expect: exception
# Tries to regain privileges or uncover hidden paths: setuid, new user namespace + umount,
# chroot, mount; raises ESCAPED if any of it lets it read a hidden file.
import ctypes
import os

libc = ctypes.CDLL(None, use_errno=True)


def readable(path):
    """True if the file's real content (not an empty cover) can be read."""
    try:
        with open(path, "rb") as fh:
            return len(fh.read(1)) > 0
    except OSError:
        return False


class Escalate:
    def __call__(self, func, searchspace):
        got = []
        for attempt in (lambda: os.setuid(0), lambda: os.chroot("/"), lambda: os.setgid(0)):
            try:
                attempt()
                got.append("privilege call succeeded")
            except OSError:
                pass
        uid = os.getuid()
        if libc.unshare(0x10000000 | 0x00020000) == 0:  # CLONE_NEWUSER | CLONE_NEWNS
            try:
                with open("/proc/self/uid_map", "w") as fh:
                    fh.write(f"0 {uid} 1")
            except OSError:
                pass
            for path in (b"@@PROJECT@@", b"@@HUB@@", b"/tmp", b"/proc"):
                if libc.umount2(path, 2) == 0:  # MNT_DETACH
                    got.append("unmounted " + path.decode())
        for path in ("@@SENTINEL_PROJECT@@", "@@HUB_FILE@@", "@@SENTINEL_TMP@@"):
            if readable(path):
                got.append("read " + path)
        raise RuntimeError("ESCAPED: " + "; ".join(got) if got else "stayed inside")
