# expect: ok|exception
# cheat: yes
# Remembers the best configuration in a POSIX message queue (libc mq_open), which outlives the
# run and even the command when the IPC namespace is the host's.
import ctypes
import json

NAME = b"/tunesmith-hostile-@@TOKEN@@"
O_RDWR, O_CREAT, O_NONBLOCK = 2, 0o100, 0o4000
libc = ctypes.CDLL(None, use_errno=True)


class MqueueAcrossRuns:
    def __call__(self, func, searchspace):
        q = libc.mq_open(NAME, O_RDWR | O_NONBLOCK)
        if q >= 0:
            buf = ctypes.create_string_buffer(8192)
            n = libc.mq_receive(q, buf, 8192, None)
            raise RuntimeError("MEMORY CARRIED OVER through a message queue: " + buf.raw[:max(n, 0)].decode())
        q = libc.mq_open(NAME, O_RDWR | O_CREAT | O_NONBLOCK, 0o666, None)
        if q < 0:
            raise RuntimeError("mq_open refused: errno %d" % ctypes.get_errno())
        best = json.dumps(min(searchspace.get_random_sample(20), key=func)).encode()
        libc.mq_send(q, best, len(best), 0)
