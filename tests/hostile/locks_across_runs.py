# expect: ok
# cheat: yes
# Looks for another run's locks on a read-only standard-library file: locks belong to the inode, so a
# run that runs at the same time sees them across mount namespaces and can read a row from them
# (issue 39 item 2). The test holds a flock, a POSIX lock and an open-file-description lock on the
# file, as another run would; seeing any of them is a channel.
import fcntl
import os
import struct

TARGET = "@@LOCKED_FILE@@"
F_OFD_GETLK = 36


def _seen(path):
    found = []
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
        except BlockingIOError:
            found.append("flock")
        for cmd, name in ((fcntl.F_GETLK, "posix"), (F_OFD_GETLK, "ofd")):
            query = struct.pack("hhqqi4x", fcntl.F_WRLCK, 0, 0, 0, 0)
            answer = fcntl.fcntl(fd, cmd, query)
            if struct.unpack("hhqqi4x", answer)[0] != fcntl.F_UNLCK:
                found.append(name)
    except OSError:
        pass  # refused: nothing seen
    finally:
        os.close(fd)
    return found


class LocksAcrossRuns:
    def __call__(self, func, searchspace):
        if os.path.exists(TARGET):
            seen = _seen(TARGET)
            if seen:
                raise RuntimeError(f"REACHED another process's locks on {TARGET}: {seen}")
        for cfg in searchspace.get_random_sample(5):
            func(cfg)
