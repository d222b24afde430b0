# expect: ok
# cheat: yes
# Tries to delete files and a directory tree outside its working directory.
import os
import shutil


class DeleteOutside:
    def __call__(self, func, searchspace):
        for path in ("@@SENTINEL_PROJECT@@", "@@SENTINEL_TMP@@"):
            try:
                os.remove(path)
            except OSError:
                pass
        shutil.rmtree("@@SENTINEL_DIR@@", ignore_errors=True)
