# expect: ok
# cheat: yes
# Tries to create and overwrite files outside its working directory, then gives up.
import os

TARGETS = ["/tmp/tunesmith-hostile-@@TOKEN@@", "/var/tmp/tunesmith-hostile-@@TOKEN@@",
           "/dev/shm/tunesmith-hostile-@@TOKEN@@", "@@PROJECT@@/tunesmith-hostile-@@TOKEN@@",
           "@@HOME@@/tunesmith-hostile-@@TOKEN@@", "@@HUB@@/tunesmith-hostile-@@TOKEN@@",
           "@@SENTINEL_PROJECT@@", "@@SENTINEL_TMP@@"]


class WriteOutside:
    def __call__(self, func, searchspace):
        for path in TARGETS:
            try:
                with open(path, "w") as fh:
                    fh.write("pwned")
            except OSError:
                pass
        with open("inside.txt", "w") as fh:  # its own directory is fine
            fh.write("ok")
