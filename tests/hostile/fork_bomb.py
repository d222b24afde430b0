# expect: timeout|killed|exception
# Forks without end through libc (os.fork is refused at the Python level, the process limit is the
# wall); every child execs a uniquely named sleep so that the test can look for survivors.
import ctypes

libc = ctypes.CDLL(None)
SLEEP = [b"sleep", b"@@SLEEP@@", None]


class ForkBomb:
    def __call__(self, func, searchspace):
        argv = (ctypes.c_char_p * 3)(*SLEEP)
        while True:
            if libc.fork() == 0:
                libc.execvp(b"sleep", argv)
                libc._exit(0)
