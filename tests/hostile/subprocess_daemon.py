# expect: ok
# Starts a detached daemon (new session) and a shell that writes outside; then returns normally.
# Python's subprocess and os.system are refused at the Python level (generator.sandbox.refusals), so it
# goes through libc, which the audit hook does not see: the walls must hold on their own.
import ctypes
import subprocess
import sys


class SubprocessDaemon:
    def __call__(self, func, searchspace):
        try:
            subprocess.Popen(["sleep", "@@SLEEP@@"], start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            raise RuntimeError("ESCAPED: subprocess.Popen was not refused")
        except PermissionError:
            pass
        libc = ctypes.CDLL(None)
        if libc.fork() == 0:  # a daemon even where the run's root holds no shell: the interpreter itself
            libc.setsid()
            argv = (ctypes.c_char_p * 4)(sys.executable.encode(), b"-c", b"import time; time.sleep(@@SLEEP@@)", None)
            libc.execv(argv[0], argv)
            libc._exit(0)
        libc.system(b"setsid sleep @@SLEEP@@ </dev/null >/dev/null 2>&1 &")
        libc.system(b"touch /tmp/tunesmith-hostile-@@TOKEN@@-sub @@PROJECT@@/tunesmith-hostile-@@TOKEN@@-sub 2>/dev/null")
