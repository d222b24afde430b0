# expect: killed|exception
# Writes oversized frames into every file descriptor it has, then calls func.
import os


class ProtocolGarbage:
    def __call__(self, func, searchspace):
        for fd in range(3, 64):
            try:
                os.write(fd, b"J\xff\xff\xff\x7f" + b"\x00" * 64)
            except OSError:
                pass
        func(searchspace.get_random_sample(1)[0])
