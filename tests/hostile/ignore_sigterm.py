# expect: timeout
# Ignores every catchable signal, then spins: only SIGKILL ends it.
import signal


class IgnoreSigterm:
    def __call__(self, func, searchspace):
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGXCPU, signal.SIGALRM):
            signal.signal(sig, signal.SIG_IGN)
        while True:
            pass
