# expect: ok|killed
# Sends SIGKILL to every process it may signal, then to its parent and its process group.
import os
import signal


class KillEveryone:
    def __call__(self, func, searchspace):
        for pid in [int(p) for p in os.listdir("/proc") if p.isdigit()]:
            if pid != os.getpid():
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        for target in (-1, os.getppid()):
            try:
                os.kill(target, signal.SIGKILL)
            except OSError:
                pass
