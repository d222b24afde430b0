# expect: ok
# Starts a detached daemon (new session) and a shell that writes outside; then returns normally.
import os
import subprocess


class SubprocessDaemon:
    def __call__(self, func, searchspace):
        subprocess.Popen(["sleep", "@@SLEEP@@"], start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.system("touch /tmp/tunesmith-hostile-@@TOKEN@@-sub @@PROJECT@@/tunesmith-hostile-@@TOKEN@@-sub 2>/dev/null")
