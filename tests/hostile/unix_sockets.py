# expect: ok|exception
# Connects, through libc (the audit hook sees no Python socket call), to a unix socket the host
# listens on: one bound in the file system and one in the abstract namespace.
import ctypes
import struct

AF_UNIX, SOCK_STREAM = 1, 1
TARGETS = [b"@@UNIX_PATH@@", b"\0@@UNIX_ABSTRACT@@"]
libc = ctypes.CDLL(None, use_errno=True)


class UnixSockets:
    def __call__(self, func, searchspace):
        reached = []
        for path in TARGETS:
            s = libc.socket(AF_UNIX, SOCK_STREAM, 0)
            addr = struct.pack("H", AF_UNIX) + path
            if s >= 0 and libc.connect(s, addr, len(addr)) == 0:
                libc.send(s, b"hello from the sandbox", 22, 0)
                reached.append(path.strip(b"\0").decode())
            libc.close(s)
        func(searchspace.get_random_sample(1)[0])
        if reached:
            raise RuntimeError("REACHED " + " ".join(reached))
